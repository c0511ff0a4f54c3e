// Package libdeps proves what a user of a release gets. Its test serves this repository's
// modules (the root module, provider/, test/) at the version in VERSION from a file-based
// GOPROXY built from the checkout (internal/modproxy), then, in consumer modules with no
// replace directive, runs go get, go mod tidy, go build, go vet and go test of three programs
// that require the root module: one importing the Redlock library (lockagent/redlock), one
// importing lockagent/validation from a _test.go file, one importing lockagent/redlockprom.
// Their module graphs must hold no Terraform, terratest or gRPC module and none of our other
// modules; a module requiring the provider module, whose graph does list them, is the scan's
// negative control. `make release-check` runs it; so does `make test`.
package libdeps
