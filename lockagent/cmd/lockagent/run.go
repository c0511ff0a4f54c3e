package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// Exit codes of `lockagent run` besides the command's own (sysexits.h where one fits).
const (
	exitUnavailable = 69  // EX_UNAVAILABLE: no majority of masters reachable
	exitLost        = 70  // EX_SOFTWARE: the lock was lost while the command ran; it was stopped
	exitNotAcquired = 75  // EX_TEMPFAIL: held by someone else (after --wait): try again later
	exitCannotExec  = 126 // as in shells: the command exists but cannot be executed
	exitNotFound    = 127 // as in shells: the command was not found
	exitSignalBase  = 128 // 128+N: killed by (or, while waiting, interrupted by) signal N
)

const runUsage = `Usage: lockagent run [flags] --key K [--ttl D] [--wait D] -- command [args...]

Holds the Redlock lock K while a command runs:
  1. acquires K on a majority of the masters (waiting up to --wait for a holder to let go),
  2. starts the command with the lock's fencing token in its environment,
  3. renews the lock while the command runs (every third of the TTL),
  4. stops the command if the lock is lost (renewal refused or not confirmed by a majority
     before the validity ran out): SIGTERM to its process group, SIGKILL after --kill-grace,
  5. releases the lock when the command ends, whatever the outcome.
The command runs in its own process group, so stopping it reaches the processes it started;
it is not in the terminal's foreground (it must not read from the terminal).

Lock:
  --key K              lock name: the Redis key, exactly as given (required)
  --ttl D              lock TTL (default 30s, or the deployment's max lock TTL when that is
                       shorter; never more). The holder may use the lock for its validity:
                       TTL - acquisition time - drift (TTL*1% + 2ms)
  --wait D             how long to wait for a lock someone else holds; 0 = one attempt
                       (default 0)
  --node-timeout D     per-master timeout of every lock command (default: the library's,
                       derived from the TTL)
  --max-renewals N     renewals allowed before the lock is left to expire (which stops the
                       command, exit 70); bounds how long a hung command can hold the lock.
                       Default 0 = the library's bound, 100: with --ttl 30s (renewed every
                       10s) a command may run about 16 minutes; raise it for longer jobs
  --kill-grace D       after SIGTERM, how long the command gets before SIGKILL (default 10s)
  --durable-release    log the release to the masters' AOF (an fsync on each). By default
                       the release is applied in memory only: a master that restarts from
                       its AOF within the TTL shows the released key again until it
                       expires, which can delay the next holder there, never admit two

` + deploymentHelp + `
Environment of the command (in addition to lockagent's own):
  LOCKAGENT_KEY        the lock name
  LOCKAGENT_FENCE      fencing token: a decimal number larger than that of every earlier
                       holder of this key. Hand it to the protected resource with every
                       write so that it can reject a stale holder (one whose lock expired
                       during a pause) by refusing tokens lower than the largest it has seen.
  LOCKAGENT_DEADLINE   the validity deadline at acquisition, RFC 3339 with nanoseconds. The
                       lock is renewed while the command runs, so the real deadline moves
                       later; an environment cannot change, so this is the initial one.
  LOCKAGENT_TTL        the TTL, as a Go duration (30s)
The lock's random token is not passed: it would let the command release or extend the lock.

Signals: SIGINT, SIGTERM and SIGHUP sent to lockagent are forwarded to the command's process
group; the lock is released once the command has exited. While lockagent is still waiting for
the lock, they abort the wait instead (nothing was started).

Exit codes:
  N        the command's own exit code, when it ran to completion holding the lock
  128+S    the command was killed by signal S (as in shells), e.g. 143 for SIGTERM
  64       usage or configuration error: nothing was done
  69       masters unavailable: fewer than a majority answered (nothing was started)
  70       the lock was lost while the command ran (another holder has it, renewal failed
           until the validity ran out, or --max-renewals was reached): the command was
           stopped; or it had just ended as the validity ran out, so it may have run
           without the lock at the end
  75       lock not acquired: someone else holds it (after waiting --wait); try later
  126      the command cannot be executed; 127 the command was not found (no lock taken)
  130/143  interrupted by SIGINT/SIGTERM while waiting for the lock
A command that itself exits with 64-75 cannot be told apart by the code alone: lockagent
writes its reason on stderr whenever it, and not the command, chose the exit code.

Examples:
  LOCKAGENT_PASSWORD=... lockagent run -c agent.json --key nightly-backup --ttl 30s \
      --wait 5m -- /usr/local/bin/backup.sh
  lockagent run --endpoints 127.0.0.11:7379,127.0.0.12:7379,127.0.0.13:7379 \
      --key deploy --ttl 20s -- sh -c 'deploy --fence "$LOCKAGENT_FENCE"'
`

// runOptions is everything `run` needs after flags and config are merged.
type runOptions struct {
	key         string
	ttl         time.Duration
	wait        time.Duration
	nodeTimeout time.Duration
	maxRenewals int
	killGrace   time.Duration
	durable     bool
	command     []string
}

// runMain is `lockagent run`. It returns the process exit code.
// newRunFlags declares run's flags; runUsage documents each of them.
func newRunFlags() (*flag.FlagSet, *deploymentFlags, *runOptions) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are printed by runMain, with the fix
	dep := addDeploymentFlags(fs)
	o := &runOptions{}
	fs.StringVar(&o.key, "key", "", "lock name")
	fs.DurationVar(&o.ttl, "ttl", 30*time.Second, "lock TTL")
	fs.DurationVar(&o.wait, "wait", 0, "how long to wait for the lock")
	fs.DurationVar(&o.nodeTimeout, "node-timeout", 0, "per-master timeout")
	fs.BoolVar(&o.durable, "durable-release", false, "log the release to the AOF")
	fs.IntVar(&o.maxRenewals, "max-renewals", 0, "renewals allowed")
	fs.DurationVar(&o.killGrace, "kill-grace", 10*time.Second, "SIGTERM to SIGKILL grace")
	return fs, dep, o
}

func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags, dep, o := newRunFlags()
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, runUsage)
			return exitOK
		}
		return usageError(stderr, "run", err)
	}
	o.command = flags.Args()
	log, err := dep.logger(stderr)
	if err != nil {
		return usageError(stderr, "run", err)
	}
	if err := o.check(); err != nil {
		return usageError(stderr, "run", err)
	}
	cfg, err := dep.load()
	if err != nil {
		return usageError(stderr, "run", err)
	}
	maxTTL, maxFrom := cfg.MaxLockTTL.Duration, "the deployment's max_lock_ttl (agent.json, LOCKAGENT_MAX_LOCK_TTL or --max-lock-ttl)"
	if maxTTL == 0 {
		maxTTL, maxFrom = redlock.DefaultMaxTTL, "the default max lock TTL (no max_lock_ttl configured: set it with --max-lock-ttl or LOCKAGENT_MAX_LOCK_TTL)"
	}
	ttlGiven := false
	flags.Visit(func(f *flag.Flag) { ttlGiven = ttlGiven || f.Name == "ttl" })
	if !ttlGiven && o.ttl > maxTTL {
		o.ttl = maxTTL // the default TTL adapts to a deployment with a shorter max
	}
	if o.ttl > maxTTL {
		return usageError(stderr, "run", fmt.Errorf("--ttl %v: longer than %s, %v; use a shorter TTL: renewal keeps the lock while the command runs", o.ttl, maxFrom, maxTTL))
	}
	// Resolve the command before taking the lock: a typo must not cost a lock round.
	path, err := exec.LookPath(o.command[0])
	if err != nil {
		fmt.Fprintf(stderr, "lockagent run: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return exitNotFound
		}
		return exitCannotExec
	}

	clients := lockClients(cfg)
	masters := make([]redis.UniversalClient, len(clients))
	for i, c := range clients {
		masters[i] = c
	}
	defer closeAll(clients)
	lc, err := redlock.New(masters, redlock.Options{
		NodeTimeout:    o.nodeTimeout,
		MaxTTL:         maxTTL,
		MaxExtensions:  o.maxRenewals,
		DurableRelease: o.durable,
	})
	if err != nil {
		return usageError(stderr, "run", err)
	}
	defer lc.Close()

	// Signals are caught from here on: while waiting they abort the wait, once the
	// command runs they are forwarded to it.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	r := &runner{opts: *o, path: path, stdout: stdout, stderr: stderr, log: log, sigs: sigs}
	return r.run(ctx, lc)
}

func (o *runOptions) check() error {
	switch {
	case o.key == "":
		return errors.New("--key: required; the lock name, e.g. --key nightly-backup")
	case len(o.command) == 0:
		return errors.New("no command: put it after --, e.g. lockagent run --key K -- ./job.sh")
	case o.ttl <= 0:
		return fmt.Errorf("--ttl %v: must be positive, such as 30s", o.ttl)
	case o.wait < 0:
		return fmt.Errorf("--wait %v: must be 0 (one attempt) or positive", o.wait)
	case o.nodeTimeout < 0:
		return fmt.Errorf("--node-timeout %v: must be positive (or 0 for the library's default)", o.nodeTimeout)
	case o.maxRenewals < 0:
		return fmt.Errorf("--max-renewals %d: must be 0 (the library's bound) or positive", o.maxRenewals)
	case o.killGrace <= 0:
		return fmt.Errorf("--kill-grace %v: must be positive, such as 10s", o.killGrace)
	}
	return nil
}

func usageError(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "lockagent %s: %v\n(see lockagent %s --help)\n", cmd, err, cmd)
	return exitUsage
}

// runner holds the lock around one command.
type runner struct {
	opts   runOptions
	path   string
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	sigs   chan os.Signal
}

func (r *runner) run(ctx context.Context, lc *redlock.Client) int {
	lock, code := r.acquire(ctx, lc)
	if lock == nil {
		return code
	}
	// Release on every path from here on, with a context no signal or caller cancels.
	defer r.release(lock)
	return r.supervise(lock)
}

// acquire takes the lock, or returns the exit code saying why it could not.
func (r *runner) acquire(ctx context.Context, lc *redlock.Client) (*redlock.Lock, int) {
	type result struct {
		lock *redlock.Lock
		err  error
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.log.Info("acquiring lock", "key", r.opts.key, "ttl", r.opts.ttl, "wait", r.opts.wait)
	done := make(chan result, 1)
	go func() {
		var l *redlock.Lock
		var err error
		if r.opts.wait == 0 {
			l, err = lc.TryAcquire(actx, r.opts.key, r.opts.ttl, redlock.WithAutoRenew())
		} else {
			wctx, wcancel := context.WithTimeout(actx, r.opts.wait)
			l, err = lc.Acquire(wctx, r.opts.key, r.opts.ttl, redlock.WithAutoRenew())
			wcancel()
		}
		done <- result{l, err}
	}()
	var res result
	select {
	case res = <-done:
	case sig := <-r.sigs:
		cancel()
		if res = <-done; res.lock != nil {
			r.release(res.lock)
		}
		fmt.Fprintf(r.stderr, "lockagent run: %v while waiting for lock %q; nothing was started\n", sig, r.opts.key)
		return nil, exitSignalBase + signalNumber(sig)
	}
	if res.err == nil {
		r.log.Info("lock acquired", "key", r.opts.key, "fence", res.lock.Fence(), "deadline", res.lock.Deadline())
		return res.lock, exitOK
	}
	var unavailable *redlock.UnavailableError
	switch {
	case errors.As(res.err, &unavailable):
		fmt.Fprintf(r.stderr, "lockagent run: masters unavailable, lock %q not acquired: %v\n", r.opts.key, res.err)
		return nil, exitUnavailable
	case errors.Is(res.err, redlock.ErrTTLTooLong):
		return nil, usageError(r.stderr, "run", fmt.Errorf("--ttl %v: %w", r.opts.ttl, res.err))
	case errors.Is(res.err, redlock.ErrTaken), errors.Is(res.err, context.DeadlineExceeded):
		how := "one attempt (--wait 0)"
		if r.opts.wait > 0 {
			how = fmt.Sprintf("waited %v (--wait)", r.opts.wait)
		}
		fmt.Fprintf(r.stderr, "lockagent run: lock %q is held by someone else; %s: %v\n", r.opts.key, how, res.err)
		return nil, exitNotAcquired
	}
	fmt.Fprintf(r.stderr, "lockagent run: lock %q not acquired: %v\n", r.opts.key, res.err)
	return nil, exitUnavailable
}

// supervise runs the command while the lock is held and returns the exit code.
func (r *runner) supervise(lock *redlock.Lock) int {
	cmd := exec.Command(r.path, r.opts.command[1:]...)
	cmd.Args[0] = r.opts.command[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, r.stdout, r.stderr
	cmd.Env = append(os.Environ(),
		"LOCKAGENT_KEY="+r.opts.key,
		"LOCKAGENT_FENCE="+strconv.FormatUint(lock.Fence(), 10),
		"LOCKAGENT_DEADLINE="+lock.Deadline().UTC().Format(time.RFC3339Nano),
		"LOCKAGENT_TTL="+r.opts.ttl.String(),
	)
	// Own process group: stopping the command on lock loss reaches its children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Output copying (when stdout is not a file) must not outlive the command for long.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(r.stderr, "lockagent run: %v\n", err)
		return exitCannotExec
	}
	pgid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	// Auto-renewal (WithAutoRenew) cancels the lock's context once the lock is lost, its
	// validity ran out, or the renewal limit was reached.
	lost := lock.Context().Done()

	var (
		waitErr   error
		lockLost  bool
		killTimer <-chan time.Time
	)
loop:
	for {
		select {
		case waitErr = <-exited:
			break loop
		case sig := <-r.sigs:
			r.log.Info("forwarding signal to the command", "signal", sig, "pgid", pgid)
			_ = syscall.Kill(-pgid, sig.(syscall.Signal))
		case <-lost:
			lost = nil
			lockLost = true
			fmt.Fprintf(r.stderr, "lockagent run: lock %q lost (%v); stopping the command (SIGTERM, SIGKILL after %v)\n",
				r.opts.key, context.Cause(lock.Context()), r.opts.killGrace)
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			killTimer = time.After(r.opts.killGrace)
		case <-killTimer:
			fmt.Fprintf(r.stderr, "lockagent run: command still running %v after SIGTERM; sending SIGKILL\n", r.opts.killGrace)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}
	code := commandExitCode(waitErr)
	if lockLost {
		// Nothing of the command may keep working without the lock.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		fmt.Fprintf(r.stderr, "lockagent run: command stopped because lock %q was lost (its own exit status: %d)\n", r.opts.key, code)
		return exitLost
	}
	if lock.Context().Err() != nil {
		fmt.Fprintf(r.stderr, "lockagent run: lock %q validity ended as the command exited (%v); it may have run without the lock at the end\n",
			r.opts.key, context.Cause(lock.Context()))
		return exitLost
	}
	if syscall.Kill(-pgid, 0) == nil {
		r.log.Warn("processes the command started are still running after it exited; they do not hold the lock", "pgid", pgid)
	}
	r.log.Info("command exited", "key", r.opts.key, "code", code)
	return code
}

// release lets go of the lock on every master, bounded, whatever happened before.
func (r *runner) release(lock *redlock.Lock) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := lock.Release(ctx); err != nil {
		r.log.Warn("release not confirmed by a majority; the lock expires by its TTL", "key", r.opts.key, "err", err)
		return
	}
	r.log.Info("lock released", "key", r.opts.key)
}

// commandExitCode maps how the command ended to an exit code, as shells do.
func commandExitCode(err error) int {
	if err == nil || errors.Is(err, exec.ErrWaitDelay) {
		// ErrWaitDelay: the command exited 0 but something it started kept its output open.
		return 0
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return exitSignalBase + int(ws.Signal())
		}
		return exitErr.ExitCode()
	}
	return exitCannotExec
}

func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 1
}

func closeAll(clients []*redis.Client) {
	for _, c := range clients {
		_ = c.Close()
	}
}
