module github.com/redlock-kit/redlock-kit/internal/overlap

go 1.26.0
