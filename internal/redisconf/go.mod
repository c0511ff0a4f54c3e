module github.com/redlock-kit/redlock-kit/internal/redisconf

go 1.26.0
