// Command terraform-provider-redlock serves the redlock Terraform provider (started by
// terraform, with no arguments). It has two other modes:
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
	if len(os.Args) > 2 && os.Args[1] == "supervise" {
		os.Exit(supervisor.Main(os.Args[2]))
	}
	if len(os.Args) > 1 && os.Args[1] == "stop" {
		ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := stopCommand(ctx, os.Args[2:], os.Stdout, os.Stderr)
		cancel()
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == "crash" {
		os.Exit(crashCommand(os.Args[2:], os.Stdout, os.Stderr))
	}
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

const stopUsage = "usage: terraform-provider-redlock stop [-timeout 2m] <data_dir>  (data_dir absolute)"

// stopCommand is the stop mode; args follow "stop". It returns the exit status.
func stopCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stop", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// redis-server gets a minute to stop cleanly before its supervisor kills it.
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for the master to stop")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 || !filepath.IsAbs(fs.Arg(0)) || *timeout <= 0 {
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
	err := supervisor.Stop(ctx, dir)
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
