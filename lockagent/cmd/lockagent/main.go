// Command lockagent holds Redlock locks around commands, validates a Redlock deployment
// and benchmarks Redlock implementations. Run `lockagent help` for the commands.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/redis/go-redis/v9"
)

const mainUsage = `lockagent: Redlock locks, deployment validation and benchmarks.

Usage:
  lockagent run      [flags] --key K --ttl D [--wait D] -- command [args...]
                     hold a lock while a command runs (auto-renewed, released at the end)
  lockagent validate -c agent.json [flags]
                     prove a deployment is safe: audit every master, then exercise Redlock
  lockagent bench    [--spawn N | -c agent.json] [flags]
                     this library vs redsync vs a bare go-redis fan-out, side by side
  lockagent functions [--version]
                     print the kit's Redis Function library (for the admin of a master
                     the kit does not run: redis-cli -x FUNCTION LOAD REPLACE)
  lockagent version  print the version
  lockagent help [command]
                     this text, or a command's flags, environment and exit codes
                     (also lockagent <command> --help)

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
	// go-redis logs on its own (dial failures of a master that is down, pool notices);
	// those lines are diagnostics, shown only at --log-level debug. Until a command reads
	// its --log-level, LOCKAGENT_LOG_LEVEL (default warn) decides.
	level, err := parseLogLevel(os.Getenv("LOCKAGENT_LOG_LEVEL"))
	if err != nil {
		level = slog.LevelWarn
	}
	routeRedisLogs(stderr, level)
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return runMain(ctx, rest, stdout, stderr)
	case "validate":
		return validateMain(ctx, rest, stdout, stderr)
	case "bench":
		return benchMain(ctx, rest, stdout, stderr)
	case benchWorkerCommand:
		// Hidden: a worker process of bench's cross-process scenario.
		return benchWorkerMain(ctx, os.Stdin, stdout, stderr)
	case "functions":
		return functionsMain(rest, stdout, stderr)
	case "version", "-version", "--version":
		return versionMain(rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 || isHelpFlag(rest[0]) || rest[0] == "help" {
			fmt.Fprint(stdout, mainUsage)
			return exitOK
		}
		switch rest[0] {
		case "run", "validate", "bench", "functions", "version":
			// The command's own --help: on stdout, exit 0, as `lockagent X --help` is.
			return lockagent(ctx, []string{rest[0], "--help"}, stdout, stderr)
		}
		fmt.Fprintf(stderr, "lockagent help: unknown command %q; commands: run, validate, bench, functions, version\n", rest[0])
		return exitUsage
	}
	fmt.Fprintf(stderr, "lockagent: unknown command %q; run `lockagent help` for the commands\n", cmd)
	return exitUsage
}

// isHelpFlag reports whether arg asks for help the way the flag package understands it.
func isHelpFlag(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "--h":
		return true
	}
	return false
}

const versionUsage = `Usage: lockagent version

Prints the version lockagent was built with, the Go version and the platform.

Exit codes:
  0   printed
  64  usage error
`

// versionMain is `lockagent version`.
func versionMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	if code, ok := parseFlags(fs, args, "version", versionUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "version", fmt.Errorf("unexpected argument %q: version takes none", fs.Arg(0)))
	}
	fmt.Fprintln(stdout, versionString())
	return exitOK
}

// parseLogLevel reads debug, info, warn or error ("" is warn).
func parseLogLevel(s string) (slog.Level, error) {
	if s == "" {
		return slog.LevelWarn, nil
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

// routeRedisLogs sends go-redis's internal log lines to a slog logger on w at debug
// level: below --log-level debug they are dropped. It returns that logger. go-redis logs
// from its own goroutines; the handler makes each record one serialized Write to w.
func routeRedisLogs(w io.Writer, level slog.Level) *slog.Logger {
	l := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	redis.SetLogger(goRedisLogs{l})
	return l
}

// goRedisLogs adapts slog to go-redis's logger interface.
type goRedisLogs struct{ log *slog.Logger }

func (g goRedisLogs) Printf(ctx context.Context, format string, v ...any) {
	g.log.DebugContext(ctx, "go-redis: "+fmt.Sprintf(format, v...))
}

// version is set by the build from the VERSION file: -ldflags "-X main.version=X.Y.Z" (make
// lockagent, goreleaser).
var version = ""

// versionString names the version the binary was built with: the one -ldflags set, else the
// module version from the build info (or "(devel)").
func versionString() string {
	v := "(devel)"
	if version != "" {
		v = version
	} else if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		v = bi.Main.Version
	}
	return fmt.Sprintf("lockagent %s %s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
