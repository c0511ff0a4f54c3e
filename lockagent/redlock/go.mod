// The Redlock library is a module of its own so that a program importing it gets only what
// the library needs (go-redis), not the provider's Terraform, terratest and gRPC modules
// (internal/libdeps proves it). Its tests use the repository's harnesses
// (internal/redistest, internal/overlap), hence the requirement on the root module; a
// user's build never loads that module's dependencies (module graph pruning). Within this
// repository both modules are built from the checkout (the replace directives, which users'
// builds ignore).
module github.com/redlock-kit/redlock-kit/lockagent/redlock

go 1.26.0

require (
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redlock-kit/redlock-kit v0.0.0-00010101000000-000000000000
	pgregory.net/rapid v1.3.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/redlock-kit/redlock-kit => ../..
