module github.com/redlock-kit/redlock-kit/lockagent/redlock

go 1.26.0

require (
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redlock-kit/redlock-kit/internal/funclib v0.2.0
	github.com/redlock-kit/redlock-kit/internal/overlap v0.2.0
	github.com/redlock-kit/redlock-kit/internal/redistest v0.2.0
	pgregory.net/rapid v1.3.0
)

require (
	github.com/redlock-kit/redlock-kit/internal/audit v0.2.0 // indirect
	github.com/redlock-kit/redlock-kit/internal/localmasters v0.2.0 // indirect
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/redlock-kit/redlock-kit/internal/pki v0.2.0 // indirect
	github.com/redlock-kit/redlock-kit/internal/redisconf v0.2.0
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
