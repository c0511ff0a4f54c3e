package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
	"github.com/redlock-kit/redlock-kit/lockagent/redlockprom"
)

// Exit codes of `lockagent run` besides the command's own (sysexits.h where one fits).
const (
	exitUnavailable = 69  // EX_UNAVAILABLE: no majority of masters reachable
	exitLost        = 70  // EX_SOFTWARE: the lock was lost while the command ran; it was stopped
	exitNotAcquired = 75  // EX_TEMPFAIL: held by someone else (after --wait): try again later (--conflict-exit-code)
	exitDenied      = 77  // EX_NOPERM: a master refused the credentials or a command (WRONGPASS, NOPERM, NOAUTH)
	exitMaxDuration = 124 // as timeout(1): --max-duration reached, the command was stopped
	exitCannotExec  = 126 // as in shells: the command exists but cannot be executed
	exitNotFound    = 127 // as in shells: the command was not found
	exitSignalBase  = 128 // 128+N: killed by (or, while waiting, interrupted by) signal N
)

// progressEvery bounds how often run reports, while waiting, that the lock is still held.
const progressEvery = 5 * time.Second

const runUsage = `Usage: lockagent run [flags] --key K [--ttl D] [--wait D|forever] -- command [args...]

Holds the Redlock lock K while a command runs, and until every process it started is gone:
  1. acquires K on a majority of the masters (waiting, by default for as long as it takes,
     for a holder to let go; like flock(1)),
  2. starts the command with the lock's fencing token in its environment,
  3. renews the lock while any process of the command runs (every third of the TTL),
  4. stops them all if the lock is lost (renewal refused or not confirmed by a majority
     before the validity ran out) or --max-duration passes: SIGTERM to the command's
     process group and to every other process it started, SIGKILL after --kill-grace,
  5. releases the lock once the last of them exited, whatever the outcome.
Every process of the command holds the lock: the command itself, what it left running in
the background, and daemons that left its process group or session (setsid, double fork).
On Linux lockagent is their child subreaper (orphans are reparented to it), so it sees the
last one exit; elsewhere it follows the command's process group only. The command is not
in the terminal's foreground (it must not read from the terminal).

Lock:
  --key K              lock name (required). The Redis key is the lock user's key prefix
                       (--key-prefix, agent.json's key_prefix) followed by K: with prefix
                       "billing:", --key nightly locks the key billing:nightly; with no
                       prefix, K itself. A name ending in ":fence" or ":waitq", or with
                       ":waitq:" in it, is refused: those keys are a lock's fencing
                       register, its wait queue and the queue's pages
  --ttl D              lock TTL (default 30s, or the deployment's max lock TTL when that is
                       shorter; never more). The holder may use the lock for its validity:
                       TTL - acquisition time - drift (TTL*1% + 2ms)
  --wait D|forever     how long to wait for a lock someone else holds (default forever);
                       0 = one attempt. While waiting, lockagent says on stderr (at most
                       every 5s) that the lock is held and when it frees up at the latest
                       if its holder stops renewing it, or why the masters did not answer
  --conflict-exit-code N
                       exit code when the lock is held by someone else after --wait
                       (default 75)
  --max-duration D     the longest the command may hold the lock: then lockagent stops all
                       its processes (SIGTERM, SIGKILL after --kill-grace), still holding
                       the lock, releases it and exits 124. Default 0: no bound, the lock is
                       renewed for as long as any process of the command runs
  --node-timeout D     per-master timeout of every lock command (default: the library's,
                       derived from the TTL)
  --kill-grace D       after SIGTERM, how long the processes get before SIGKILL (default 10s)
  --durable-release    log the release to the masters' AOF (an fsync on each). By default
                       the release is applied in memory only: a master that restarts from
                       its AOF within the TTL shows the released key again until it
                       expires, which can delay the next holder there, never admit two
  --metrics-file PATH  when done, write the library's metrics of this run (the README's
                       Metrics: operations, attempts, each master's replies) to PATH in the
                       Prometheus text format, replacing it atomically (for node_exporter's
                       textfile collector: PATH ending in .prom in its directory)

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
group and to the processes it started outside that group; the lock is released once every
one of them has exited (a background job that ignores the signal keeps the lock until it
ends). While lockagent is still waiting for the lock, they abort the wait instead (nothing
was started).

Exit codes:
  N        the command's own exit code, when it and every process it started ran to
           completion holding the lock
  128+S    the command was killed by signal S (as in shells), e.g. 143 for SIGTERM
  64       usage or configuration error: nothing was done
  69       masters unavailable: fewer than a majority answered (nothing was started)
  70       the lock was lost while the command ran (another holder has it, or renewal
           failed until the validity ran out): its processes were stopped; or it had just
           ended as the validity ran out, so it may have run without the lock at the end
  75       lock not acquired: someone else holds it (after waiting --wait); try later.
           --conflict-exit-code changes it
  77       access denied: a master refused the user or password (WRONGPASS, NOAUTH) or a
           command (NOPERM); the server's message is shown. Not retried: fix the
           credentials or the ACL (nothing was started)
  124      --max-duration reached: the command's processes were stopped
  126      the command cannot be executed; 127 the command was not found (no lock taken)
  130/143  interrupted by SIGINT/SIGTERM while waiting for the lock
A command that itself exits with one of these codes cannot be told apart by the code
alone: lockagent writes its reason on stderr whenever it, and not the command, chose the
exit code.

Examples:
  LOCKAGENT_PASSWORD=... lockagent run -c agent.json --key nightly-backup --ttl 30s \
      --wait 5m -- /usr/local/bin/backup.sh
  lockagent run --endpoints 127.0.0.11:7379,127.0.0.12:7379,127.0.0.13:7379 \
      --key deploy --ttl 20s -- sh -c 'deploy --fence "$LOCKAGENT_FENCE"'
`

// runOptions is everything `run` needs after flags and config are merged.
type runOptions struct {
	key          string
	ttl          time.Duration
	wait         waitFlag
	conflictCode int
	maxDuration  time.Duration
	nodeTimeout  time.Duration
	killGrace    time.Duration
	durable      bool
	metricsFile  string
	command      []string
}

// waitFlag is --wait: a duration, or forever.
type waitFlag struct {
	d       time.Duration
	forever bool
}

func (w *waitFlag) String() string {
	if w.forever {
		return "forever"
	}
	return w.d.String()
}

func (w *waitFlag) Set(s string) error {
	if strings.EqualFold(s, "forever") || s == "inf" {
		*w = waitFlag{forever: true}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 5m, 0 for one attempt, or forever")
	}
	*w = waitFlag{d: d}
	return nil
}

// newRunFlags declares run's flags; runUsage documents each of them.
func newRunFlags() (*flag.FlagSet, *deploymentFlags, *runOptions) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	dep := addDeploymentFlags(fs)
	o := &runOptions{wait: waitFlag{forever: true}}
	fs.StringVar(&o.key, "key", "", "lock name")
	fs.DurationVar(&o.ttl, "ttl", 30*time.Second, "lock TTL")
	fs.Var(&o.wait, "wait", "how long to wait for the lock, or forever")
	fs.IntVar(&o.conflictCode, "conflict-exit-code", exitNotAcquired, "exit code when someone else holds the lock")
	fs.DurationVar(&o.maxDuration, "max-duration", 0, "longest the command may hold the lock (0: no bound)")
	fs.DurationVar(&o.nodeTimeout, "node-timeout", 0, "per-master timeout")
	fs.BoolVar(&o.durable, "durable-release", false, "log the release to the AOF")
	fs.DurationVar(&o.killGrace, "kill-grace", 10*time.Second, "SIGTERM to SIGKILL grace")
	fs.StringVar(&o.metricsFile, "metrics-file", "", "write the library's metrics here when done")
	return fs, dep, o
}

// runMain is `lockagent run`. It returns the process exit code. Once the lock is held it
// makes the process the reaper of the command's orphans and reaps every child: run it as
// its own process (the lockagent binary), never inside a program with other children.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags, dep, o := newRunFlags()
	if code, ok := parseFlags(flags, args, "run", runUsage, stdout, stderr); !ok {
		return code
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
	var hooks redlock.Hooks
	var registry *prometheus.Registry
	if o.metricsFile != "" {
		registry = prometheus.NewRegistry()
		m, err := redlockprom.New(registry)
		if err != nil {
			return usageError(stderr, "run", err)
		}
		hooks = m
	}
	lc, err := redlock.New(masters, redlock.Options{
		KeyPrefix:   cfg.KeyPrefix, // the lock user's prefix: only keys under it are reachable
		NodeTimeout: o.nodeTimeout,
		MaxTTL:      maxTTL,
		// Renew for as long as the command runs; --max-duration is the explicit bound.
		MaxExtensions:  math.MaxInt,
		DurableRelease: o.durable,
		Hooks:          hooks,
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
	code := r.run(ctx, lc)
	if registry != nil {
		// After the release: the file has every operation of the run. Atomic (temp file +
		// rename), so a textfile collector never reads a torn file.
		if err := prometheus.WriteToTextfile(o.metricsFile, registry); err != nil {
			fmt.Fprintf(stderr, "lockagent run: --metrics-file: %v\n", err)
		}
	}
	return code
}

func (o *runOptions) check() error {
	switch {
	case o.key == "":
		return errors.New("--key: required; the lock name, e.g. --key nightly-backup")
	case len(o.command) == 0:
		return errors.New("no command: put it after --, e.g. lockagent run --key K -- ./job.sh")
	case o.ttl <= 0:
		return fmt.Errorf("--ttl %v: must be positive, such as 30s", o.ttl)
	case strings.HasSuffix(o.key, redlock.FenceSuffix):
		return fmt.Errorf("--key %q: a name ending in %q names a lock's fencing register; choose another name", o.key, redlock.FenceSuffix)
	case strings.HasSuffix(o.key, redlock.QueueSuffix):
		return fmt.Errorf("--key %q: a name ending in %q names a lock's wait queue; choose another name", o.key, redlock.QueueSuffix)
	case strings.Contains(o.key, redlock.QueueSuffix+":"):
		return fmt.Errorf("--key %q: a name with %q in it names a page of a lock's wait queue; choose another name", o.key, redlock.QueueSuffix+":")
	case o.wait.d < 0:
		return fmt.Errorf("--wait %v: must be 0 (one attempt), positive, or forever", o.wait.d)
	case o.conflictCode < 0 || o.conflictCode > 255:
		return fmt.Errorf("--conflict-exit-code %d: must be an exit code, 0 to 255", o.conflictCode)
	case o.maxDuration < 0:
		return fmt.Errorf("--max-duration %v: must be positive (or 0: no bound)", o.maxDuration)
	case o.nodeTimeout < 0:
		return fmt.Errorf("--node-timeout %v: must be positive (or 0 for the library's default)", o.nodeTimeout)
	case o.killGrace <= 0:
		return fmt.Errorf("--kill-grace %v: must be positive, such as 10s", o.killGrace)
	}
	return nil
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
	return r.runWhileHeld(lock)
}

// acquire takes the lock, or returns the exit code saying why it could not.
func (r *runner) acquire(ctx context.Context, lc *redlock.Client) (*redlock.Lock, int) {
	type result struct {
		lock *redlock.Lock
		err  error
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.log.Info("acquiring lock", "key", r.opts.key, "ttl", r.opts.ttl, "wait", r.opts.wait.String())
	done := make(chan result, 1)
	go func() {
		var l *redlock.Lock
		var err error
		opts := []redlock.LockOption{redlock.WithAutoRenew(), redlock.WithRetryHook(r.progress())}
		switch {
		case !r.opts.wait.forever && r.opts.wait.d == 0:
			l, err = lc.TryAcquire(actx, r.opts.key, r.opts.ttl, redlock.WithAutoRenew())
		case r.opts.wait.forever:
			l, err = lc.Acquire(actx, r.opts.key, r.opts.ttl, opts...)
		default:
			wctx, wcancel := context.WithTimeout(actx, r.opts.wait.d)
			l, err = lc.Acquire(wctx, r.opts.key, r.opts.ttl, opts...)
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
	case errors.Is(res.err, redlock.ErrDenied):
		fmt.Fprintf(r.stderr, "lockagent run: lock %q not acquired: %v; the user and password come from --username, LOCKAGENT_PASSWORD or agent.json\n", r.opts.key, res.err)
		return nil, exitDenied
	case errors.Is(res.err, redlock.ErrInvalid):
		return nil, usageError(r.stderr, "run", res.err)
	case errors.As(res.err, &unavailable):
		fmt.Fprintf(r.stderr, "lockagent run: masters unavailable, lock %q not acquired: %v\n", r.opts.key, res.err)
		return nil, exitUnavailable
	case errors.Is(res.err, redlock.ErrTTLTooLong):
		return nil, usageError(r.stderr, "run", fmt.Errorf("--ttl %v: %w", r.opts.ttl, res.err))
	case errors.Is(res.err, redlock.ErrTaken), errors.Is(res.err, context.DeadlineExceeded):
		how := "one attempt (--wait 0)"
		if r.opts.wait.d > 0 {
			how = fmt.Sprintf("waited %v (--wait)", r.opts.wait.d)
		}
		fmt.Fprintf(r.stderr, "lockagent run: lock %q is held by someone else; %s: %v\n", r.opts.key, how, res.err)
		return nil, r.opts.conflictCode
	}
	fmt.Fprintf(r.stderr, "lockagent run: lock %q not acquired: %v\n", r.opts.key, res.err)
	return nil, exitUnavailable
}

// progress returns the retry hook that says on stderr, at most every progressEvery, why
// the lock is not ours yet.
func (r *runner) progress() func(int, error) {
	var last time.Time
	start := time.Now()
	return func(_ int, err error) {
		if !last.IsZero() && time.Since(last) < progressEvery {
			return
		}
		last = time.Now()
		waited := time.Since(start).Round(time.Second)
		var taken *redlock.TakenError
		switch {
		case errors.As(err, &taken):
			free := "unknown"
			if taken.FreeIn > 0 {
				free = fmt.Sprintf("in %v at the latest if its holder stops renewing it", taken.FreeIn.Round(100*time.Millisecond))
			}
			fmt.Fprintf(r.stderr, "lockagent run: waiting for lock %q (%v so far): held by another client (refused by %d of the masters); it frees up %s\n",
				r.opts.key, waited, len(taken.Refused), free)
		default:
			fmt.Fprintf(r.stderr, "lockagent run: waiting for lock %q (%v so far): %v\n", r.opts.key, waited, err)
		}
	}
}

// runWhileHeld runs the command while the lock is held, until every process of the
// command is gone, and returns the exit code.
func (r *runner) runWhileHeld(lock *redlock.Lock) int {
	// Orphans of the command (background jobs, daemons that left its group or session)
	// become lockagent's children: it can wait for the last of them.
	subreaper := becomeSubreaper() == nil
	if !subreaper {
		fmt.Fprintln(r.stderr, "lockagent run: cannot become the command's child subreaper: only its process group is followed")
	}
	cmd := exec.Command(r.path, r.opts.command[1:]...)
	cmd.Args[0] = r.opts.command[0]
	// Files are handed to the command as they are; other writers would need a copying
	// goroutine that cmd.Wait collects, and lockagent reaps the command itself.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, r.stdout, r.stderr
	cmd.Env = append(os.Environ(),
		"LOCKAGENT_KEY="+r.opts.key,
		"LOCKAGENT_FENCE="+strconv.FormatUint(lock.Fence(), 10),
		"LOCKAGENT_DEADLINE="+lock.Deadline().UTC().Format(time.RFC3339Nano),
		"LOCKAGENT_TTL="+r.opts.ttl.String(),
	)
	// Own process group: stopping the command on lock loss reaches its children too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(r.stderr, "lockagent run: %v\n", err)
		return exitCannotExec
	}
	defer cmd.Process.Release()
	pgid := cmd.Process.Pid

	// lockagent has no other children: every child it reaps is the command or one of its
	// orphans. When none is left (ECHILD), no process of the command remains.
	cmdExited := make(chan syscall.WaitStatus, 1)
	allGone := make(chan struct{})
	go func() {
		defer close(allGone)
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, 0, nil)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				break // ECHILD
			}
			if pid == pgid {
				cmdExited <- ws
			}
		}
		// Without a subreaper, orphans went to init: follow the process group instead.
		for !subreaper && syscall.Kill(-pgid, 0) == nil {
			time.Sleep(100 * time.Millisecond)
		}
	}()

	// Auto-renewal (WithAutoRenew) cancels the lock's context once the lock is lost or
	// its validity ran out.
	lost := lock.Context().Done()
	var maxDuration <-chan time.Time
	if r.opts.maxDuration > 0 {
		t := time.NewTimer(r.opts.maxDuration)
		defer t.Stop()
		maxDuration = t.C
	}

	var (
		status    *syscall.WaitStatus
		stopped   int // exit code chosen by lockagent when it stopped the processes
		killTimer <-chan time.Time
		killTick  *time.Ticker
		killTicks <-chan time.Time
	)
	defer func() {
		if killTick != nil {
			killTick.Stop()
		}
	}()
	stop := func(why string) {
		fmt.Fprintf(r.stderr, "lockagent run: %s; stopping the command and every process it started (SIGTERM, SIGKILL after %v)\n", why, r.opts.killGrace)
		r.signalAll(pgid, syscall.SIGTERM)
		killTimer = time.After(r.opts.killGrace)
	}
loop:
	for {
		select {
		case ws := <-cmdExited:
			status = &ws
			if pids := descendants(os.Getpid()); len(pids) > 0 {
				r.log.Info("command exited; the lock is held until the processes it started exit",
					"key", r.opts.key, "code", waitStatusCode(ws), "pids", pids)
			}
		case <-allGone:
			select {
			case ws := <-cmdExited: // sent before allGone closed; select may pick either
				status = &ws
			default:
			}
			break loop
		case sig := <-r.sigs:
			r.log.Info("forwarding signal to the command's processes", "signal", sig, "pgid", pgid)
			r.signalAll(pgid, sig.(syscall.Signal))
		case <-lost:
			lost = nil
			if stopped == 0 {
				stopped = exitLost
				stop(fmt.Sprintf("lock %q lost (%v)", r.opts.key, context.Cause(lock.Context())))
			}
		case <-maxDuration:
			maxDuration = nil
			if stopped == 0 {
				stopped = exitMaxDuration
				stop(fmt.Sprintf("--max-duration %v reached for lock %q", r.opts.maxDuration, r.opts.key))
			}
		case <-killTimer:
			killTimer = nil
			fmt.Fprintf(r.stderr, "lockagent run: processes still running %v after SIGTERM; sending SIGKILL\n", r.opts.killGrace)
			r.signalAll(pgid, syscall.SIGKILL)
			// A process may fork between the listing and the kill: repeat until none is left.
			killTick = time.NewTicker(100 * time.Millisecond)
			killTicks = killTick.C
		case <-killTicks:
			r.signalAll(pgid, syscall.SIGKILL)
		}
	}
	code := exitCannotExec
	if status != nil {
		code = waitStatusCode(*status)
	}
	switch {
	case stopped == exitLost:
		fmt.Fprintf(r.stderr, "lockagent run: command stopped because lock %q was lost (its own exit status: %d)\n", r.opts.key, code)
		return exitLost
	case stopped == exitMaxDuration:
		fmt.Fprintf(r.stderr, "lockagent run: command stopped after --max-duration %v (its own exit status: %d)\n", r.opts.maxDuration, code)
		return exitMaxDuration
	case lock.Context().Err() != nil:
		fmt.Fprintf(r.stderr, "lockagent run: lock %q validity ended as the command exited (%v); it may have run without the lock at the end\n",
			r.opts.key, context.Cause(lock.Context()))
		return exitLost
	}
	r.log.Info("command exited", "key", r.opts.key, "code", code)
	return code
}

// signalAll sends sig to the command's process group and to every other process below
// lockagent (those that left the group).
func (r *runner) signalAll(pgid int, sig syscall.Signal) {
	_ = syscall.Kill(-pgid, sig)
	for _, pid := range descendants(os.Getpid()) {
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid {
			continue // reached through the group
		}
		_ = syscall.Kill(pid, sig)
	}
}

// release lets go of the lock on every master, bounded, whatever happened before.
func (r *runner) release(lock *redlock.Lock) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := lock.Release(ctx); err != nil {
		fmt.Fprintf(r.stderr, "lockagent run: release of lock %q not confirmed by a majority; it expires by its TTL: %v\n", r.opts.key, err)
		return
	}
	r.log.Info("lock released", "key", r.opts.key)
}

// waitStatusCode maps how the command ended to an exit code, as shells do.
func waitStatusCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ws.ExitStatus()
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
