package libdeps

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/redlock-kit/redlock-kit/internal/modproxy"
)

// rootModule holds the library, its metrics, the validation helper and the CLI; the provider
// and the terratest suite are modules of their own, so a library user never gets their
// dependencies.
const (
	rootModule     = "github.com/redlock-kit/redlock-kit"
	providerModule = rootModule + "/provider"
	libPackage     = rootModule + "/lockagent/redlock"
)

// forbidden are module path prefixes a library user must never get.
var forbidden = []string{
	"github.com/hashicorp/terraform",
	"github.com/gruntwork-io/terratest",
	"google.golang.org/grpc",
}

// consumer is one user's module: its files, and the module it `go get`s.
type consumer struct {
	name  string
	get   string
	files map[string]string
}

// consumers import the root module's packages: the library, the validation helper (from a
// _test.go file, as a terratest suite does) and the metrics.
var consumers = []consumer{
	{name: "libuser", get: rootModule, files: map[string]string{"main.go": `package main

import (
	"fmt"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

func main() {
	_, err := redlock.New(nil, redlock.Options{})
	fmt.Println(err)
}
`}},
	{name: "validationuser", get: rootModule, files: map[string]string{
		"doc.go": "// Package validationuser uses the validation helper from its tests, as a terratest suite does.\npackage validationuser\n",
		"deploy_test.go": `package validationuser

import (
	"testing"

	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

func TestParseConfig(t *testing.T) {
	cfg, err := validation.ParseConfig(` + "`" + `{"endpoints": ["127.0.0.1:1"]}` + "`" + `)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Endpoints) != 1 {
		t.Fatalf("endpoints: %v", cfg.Endpoints)
	}
	if _, err := validation.ParseConfig(` + "`" + `{"no_such_field": 1}` + "`" + `); err == nil {
		t.Fatal("an unknown field was accepted")
	}
}
`}},
	{name: "promuser", get: rootModule, files: map[string]string{"main.go": `package main

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
	"github.com/redlock-kit/redlock-kit/lockagent/redlockprom"
)

func main() {
	metrics, err := redlockprom.New(prometheus.NewRegistry())
	if err != nil {
		panic(err)
	}
	_, err = redlock.New(nil, redlock.Options{Hooks: metrics})
	fmt.Println(err)
}
`}},
}

// TestConsumersResolveARelease is the release's consumer check (see the package doc).
func TestConsumersResolveARelease(t *testing.T) {
	env := newConsumerEnv(t)
	proxy := t.TempDir()
	mods, err := modproxy.Build(env.repo, env.version, proxy)
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, m := range mods {
		served = append(served, m.Path)
	}
	t.Logf("proxy serves %d modules at %s: %s", len(mods), env.version, strings.Join(served, " "))

	lists := map[string]string{}
	for _, c := range consumers {
		lists[c.name] = env.resolve(t, proxy, c)
	}

	// The library user: go-redis (positive control: the graph is the library's), no
	// Terraform, terratest or gRPC module, and none of our other modules.
	if !strings.Contains(lists["libuser"], "\ngithub.com/redis/go-redis/v9 ") {
		t.Fatalf("the library user's go list -m all has no go-redis, so it did not load the library:\n%s", lists["libuser"])
	}
	for name, list := range lists {
		if bad := forbiddenIn(list); len(bad) > 0 {
			t.Errorf("%s (%s) gets %d Terraform/terratest/gRPC modules:\n%s", name, rootModule, len(bad), strings.Join(bad, "\n"))
		}
		for _, line := range strings.Split(list, "\n") {
			if strings.HasPrefix(line, rootModule+"/") {
				t.Errorf("%s's module graph holds another of our modules: %s", name, line)
			}
		}
	}
	// Negative control for the scan: a module that requires the provider module lists the
	// plugin framework and gRPC; a scan that finds nothing there is broken.
	user := t.TempDir()
	env.run(t, user, proxy, "mod", "init", "example.com/provideruser")
	// The provider module's tag is provider/<version>; the go command names that version <version>.
	env.run(t, user, proxy, "get", providerModule+"@"+env.version)
	if providerList := env.run(t, user, proxy, "list", "-m", "all"); len(forbiddenIn(providerList)) == 0 {
		t.Errorf("the forbidden-module scan found nothing in the graph of a module requiring %s:\n%s", providerModule, providerList)
	}
	t.Logf("the library user's module graph (go list -m all):\n%s", lists["libuser"])
}

// TestConsumerCheckFailsWithoutAModule is the negative control for the resolution itself: with
// the root module missing from the proxy, a library user cannot resolve, so our modules come
// from the proxy the check builds and nowhere else.
func TestConsumerCheckFailsWithoutAModule(t *testing.T) {
	env := newConsumerEnv(t)
	proxy := t.TempDir()
	if _, err := modproxy.Build(env.repo, env.version, proxy); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(proxy, "github.com", "redlock-kit", "redlock-kit", "@v")); err != nil {
		t.Fatal(err)
	}
	user := t.TempDir()
	env.run(t, user, proxy, "mod", "init", "example.com/missing")
	out, err := env.try(user, proxy, "get", libPackage+"@"+env.version)
	if err == nil {
		t.Fatalf("go get %s resolved with the root module missing from the proxy:\n%s", libPackage, out)
	}
	if !strings.Contains(out, rootModule) {
		t.Fatalf("go get failed, but not for the missing module:\n%s", out)
	}
}

// TestProxyServesOnlyReleaseVersions: no proxy serves the placeholder pseudo-version.
func TestProxyServesOnlyReleaseVersions(t *testing.T) {
	for _, v := range []string{"v0.0.0-00010101000000-000000000000", "0.2.0", "v0.2", "v0.2.0+build"} {
		if _, err := modproxy.Build(".", v, t.TempDir()); err == nil {
			t.Errorf("version %q was accepted", v)
		}
	}
}

type consumerEnv struct {
	goBin, repo, version, upstreamProxy, hostModCache, modCache string
}

func newConsumerEnv(t *testing.T) *consumerEnv {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed: %v", err)
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	v, err := os.ReadFile(filepath.Join(repo, "VERSION"))
	if err != nil {
		t.Fatalf("VERSION (the release version, e.g. 0.2.0): %v", err)
	}
	e := &consumerEnv{goBin: goBin, repo: repo, version: "v" + strings.TrimSpace(string(v))}
	e.upstreamProxy = e.goEnv(t, "GOPROXY")
	e.hostModCache = e.goEnv(t, "GOMODCACHE")
	// A module cache of the consumer's own, so our modules are unpacked from the proxy's zips
	// (never from a cache a build of this checkout filled); `go clean -modcache` empties it
	// (its files are read-only, so TempDir's removal alone would fail).
	e.modCache = t.TempDir()
	t.Cleanup(func() {
		cmd := exec.Command(goBin, "clean", "-modcache")
		cmd.Env = append(os.Environ(), "GOMODCACHE="+e.modCache)
		_ = cmd.Run()
	})
	return e
}

func (e *consumerEnv) goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command(e.goBin, "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// try runs the go command in a consumer module: our modules from proxy only (checked first,
// and the root module is not there), third-party modules from this machine's module cache,
// else from the configured proxy; no workspace, the sum database for third-party modules
// only (ours are not in it).
func (e *consumerEnv) try(dir, proxy string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.goBin, args...)
	cmd.Dir = dir
	goproxy := "file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(e.hostModCache, "cache", "download"))
	if e.upstreamProxy != "" && e.upstreamProxy != "off" {
		goproxy += "," + e.upstreamProxy
	}
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
		"GOPROXY="+goproxy, "GOMODCACHE="+e.modCache, "GONOSUMDB="+rootModule, "GOPRIVATE=", "GONOPROXY=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (e *consumerEnv) run(t *testing.T, dir, proxy string, args ...string) string {
	t.Helper()
	out, err := e.try(dir, proxy, args...)
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), filepath.Base(dir), err, out)
	}
	return out
}

// resolve writes consumer c, resolves and builds it, and returns its `go list -m all`.
func (e *consumerEnv) resolve(t *testing.T, proxy string, c consumer) string {
	t.Helper()
	user := filepath.Join(t.TempDir(), c.name)
	if err := os.MkdirAll(user, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range c.files {
		if err := os.WriteFile(filepath.Join(user, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.run(t, user, proxy, "mod", "init", "example.com/"+c.name)
	e.run(t, user, proxy, "get", c.get+"@"+e.version)
	e.run(t, user, proxy, "mod", "tidy")
	e.run(t, user, proxy, "build", "./...")
	e.run(t, user, proxy, "vet", "./...")
	test := e.run(t, user, proxy, "test", "-count=1", "./...")
	all := e.run(t, user, proxy, "list", "-m", "all")

	data, err := os.ReadFile(filepath.Join(user, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(mf.Replace) > 0 {
		t.Fatalf("%s's go.mod has a replace directive; a user's has none:\n%s", c.name, data)
	}
	found := false
	for _, r := range mf.Require {
		found = found || (r.Mod.Path == c.get && r.Mod.Version == e.version)
	}
	if !found {
		t.Fatalf("%s's go.mod does not require %s %s:\n%s", c.name, c.get, e.version, data)
	}
	t.Logf("%s: go get %s@%s, go mod tidy, go build, go vet, go test: ok\n%s%s", c.name, c.get, e.version, test, data)
	return all
}

func forbiddenIn(list string) []string {
	var bad []string
	for _, line := range strings.Split(list, "\n") {
		for _, f := range forbidden {
			if strings.HasPrefix(line, f) {
				bad = append(bad, line)
			}
		}
	}
	return bad
}
