// Package libdeps proves what a user of a release gets. Its test serves this repository's
// nested modules at the version in VERSION from a file-based GOPROXY built from the checkout
// (internal/modproxy), then, in consumer modules with no replace directive, runs go get, go
// mod tidy, go build, go vet and go test of three programs: one importing the Redlock library
// (lockagent/redlock), one importing lockagent/validation from a _test.go file, one importing
// lockagent/redlockprom. The library user's module graph must hold no Terraform, terratest or
// gRPC module, and no consumer may need the root module (the proxy does not serve it).
// `make release-check` runs it; so does `make test`.
package libdeps
