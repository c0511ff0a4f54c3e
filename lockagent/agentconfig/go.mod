module github.com/redlock-kit/redlock-kit/lockagent/agentconfig

go 1.26.0

require github.com/redlock-kit/redlock-kit/internal/pki v0.2.0
