// Command modproxy builds a file-based Go module proxy from this checkout, serving its
// modules at the VERSION file's version as a release tag would, and prints the environment
// that makes a module of yours resolve them from it, with no replace directive:
//
//	eval "$(make -s modproxy)"        # or: go run ./internal/modproxy/cmd/modproxy -out DIR
//	go get github.com/redlock-kit/redlock-kit/lockagent/validation@v$(cat VERSION)
//
// The environment goes to stdout (shell `export` lines), the summary to stderr. Third-party
// modules still come from the proxy go already uses (go env GOPROXY), after the file one.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/redlock-kit/redlock-kit/internal/modproxy"
)

const rootModule = "github.com/redlock-kit/redlock-kit"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("modproxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "build/modproxy", "directory to write the proxy into (replaced)")
	repo := fs.String("repo", ".", "the repository checkout")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: modproxy [-out build/modproxy] [-repo .]")
		return 2
	}
	v, err := os.ReadFile(filepath.Join(*repo, "VERSION"))
	if err != nil {
		fmt.Fprintf(stderr, "modproxy: VERSION: %v (run it from the repository's root, or give -repo)\n", err)
		return 1
	}
	version := "v" + strings.TrimSpace(string(v))
	dir, err := filepath.Abs(*out)
	if err != nil {
		fmt.Fprintf(stderr, "modproxy: %v\n", err)
		return 1
	}
	// A fresh directory: a module removed from the checkout must not linger in the proxy.
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintf(stderr, "modproxy: %v\n", err)
		return 1
	}
	mods, err := modproxy.Build(*repo, version, dir)
	if err != nil {
		fmt.Fprintf(stderr, "modproxy: %v\n", err)
		return 1
	}
	upstream := "https://proxy.golang.org,direct"
	if b, err := exec.Command("go", "env", "GOPROXY").Output(); err == nil && strings.TrimSpace(string(b)) != "" {
		upstream = strings.TrimSpace(string(b))
	}
	fmt.Fprintf(stderr, "modproxy: %d modules of this checkout at %s in %s:\n", len(mods), version, dir)
	for _, m := range mods {
		fmt.Fprintf(stderr, "  %s@%s\n", m.Path, version)
	}
	fmt.Fprintf(stderr, "In your module, with the environment below (no replace directive):\n  go get %s/lockagent/validation@%s\n", rootModule, version)
	fmt.Fprintf(stdout, "export GOPROXY='file://%s,%s'\n", filepath.ToSlash(dir), upstream)
	// Our modules are not in the checksum database until they are tagged and fetched once.
	fmt.Fprintf(stdout, "export GONOSUMDB='%s'\n", rootModule)
	// A go.work above your module would resolve our modules from elsewhere.
	fmt.Fprintln(stdout, "export GOWORK=off")
	return 0
}
