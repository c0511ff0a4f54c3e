// Package libdeps proves that a program importing the Redlock library
// (github.com/redlock-kit/redlock-kit/lockagent/redlock) and its metrics
// (.../lockagent/redlockprom) gets only what they need:
// no Terraform, terratest or gRPC module lands in the user's go.sum or module graph.
package libdeps

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const (
	rootModule = "github.com/redlock-kit/redlock-kit"
	libModule  = rootModule + "/lockagent/redlock"
	promModule = rootModule + "/lockagent/redlockprom"
)

// forbidden are module path prefixes a library user must never get.
var forbidden = []string{
	"github.com/hashicorp/terraform",
	"github.com/gruntwork-io/terratest",
	"google.golang.org/grpc",
}

// TestLibraryUserGetsNoTerraform builds a throwaway user module that imports the library from
// this checkout (replace directives, as a user of a release would get it from the proxy),
// runs `go mod tidy`, and checks its go.sum and `go list -m all`.
func TestLibraryUserGetsNoTerraform(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	rootMod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(rootMod, []byte("module "+rootModule+"\n")) {
		t.Fatalf("%s is not the %s checkout", root, rootModule)
	}
	goLine := regexp.MustCompile(`(?m)^go [0-9.]+$`).Find(rootMod)
	if goLine == nil {
		t.Fatal("no go directive in the root go.mod")
	}

	user := t.TempDir()
	mod := "module example.com/libuser\n\n" + string(goLine) + "\n\n" +
		"replace " + rootModule + " => " + root + "\n"
	for module, dir := range map[string]string{libModule: "redlock", promModule: "redlockprom"} {
		if _, err := os.Stat(filepath.Join(root, "lockagent", dir, "go.mod")); err == nil {
			mod += "\nreplace " + module + " => " + filepath.Join(root, "lockagent", dir) + "\n"
		}
	}
	write(t, filepath.Join(user, "go.mod"), mod)
	write(t, filepath.Join(user, "main.go"), `package main

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
`)

	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir = user
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	run("mod", "tidy")
	run("build", "-o", os.DevNull, ".")
	all := run("list", "-m", "all")
	sum, err := os.ReadFile(filepath.Join(user, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}

	// Positive control: the graph is the library's, not an empty one.
	if !strings.Contains(all, "github.com/redis/go-redis/v9 ") {
		t.Fatalf("go list -m all has no go-redis, so the user module did not load the library:\n%s", all)
	}
	var bad []string
	for _, src := range []struct{ name, text string }{{"go list -m all", all}, {"go.sum", string(sum)}} {
		for _, line := range strings.Split(src.text, "\n") {
			for _, f := range forbidden {
				if strings.HasPrefix(line, f) {
					bad = append(bad, src.name+": "+line)
				}
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("a user importing %s gets %d Terraform/terratest/gRPC entries:\n%s",
			libModule, len(bad), strings.Join(bad, "\n"))
	}
	t.Logf("a library user's module graph:\n%s", all)
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
