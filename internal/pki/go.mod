module github.com/redlock-kit/redlock-kit/internal/pki

go 1.26.0

// x
