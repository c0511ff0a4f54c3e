// Package test holds the end-to-end tests: they deploy examples/local-five and the
// redlock-cluster module with the real terraform binary and the real provider (installed
// by `make provider` into build/mirror), then validate, break and heal the cluster.
// They read like the runbook they verify: deploy, validate, break, observe, heal.
package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

var (
	repoRoot     string // the checkout
	cliConfig    string // TF_CLI_CONFIG_FILE that finds the provider offline
	lockagentBin string // the lockagent CLI, built once for the run
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := filepath.Abs("..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	repoRoot = root
	// Always the project's own CLI config (whatever the environment says): it is the one
	// whose filesystem mirror holds the provider this checkout built.
	cliConfig = filepath.Join(repoRoot, "build", "terraformrc")
	if _, err := os.Stat(cliConfig); err != nil {
		fmt.Fprintf(os.Stderr, "end-to-end tests need the provider installed in the local mirror: run `make provider` (missing %s)\n", cliConfig)
		return 1
	}
	if _, err := exec.LookPath("terraform"); err != nil {
		fmt.Fprintln(os.Stderr, "end-to-end tests need terraform on PATH: run `make deps`")
		return 1
	}
	binDir, err := os.MkdirTemp("", "redlock-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(binDir)
	lockagentBin = filepath.Join(binDir, "lockagent")
	build := exec.Command("go", "build", "-o", lockagentBin, "./lockagent/cmd/lockagent")
	build.Dir = repoRoot
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building lockagent: %v\n", err)
		return 1
	}
	return m.Run()
}
