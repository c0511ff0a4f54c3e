// Command terraform-provider-redlock serves the redlock Terraform provider (started by
// terraform, with no arguments). It has three other modes, listed by its --help:
//
//	terraform-provider-redlock supervise <data_dir>
//	    Be the supervisor of the master in data_dir. The provider re-executes itself this
//	    way, detached, so that nothing else needs to be on PATH; not meant to be run by hand.
//
//	terraform-provider-redlock stop [-timeout 2m] <data_dir>
//	    Stop the master in data_dir cleanly, without terraform: SIGTERM to its supervisor
//	    (which shuts redis-server down with the AOF fsynced and writes the clean marker), or
//	    SHUTDOWN of a redis-server whose supervisor is gone. Every pid is proven by /proc
//	    before it is signalled. A crashed master stays marked unclean, so its next start is
//	    still held back. For data dirs left by an interrupted apply (`make down`). Exit
//	    status 0 when nothing of that master runs any more (including when nothing ran),
//	    1 when something still runs, 2 for a usage error.
//
//	terraform-provider-redlock crash <data_dir>
//	    Crash the master in data_dir for a fault drill: SIGKILL to its redis-server, whose pid
//	    is read from the supervisor's state now and proven by /proc (working dir and binary)
//	    to be that master's server before it is signalled, never a pid from an older
//	    `terraform output` (a supervised restart changes it, and the kernel may give the old
//	    one to another process). Its supervisor then holds the master down for restart_delay
//	    and restarts it. Exit status 0 when the server was killed, 1 when nothing was
//	    signalled (no supervisor runs, the master is already held down, the pid could not be
//	    proven), 2 for a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	buildinfo "runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
	"github.com/redlock-kit/redlock-kit/provider"
)

// version is set by the build from the VERSION file (-ldflags "-X main.version=X.Y.Z": make
// provider, goreleaser); without it, the module version `go install ...@vX.Y.Z` records.
var version = ""

// providerVersion is version, else the module version from the build info, else "dev".
func providerVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := buildinfo.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return strings.TrimPrefix(bi.Main.Version, "v")
	}
	return "dev"
}

func main() {
	if code, handled := operatorMode(os.Args[1:], os.Stdout, os.Stderr); handled {
		os.Exit(code)
	}
	flag.Usage = func() { fmt.Fprint(os.Stderr, usage) }
	debug := flag.Bool("debug", false, "run with support for debuggers like delve")
	flag.Parse()
	err := providerserver.Serve(context.Background(), provider.New(providerVersion()), providerserver.ServeOpts{
		Address: "registry.terraform.io/redlock-kit/redlock",
		Debug:   *debug,
	})
	if err != nil {
		log.Fatal(err)
	}
}

const usage = `Usage: terraform-provider-redlock [-debug]
       terraform-provider-redlock stop [-timeout 2m] <data_dir>
       terraform-provider-redlock crash <data_dir>
       terraform-provider-redlock supervise <data_dir>

Serves the redlock Terraform provider: terraform starts it, with no arguments (-debug:
for debuggers such as delve; it prints the TF_REATTACH_PROVIDERS to set).

Operator modes, for a master redlock_master runs on this machine (<data_dir>: its
data_dir, absolute):
  stop [-timeout D]  stop the master cleanly without terraform: SIGTERM to its supervisor
                     (redis-server shuts down with the AOF fsynced, the clean marker is
                     written), or SHUTDOWN of a redis-server whose supervisor is gone; a
                     crashed master stays marked unclean, so its next start is still held.
                     For data dirs an interrupted apply left behind (make down). -timeout:
                     how long to wait (default 2m). Exit 0 when nothing of the master runs
                     any more, 1 when something still runs, 2 usage error
  crash              a fault drill: SIGKILL to the master's redis-server (its live pid, read
                     from the supervisor's state and proven by /proc); its supervisor then
                     holds it down for restart_delay and restarts it. Exit 0 killed, 1
                     nothing signalled (no supervisor, already held down, pid not proven),
                     2 usage error
  supervise          be the master's supervisor: the provider starts itself this way,
                     detached; not meant to be run by hand

Each mode's help: terraform-provider-redlock <mode> --help.
`

// operatorMode runs the mode args name (stop, crash, supervise, help) and returns its exit
// status; handled is false when args are the provider's own (serve).
func operatorMode(args []string, stdout, stderr io.Writer) (code int, handled bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch mode, rest := args[0], args[1:]; {
	case isHelp(mode) || mode == "help":
		fmt.Fprint(stdout, usage)
		return 0, true
	case mode == "stop":
		// Ctrl-C (or SIGTERM) cancels the wait for the master to stop.
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer cancel()
		return stopCommand(ctx, rest, stdout, stderr), true
	case mode == "crash":
		return crashCommand(rest, stdout, stderr), true
	case mode == "supervise" && len(rest) == 1 && isHelp(rest[0]):
		fmt.Fprintln(stdout, superviseUsage)
		return 0, true
	case mode == "supervise" && len(rest) == 1:
		return supervisor.Main(rest[0]), true
	case mode == "supervise":
		fmt.Fprintln(stderr, superviseUsage)
		return 2, true
	}
	return 0, false
}

// isHelp reports whether arg asks for help, as the flag package reads it.
func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "--h":
		return true
	}
	return false
}

const superviseUsage = "usage: terraform-provider-redlock supervise <data_dir>  (the provider starts this itself; not meant to be run by hand)"

const stopUsage = "usage: terraform-provider-redlock stop [-timeout 2m] <data_dir>  (data_dir absolute)"

// stopCommand is the stop mode; args follow "stop". It returns the exit status.
func stopCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stop", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// redis-server gets a minute to stop cleanly before its supervisor kills it.
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for the master to stop")
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(stdout, stopUsage)
		return 0
	}
	if err != nil || fs.NArg() != 1 || !filepath.IsAbs(fs.Arg(0)) || *timeout <= 0 {
		if err != nil {
			fmt.Fprintf(stderr, "stop: %v\n", err)
		}
		fmt.Fprintln(stderr, stopUsage)
		return 2
	}
	dir := filepath.Clean(fs.Arg(0))
	before := supervisor.Running(dir)
	if len(before) == 0 {
		fmt.Fprintf(stdout, "stop: nothing of the master in %s runs\n", dir)
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	err = supervisor.Stop(ctx, dir)
	if left := supervisor.Running(dir); len(left) > 0 {
		if err == nil {
			err = errors.New("still running after the stop")
		}
		fmt.Fprintf(stderr, "stop: %s: pids %v still run: %v (see %s)\n", dir, left, err,
			filepath.Join(dir, supervisor.LogFileName))
		return 1
	}
	if err != nil {
		// Nothing runs any more, but not everything went as planned (say the server exited
		// while SHUTDOWN failed): no clean marker, the next start holds.
		fmt.Fprintf(stderr, "stop: %s: %v\n", dir, err)
	}
	fmt.Fprintf(stdout, "stop: %s: stopped pids %v (clean stop: %v)\n", dir, before, supervisor.CleanStop(dir))
	return 0
}

const crashUsage = "usage: terraform-provider-redlock crash <data_dir>  (data_dir absolute)"

// crashCommand is the crash mode; args follow "crash". It returns the exit status.
func crashCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && isHelp(args[0]) {
		fmt.Fprintln(stdout, crashUsage)
		return 0
	}
	if len(args) != 1 || !filepath.IsAbs(args[0]) {
		fmt.Fprintln(stderr, crashUsage)
		return 2
	}
	dir := filepath.Clean(args[0])
	live, err := supervisor.Crash(dir)
	if err != nil {
		fmt.Fprintf(stderr, "crash: %v\n", err)
		return 1
	}
	delay := "restart_delay"
	if c, err := supervisor.LoadConfig(dir); err == nil {
		delay = c.RestartDelay.String()
	}
	fmt.Fprintf(stdout, "crash: %s: killed redis-server pid %d (SIGKILL); its supervisor (pid %d) holds the master "+
		"down for %s from the exit, then restarts it (see %s)\n", dir, live.RedisPID, live.SupervisorPID, delay,
		filepath.Join(dir, supervisor.LogFileName))
	return 0
}
