package test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/random"
	"github.com/gruntwork-io/terratest/modules/terraform"

	"github.com/redlock-kit/redlock-kit/internal/modproxy"
	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// userInfraTest is the infrastructure test docs/validation.md documents, as a user writes it
// in a module of their own: read the config without logging it, then the strict pass.
// TestLoggedRead is the negative control: the read the docs used to show, which terratest
// logs. TestCatalogue is the documented catalogue run on the module's spare server.
const userInfraTest = `package infratest

import (
	"testing"

	"github.com/gruntwork-io/terratest/modules/terraform"

	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

func TestRedlock(t *testing.T) {
	opts := &terraform.Options{TerraformDir: "../infra"} // calls the redlock-cluster module
	defer terraform.Destroy(t, opts)
	terraform.InitAndApply(t, opts)

	// Never terraform.Output for agent_config: terratest logs what it reads, passwords included.
	cfg, err := validation.ConfigFromTerraform(t.Context(), opts.TerraformDir, "agent_config")
	if err != nil {
		t.Fatal(err)
	}
	// SAFE with every master audited; "SAFE, degraded" fails too.
	validation.ValidateStrict(t, cfg, validation.StrictOptions{})
}

func TestLoggedRead(t *testing.T) {
	opts := &terraform.Options{TerraformDir: "../infra"}
	terraform.Output(t, opts, "agent_config")
}

func TestCatalogue(t *testing.T) {
	opts := &terraform.Options{TerraformDir: "../infra"} // with catalogue_spare = true
	cfg, err := validation.ConfigFromTerraform(t.Context(), opts.TerraformDir, "agent_config")
	if err != nil {
		t.Fatal(err)
	}
	spare := terraform.Output(t, opts, "catalogue_spare") // host:port, no secret
	// CheckCatalogue logs each case once and fails the test on a case that ends SAFE.
	validation.CheckCatalogue(t, cfg, validation.CatalogueOptions{Spare: spare})
}
`

// TestUserInfrastructureTest runs the documented infrastructure test the way a user does: in
// a Go module of its own that resolves the kit with no replace directive (from a file module
// proxy of this checkout, as make modproxy builds it and a release tag would serve it), against
// a root module calling modules/redlock-cluster, with go test -v. The passwords are in none of
// its output, and the strict pass passes; the negative control (terraform.Output) prints them.
func TestUserInfrastructureTest(t *testing.T) {
	t.Parallel()
	tree := copyTree(t, "modules/redlock-cluster")
	addrs, port := uniqueLoopback(t)
	dataRoot := filepath.Join(t.TempDir(), "data")
	infra := filepath.Join(tree, "infra")
	user := filepath.Join(tree, "infratest")
	mainTF := fmt.Sprintf(`module "redlock" {
  source          = "../modules/redlock-cluster"
  masters         = 5
  name_prefix     = %q
  bind_addresses  = %s
  ports           = [%d, %d, %d, %d, %d]
  data_root       = %q
  max_lock_ttl    = "30s" # a round trip above 1%% of it is a warning, which the strict pass fails
  catalogue_spare = true
}

output "agent_config" {
  value     = module.redlock.agent_config
  sensitive = true
}

output "catalogue_spare" { value = module.redlock.catalogue_spare }
`, strings.ToLower("user-"+random.UniqueId()), hclList(addrs), port, port, port, port, port, dataRoot)
	for path, text := range map[string]string{filepath.Join(infra, "main.tf"): mainTF, filepath.Join(user, "redlock_test.go"): userInfraTest} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The deployment is applied here first, so that its passwords are known to look for and
	// its destruction is checked whatever the user's test does.
	d := &deployment{dataRoot: dataRoot, opts: terraformOptions(infra, nil)}
	t.Cleanup(func() { destroyAndVerify(t, d) })
	terraform.InitAndApply(t, quiet(d.opts))
	cfg, err := validation.ConfigFromTerraform(t.Context(), infra, "agent_config")
	if err != nil {
		t.Fatal(err)
	}
	d.endpoints = cfg.Endpoints
	secrets := map[string]string{"admin password": cfg.AdminPassword, "lock password": cfg.Password}

	gop := newUserGo(t)
	gop.secrets = secrets
	gop.run(t, user, "mod", "init", "example.com/infratest")
	gop.run(t, user, "get", "github.com/redlock-kit/redlock-kit/lockagent/validation@"+gop.version, "github.com/gruntwork-io/terratest@v0.56.0")
	gop.run(t, user, "mod", "tidy")
	goMod, err := os.ReadFile(filepath.Join(user, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	// The kit at VERSION, whichever module holds the validation package, and no replace.
	if bytes.Contains(goMod, []byte("replace")) ||
		!regexp.MustCompile(`(?m)^\s*github\.com/redlock-kit/redlock-kit(/lockagent/validation)? `+regexp.QuoteMeta(gop.version)+`$`).Match(goMod) {
		t.Fatalf("the user's go.mod is not a plain requirement of the kit at %s:\n%s", gop.version, goMod)
	}

	// The negative control: the read terratest logs carries the passwords into go test -v.
	logged := gop.run(t, user, "test", "-count=1", "-v", "-run", "^TestLoggedRead$", ".")
	if !strings.Contains(logged, cfg.AdminPassword) {
		t.Fatalf("the negative control (terraform.Output) did not print the admin password, so a grep for it proves nothing:\n%s", redact(logged, secrets))
	}

	// The documented catalogue run on the module's spare server: long (each case is a full
	// validation run), so on demand; it measures the time docs/validation.md states.
	if os.Getenv("REDLOCK_USER_CATALOGUE") == "1" {
		start := time.Now()
		cat := gop.run(t, user, "test", "-count=1", "-timeout=30m", "-v", "-run", "^TestCatalogue$", ".")
		took := time.Since(start)
		for what, s := range secrets {
			if strings.Contains(cat, s) {
				t.Errorf("the %s is in the catalogue run's output", what)
			}
		}
		if n := strings.Count(cat, "catalogue: "); n != 1+len(validation.UnsafeCatalogue()) || strings.Contains(cat, "skipped: no spare") {
			t.Errorf("the catalogue logged %d case lines for %d cases and the clean run (each once), or skipped the balancer case", n, len(validation.UnsafeCatalogue()))
		}
		t.Logf("the catalogue on the user's deployment took %v (go test, build included):\n%s", took.Round(time.Second), redact(cat, secrets))
	}

	out := gop.run(t, user, "test", "-count=1", "-v", "-run", "^TestRedlock$", ".")
	for what, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("the %s is in the user's go test -v output", what)
		}
	}
	for _, want := range []string{"[1/4] Audit of every master", "VERDICT: SAFE", "--- PASS: TestRedlock", "Destroy complete"} {
		if !strings.Contains(out, want) {
			t.Errorf("the user's test output lacks %q", want)
		}
	}
	t.Logf("the user's go test -v (%d lines, no password in it):\n%s", strings.Count(out, "\n"), redact(out, secrets))
}

// hclList writes a list of strings as HCL.
func hclList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// redact replaces every secret in s, so that a failure message never prints one.
func redact(s string, secrets map[string]string) string {
	for what, v := range secrets {
		if v != "" {
			s = strings.ReplaceAll(s, v, "<"+what+">")
		}
	}
	return s
}

// userGo runs the go command as a user's module does: no workspace, our modules from a file
// proxy of this checkout at VERSION (and nowhere else: its own module cache), third-party
// modules from this machine's module cache, else the configured proxy; the checksum database
// for third-party modules only.
type userGo struct {
	version string
	env     []string
	secrets map[string]string // redacted from failure messages
}

func newUserGo(t *testing.T) *userGo {
	t.Helper()
	v, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	g := &userGo{version: "v" + strings.TrimSpace(string(v))}
	proxy := t.TempDir()
	if _, err := modproxy.Build(repoRoot, g.version, proxy); err != nil {
		t.Fatal(err)
	}
	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	goproxy := "file://" + proxy + ",file://" + filepath.Join(goEnv("GOMODCACHE"), "cache", "download")
	if up := goEnv("GOPROXY"); up != "" && up != "off" {
		goproxy += "," + up
	}
	modCache := t.TempDir()
	t.Cleanup(func() {
		cmd := exec.Command("go", "clean", "-modcache")
		cmd.Env = append(os.Environ(), "GOMODCACHE="+modCache)
		_ = cmd.Run()
	})
	g.env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOPROXY="+goproxy,
		"GOMODCACHE="+modCache, "GONOSUMDB=github.com/redlock-kit/redlock-kit", "GOPRIVATE=", "GONOPROXY=",
		"TF_CLI_CONFIG_FILE="+cliConfig, "TF_IN_AUTOMATION=1")
	return g
}

func (g *userGo) run(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = g.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, redact(out.String(), g.secrets))
	}
	return out.String()
}
