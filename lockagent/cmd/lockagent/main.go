// Command lockagent holds Redlock locks around commands, validates a Redlock deployment
// and benchmarks Redlock implementations. Run `lockagent help` for the commands.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
)

const mainUsage = `lockagent: Redlock locks, deployment validation and benchmarks.

Usage:
  lockagent run      [flags] --key K --ttl D [--wait D] -- command [args...]
                     hold a lock while a command runs (auto-renewed, released at the end)
  lockagent validate -c agent.json [flags]
                     prove a deployment is safe: audit every master, then exercise Redlock
  lockagent bench    [--spawn N | -c agent.json] [flags]
                     this library vs redsync vs a bare go-redis fan-out, side by side
  lockagent version  print the version
  lockagent help [command]
                     this text, or a command's flags, environment and exit codes

Every command reads the deployment from -c agent.json (the redlock-cluster module's
agent_config output), then LOCKAGENT_* environment variables, then flags (flags win).
`

// Exit codes shared by the commands (validate documents its own).
const (
	exitOK    = 0
	exitUsage = 64 // EX_USAGE: bad flags, bad config, nothing was done
)

func main() {
	os.Exit(lockagent(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// lockagent dispatches to a command and returns the process exit code.
func lockagent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return runMain(ctx, rest, stdout, stderr)
	case "validate":
		return validateMain(ctx, rest, stdout, stderr)
	case "bench":
		return benchMain(ctx, rest, stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, versionString())
		return exitOK
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			fmt.Fprint(stdout, mainUsage)
			return exitOK
		}
		switch rest[0] {
		case "run", "validate", "bench":
			// Each command prints its complete help for --help, on stderr; help asked for
			// explicitly belongs on stdout.
			return lockagent(ctx, []string{rest[0], "--help"}, stdout, stdout)
		case "version", "help":
			fmt.Fprint(stdout, mainUsage)
			return exitOK
		}
		fmt.Fprintf(stderr, "lockagent help: unknown command %q; commands: run, validate, bench, version\n", rest[0])
		return exitUsage
	}
	fmt.Fprintf(stderr, "lockagent: unknown command %q; run `lockagent help` for the commands\n", cmd)
	return exitUsage
}

// versionString names the module version the binary was built from (or "(devel)").
func versionString() string {
	v := "(devel)"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return fmt.Sprintf("lockagent %s %s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
