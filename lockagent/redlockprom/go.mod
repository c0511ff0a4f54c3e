module github.com/redlock-kit/redlock-kit/lockagent/redlockprom

go 1.26.0

require (
	github.com/prometheus/client_golang v1.25.0
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redlock-kit/redlock-kit/internal/redistest v0.2.0
	github.com/redlock-kit/redlock-kit/lockagent/redlock v0.2.0
)

require (
	github.com/redlock-kit/redlock-kit/internal/audit v0.2.0 // indirect
	github.com/redlock-kit/redlock-kit/internal/localmasters v0.2.0 // indirect
	github.com/redlock-kit/redlock-kit/lockagent/agentconfig v0.2.0 // indirect
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/kylelemons/godebug v1.1.0 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/client_model v0.6.3 // indirect
	github.com/prometheus/common v0.72.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/redlock-kit/redlock-kit/internal/funclib v0.2.0 // indirect
	github.com/redlock-kit/redlock-kit/internal/pki v0.2.0 // indirect
	github.com/redlock-kit/redlock-kit/internal/redisconf v0.2.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
