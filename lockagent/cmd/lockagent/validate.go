package main

import (
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/overlap"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// Exit codes of `lockagent validate` (documented in its --help).
const (
	validateExitSafe   = 0  // every phase passed
	validateExitUnsafe = 1  // the deployment is unsafe: the report says why
	validateExitUsage  = 64 // EX_USAGE, as for every lockagent command: bad flags or config, nothing was checked
	validateExitFailed = 70 // EX_SOFTWARE: validation could not finish (interrupted, internal error)
)

const validateUsage = `Usage: lockagent validate -c agent.json [flags]

Proves a Redlock deployment, in three phases, printing progress as it goes:
  1. audit      every master: independence (distinct run_ids, no replicas, not a replica),
                AOF appendfsync always, no-appendfsync-on-rewrite no, noeviction with an
                explicit maxmemory, last AOF write ok, restart delay >= max TTL + drift,
                clock offset and clock rate vs this machine, round trip vs the TTL
  2. behaviour  acquire, exclusion (a second client is refused), release, expiry, extend
                (only by the owner), owner-only release (a stale holder cannot delete
                the new holder's lock), fencing tokens increasing
  3. contention --clients clients compete for --duration; every hold is checked for overlap

Settings come from -c agent.json, then LOCKAGENT_* environment variables
(LOCKAGENT_ENDPOINTS, LOCKAGENT_USERNAME, LOCKAGENT_PASSWORD, LOCKAGENT_ADMIN_USERNAME,
LOCKAGENT_ADMIN_PASSWORD, LOCKAGENT_TLS, LOCKAGENT_MAX_LOCK_TTL, LOCKAGENT_RESTART_DELAY),
then flags. Test keys are named redlock-kit:validate:<random> and deleted afterwards.

Exit codes:
  0   SAFE: every phase passed
  1   UNSAFE: at least one problem (listed in the report)
  64  usage or configuration error: nothing was checked
  70  validation could not finish (interrupted or internal error): no verdict

Flags:
`

// validateOptions is everything validate needs, after the config, env and flags are merged.
type validateOptions struct {
	cfg           *agentconfig.Config
	jsonOut       bool
	clients       int
	duration      time.Duration
	nodeTimeout   time.Duration // Redlock per-node timeout; 0 = the library's default
	auditTimeout  time.Duration
	clockInterval time.Duration
}

// parseValidateFlags merges agent.json, LOCKAGENT_* and flags. Flags win when given.
func parseValidateFlags(args []string, stderr io.Writer) (*validateOptions, error) {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, validateUsage)
		fs.PrintDefaults()
	}
	var (
		configPath, endpoints, username, password, adminUsername, adminPassword string
		useTLS                                                                  bool
		maxTTL, restartDelay                                                    time.Duration
		o                                                                       = &validateOptions{}
	)
	fs.StringVar(&configPath, "c", "", "agent config JSON (the module's agent_config output)")
	fs.StringVar(&configPath, "config", "", "same as -c")
	fs.BoolVar(&o.jsonOut, "json", false, "print one JSON document on stdout (progress goes to stderr)")
	fs.StringVar(&endpoints, "endpoints", "", "masters as host:port,host:port,... (overrides the config)")
	fs.StringVar(&username, "username", "", "restricted lock user (overrides the config)")
	fs.StringVar(&password, "password", "", "lock user's password (prefer LOCKAGENT_PASSWORD: flags show in ps)")
	fs.StringVar(&adminUsername, "admin-username", "", "admin user for the audit's CONFIG GET/INFO (default \"default\")")
	fs.StringVar(&adminPassword, "admin-password", "", "admin password (prefer LOCKAGENT_ADMIN_PASSWORD)")
	fs.BoolVar(&useTLS, "tls", false, "connect with TLS")
	fs.DurationVar(&maxTTL, "max-lock-ttl", 0, "largest lock TTL clients use (overrides the config)")
	fs.DurationVar(&restartDelay, "restart-delay", 0, "how long a crashed master stays down (overrides the config)")
	fs.IntVar(&o.clients, "clients", 8, "contention phase: competing clients")
	fs.DurationVar(&o.duration, "duration", 3*time.Second, "contention phase: how long the clients compete")
	fs.DurationVar(&o.nodeTimeout, "node-timeout", 0, "Redlock per-master timeout (default: the library's)")
	fs.DurationVar(&o.auditTimeout, "audit-timeout", audit.DefaultNodeTimeout, "audit: per-master connect/command timeout")
	fs.DurationVar(&o.clockInterval, "clock-interval", audit.DefaultClockInterval, "audit: time between the two TIME samples of the clock-rate check")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: validate takes only flags (see --help)", fs.Arg(0))
	}
	cfg, err := agentconfig.Load(configPath)
	if err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "endpoints":
			cfg.Endpoints = agentconfig.SplitList(endpoints)
		case "username":
			cfg.Username = username
		case "password":
			cfg.Password = password
		case "admin-username":
			cfg.AdminUsername = adminUsername
		case "admin-password":
			cfg.AdminPassword = adminPassword
		case "tls":
			cfg.TLS = useTLS
		case "max-lock-ttl":
			cfg.MaxLockTTL.Duration = maxTTL
		case "restart-delay":
			cfg.RestartDelay.Duration = restartDelay
		}
	})
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxLockTTL.Duration <= 0 {
		return nil, errors.New("max_lock_ttl: not set; give the largest TTL clients use (\"max_lock_ttl\": \"30s\" in agent.json, LOCKAGENT_MAX_LOCK_TTL or --max-lock-ttl)")
	}
	if cfg.AdminUsername == "" {
		cfg.AdminUsername = "default"
	}
	if cfg.Username == "" {
		cfg.Username = redisconf.DefaultLockUser
	}
	if cfg.AdminPassword == "" {
		return nil, errors.New("admin_password: not set; the audit needs the admin user for CONFIG GET and INFO (the lock user is deliberately not allowed): set admin_password in agent.json, LOCKAGENT_ADMIN_PASSWORD or --admin-password")
	}
	if cfg.Password == "" {
		return nil, errors.New("password: the restricted lock user's password is not set; set password in agent.json, LOCKAGENT_PASSWORD (preferred: flags show in ps) or --password")
	}
	if cfg.Quorum != 0 && cfg.Quorum != cfg.QuorumSize() {
		return nil, fmt.Errorf("quorum: agent.json says %d but %d endpoints need a quorum of %d (N/2+1); fix or drop the quorum field", cfg.Quorum, len(cfg.Endpoints), cfg.QuorumSize())
	}
	if o.clients < 2 {
		return nil, fmt.Errorf("--clients %d: the contention phase needs at least 2 competing clients", o.clients)
	}
	if o.duration <= 0 {
		return nil, fmt.Errorf("--duration %v: must be positive, such as 3s", o.duration)
	}
	if o.nodeTimeout < 0 || o.auditTimeout <= 0 || o.clockInterval <= 0 {
		return nil, errors.New("--node-timeout, --audit-timeout and --clock-interval: must be positive durations")
	}
	o.cfg = cfg
	return o, nil
}

// validateResult is the --json document, and what the human report is printed from.
type validateResult struct {
	Verdict    string           `json:"verdict"` // SAFE or UNSAFE
	Safe       bool             `json:"safe"`
	Problems   []string         `json:"problems"`
	Warnings   []string         `json:"warnings"` // degraded but safe, e.g. a minority of masters down
	Audit      *audit.Report    `json:"audit"`
	Behaviour  []behaviourCheck `json:"behaviour"`
	Contention *contentionStats `json:"contention,omitempty"`
}

// behaviourCheck is one Redlock property exercised against the live deployment.
type behaviourCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// contentionStats summarises the contention phase.
type contentionStats struct {
	Clients      int      `json:"clients"`
	DurationMS   int64    `json:"duration_ms"`
	Acquisitions int      `json:"acquisitions"`
	Refusals     int      `json:"refusals"`
	Errors       int      `json:"errors"`
	Violations   int      `json:"violations"`
	LatencyP50MS float64  `json:"latency_p50_ms"`
	LatencyP99MS float64  `json:"latency_p99_ms"`
	ViolationLog []string `json:"violation_log,omitempty"`
}

// validateMain is `lockagent validate`. It returns the process exit code.
func validateMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := parseValidateFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return validateExitSafe
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockagent validate: %v\n", err)
		return validateExitUsage
	}
	// Ctrl-C ends the run early but still deletes the test keys (fence registers have no TTL).
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	progress := stdout
	if opts.jsonOut {
		progress = stderr
	}
	res, err := runValidate(ctx, opts, progress)
	if err != nil {
		fmt.Fprintf(stderr, "lockagent validate: %v\n", err)
		return validateExitFailed
	}
	if opts.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "lockagent validate: %v\n", err)
			return validateExitFailed
		}
	} else {
		printVerdict(stdout, res)
	}
	if !res.Safe {
		return validateExitUnsafe
	}
	return validateExitSafe
}

// runValidate runs the three phases in order, printing progress to w.
func runValidate(ctx context.Context, o *validateOptions, w io.Writer) (*validateResult, error) {
	cfg := o.cfg
	fmt.Fprintf(w, "lockagent validate: %d masters, quorum %d, max lock TTL %v, restart delay %s\n",
		len(cfg.Endpoints), cfg.QuorumSize(), cfg.MaxLockTTL.Duration, orUnknown(cfg.RestartDelay.Duration))

	res := &validateResult{Problems: []string{}, Warnings: []string{}, Behaviour: []behaviourCheck{}}

	// Phase 1: audit.
	fmt.Fprintf(w, "\n[1/3] Audit of every master\n")
	var progressMu sync.Mutex // masters finish concurrently
	rep, err := audit.RunWithProgress(ctx, auditTarget(o), func(m audit.Master) {
		progressMu.Lock()
		defer progressMu.Unlock()
		fmt.Fprintf(w, "  %s\n", describeMaster(m))
	})
	if err != nil {
		return nil, err
	}
	res.Audit = rep
	res.Problems = append(res.Problems, rep.Problems...)
	res.Warnings = append(res.Warnings, rep.Warnings...)
	if len(rep.Problems) == 0 {
		fmt.Fprintf(w, "  audit: no problems\n")
	} else {
		fmt.Fprintf(w, "  audit: %d problem(s)\n", len(rep.Problems))
		for _, p := range rep.Problems {
			fmt.Fprintf(w, "    - %s\n", p)
		}
	}
	if len(rep.Warnings) > 0 {
		fmt.Fprintf(w, "  audit: %d warning(s) (degraded, still safe)\n", len(rep.Warnings))
		for _, p := range rep.Warnings {
			fmt.Fprintf(w, "    - %s\n", p)
		}
	}

	// Phases 2 and 3 use the Redlock library; they cannot run without a quorum.
	if rep.Reachable < rep.Quorum {
		fmt.Fprintf(w, "\n[2/3] Redlock behaviour: skipped (only %d of %d masters reachable, quorum %d)\n", rep.Reachable, len(rep.Masters), rep.Quorum)
		fmt.Fprintf(w, "\n[3/3] Contention: skipped\n")
		res.Problems = append(res.Problems, "Redlock behaviour and contention were not checked: fewer masters are reachable than the quorum.")
	} else {
		checks, contention, problems, err := runRedlockPhases(ctx, o, w)
		if err != nil {
			return nil, err
		}
		res.Behaviour, res.Contention = checks, contention
		res.Problems = append(res.Problems, problems...)
	}
	res.Safe = len(res.Problems) == 0
	res.Verdict = "UNSAFE"
	if res.Safe {
		res.Verdict = "SAFE"
	}
	return res, nil
}

func auditTarget(o *validateOptions) audit.Target {
	cfg := o.cfg
	return audit.Target{
		Endpoints: cfg.Endpoints,
		Username:  cfg.AdminUsername, Password: cfg.AdminPassword,
		LockUsername: cfg.Username, LockPassword: cfg.Password,
		TLS:           cfg.TLS,
		MaxLockTTL:    cfg.MaxLockTTL.Duration,
		RestartDelay:  cfg.RestartDelay.Duration,
		NodeTimeout:   o.auditTimeout,
		ClockInterval: o.clockInterval,
	}
}

// describeMaster is one progress line per audited master.
func describeMaster(m audit.Master) string {
	if !m.Reachable {
		return fmt.Sprintf("DOWN %s  %s", m.Endpoint, m.Error)
	}
	status := "ok  "
	if m.Error != "" {
		status = "PART"
	}
	line := fmt.Sprintf("%s %s  %s  run_id %s  aof %s appendfsync %s  %s maxmemory %s  rtt %.2fms  clock %+.2fms rate %.4f  up %v",
		status, m.Endpoint, m.Role, shortID(m.RunID), onOff(m.AOFEnabled), m.AppendFsync, m.MaxMemoryPolicy, formatBytes(m.MaxMemory),
		audit.Millis(m.RTT), audit.Millis(m.ClockOffset), m.ClockRate, m.Uptime)
	if m.Error != "" {
		line += "  (" + m.Error + ")"
	}
	return line
}

func printVerdict(w io.Writer, res *validateResult) {
	fmt.Fprintln(w)
	if res.Safe {
		if len(res.Warnings) > 0 {
			fmt.Fprintf(w, "VERDICT: SAFE, degraded (%d warning(s) above)\n", len(res.Warnings))
			return
		}
		fmt.Fprintln(w, "VERDICT: SAFE")
		return
	}
	fmt.Fprintf(w, "VERDICT: UNSAFE (%d problem(s))\n", len(res.Problems))
	for _, p := range res.Problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
}

// formatBytes writes a maxmemory the way redis.conf does (64mb), exact or in bytes.
func formatBytes(n int64) string {
	for _, u := range []struct {
		unit string
		size int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.unit)
		}
	}
	return fmt.Sprint(n)
}

func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	if id == "" {
		return "?"
	}
	return id
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func orUnknown(d time.Duration) string {
	if d == 0 {
		return "not given (not checked)"
	}
	return d.String()
}

// runRedlockPhases runs phases 2 and 3 with the Redlock library on keys no real user has
// (redlock-kit:validate:<random>:...), and deletes them (and their fence registers) at the
// end with the admin user: the lock user may not DEL.
func runRedlockPhases(ctx context.Context, o *validateOptions, w io.Writer) ([]behaviourCheck, *contentionStats, []string, error) {
	prefix := "redlock-kit:validate:" + validateRandomID()
	defer cleanupValidateKeys(o, prefix, w)

	var problems []string
	fmt.Fprintf(w, "\n[2/3] Redlock behaviour (keys %s:*)\n", prefix)
	checks, err := runBehaviour(ctx, o, prefix)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, c := range checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
			problems = append(problems, fmt.Sprintf("Redlock behaviour %q failed: %s", c.Name, c.Detail))
		}
		fmt.Fprintf(w, "  %s %-20s %s\n", mark, c.Name, c.Detail)
	}

	fmt.Fprintf(w, "\n[3/3] Contention: %d clients for %v on one key\n", o.clients, o.duration)
	stats, err := runContention(ctx, o, prefix+":contended", w)
	if err != nil {
		return nil, nil, nil, err
	}
	fmt.Fprintf(w, "  acquisitions %d, refusals %d, errors %d, violations %d, acquire latency p50 %.2fms p99 %.2fms\n",
		stats.Acquisitions, stats.Refusals, stats.Errors, stats.Violations, stats.LatencyP50MS, stats.LatencyP99MS)
	for _, v := range stats.ViolationLog {
		fmt.Fprintf(w, "    violation: %s\n", v)
	}
	if stats.Violations > 0 {
		problems = append(problems, fmt.Sprintf("Contention: %d mutual-exclusion violation(s) among %d acquisitions: two clients held the lock at once (first: %s).",
			stats.Violations, stats.Acquisitions, stats.ViolationLog[0]))
	}
	if stats.Acquisitions == 0 {
		problems = append(problems, fmt.Sprintf("Contention: no client acquired the lock in %v (%d errors): the deployment does not hand out locks under load.", o.duration, stats.Errors))
	}
	return checks, stats, problems, nil
}

// validateLocker is one Redlock client with its own connections, like a separate process.
// It tallies the masters' answers per round and key, so a check can tell "the masters
// refused" from "the library refused without asking them".
// freeLockWait bounds the retries of an acquisition that should succeed at once.
const freeLockWait = 5 * time.Second

type validateLocker struct {
	*redlock.Client
	conns []*redis.Client

	mu      sync.Mutex
	replies map[replyKey]replyTally
}

type replyKey struct {
	op  redlock.Op
	key string
}

type replyTally struct{ votes, refusals, errors int }

func newValidateLocker(o *validateOptions) (*validateLocker, error) {
	l := &validateLocker{conns: lockClients(o.cfg), replies: map[replyKey]replyTally{}}
	masters := make([]redis.UniversalClient, len(l.conns))
	for i, c := range l.conns {
		masters[i] = c
	}
	rc, err := redlock.New(masters, redlock.Options{NodeTimeout: o.nodeTimeout, MaxTTL: o.cfg.MaxLockTTL.Duration,
		Hooks: redlock.HookFuncs{OnMasterReply: l.onReply}})
	if err != nil {
		for _, c := range l.conns {
			_ = c.Close()
		}
		return nil, err
	}
	l.Client = rc
	return l, nil
}

func (l *validateLocker) onReply(e redlock.MasterEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := replyKey{e.Op, e.Key}
	t := l.replies[k]
	switch {
	case e.Err != nil:
		t.errors++
	case e.Vote:
		t.votes++
	default:
		t.refusals++
	}
	l.replies[k] = t
}

func (l *validateLocker) tally(op redlock.Op, key string) replyTally {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.replies[replyKey{op, key}]
}

func (l *validateLocker) close() {
	_ = l.Client.Close()
	for _, c := range l.conns {
		_ = c.Close()
	}
}

// behaviourTTLs are the lock TTLs of phase 2: a normal one, and a short one for the
// expiry check (both within the deployment's max TTL).
func behaviourTTLs(maxTTL time.Duration) (ttl, short time.Duration) {
	return min(maxTTL, 10*time.Second), min(maxTTL, 500*time.Millisecond)
}

// runBehaviour exercises the Redlock properties one by one with two independent clients,
// A and B (and C as a bystander that only probes). Every check is decided by what the
// masters did, never by timing.
func runBehaviour(ctx context.Context, o *validateOptions, prefix string) ([]behaviourCheck, error) {
	var lockers [3]*validateLocker
	for i := range lockers {
		l, err := newValidateLocker(o)
		if err != nil {
			for _, made := range lockers[:i] {
				made.close()
			}
			return nil, fmt.Errorf("redlock client: %w", err)
		}
		lockers[i] = l
		defer l.close()
	}
	a, b, probe := lockers[0], lockers[1], lockers[2]
	ttl, shortTTL := behaviourTTLs(o.cfg.MaxLockTTL.Duration)
	var checks []behaviourCheck
	check := func(name string, ok bool, format string, args ...any) {
		checks = append(checks, behaviourCheck{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	var held []*redlock.Lock // released at the end, whatever happened
	defer func() {
		for _, l := range held {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = l.Release(rctx)
			cancel()
		}
	}()
	// acquireFree takes a lock that should be free. A lone attempt can miss the majority
	// when a busy master's fsync outlasts the per-node timeout; that is availability, not
	// safety, so it is retried for a bounded time before the check fails.
	acquireFree := func(c *validateLocker, key string, ttl time.Duration) (*redlock.Lock, error) {
		actx, cancel := context.WithTimeout(ctx, freeLockWait)
		defer cancel()
		return c.Acquire(actx, key, ttl)
	}
	// isTaken is "a probe right now is refused": the key is held on a majority.
	isTaken := func(key string) (bool, error) {
		l, err := probe.TryAcquire(ctx, key, shortTTL)
		if err == nil {
			held = append(held, l)
			return false, nil
		}
		if errors.Is(err, redlock.ErrTaken) {
			return true, nil
		}
		return false, err
	}

	// 1. acquire
	key1 := prefix + ":exclusion"
	lockA, err := acquireFree(a, key1, ttl)
	if err != nil {
		check("acquire", false, "client A could not acquire a free lock: %v", err)
		return checks, nil // nothing else can be checked without a first lock
	}
	held = append(held, lockA)
	check("acquire", lockA.Token() != "" && time.Until(lockA.Deadline()) > 0 && time.Until(lockA.Deadline()) <= ttl,
		"client A holds %s (TTL %v, validity left %v, fence %d)", key1, ttl, time.Until(lockA.Deadline()).Round(time.Millisecond), lockA.Fence())

	// 2. exclusion
	lockB, err := b.TryAcquire(ctx, key1, ttl)
	switch {
	case err == nil:
		held = append(held, lockB)
		check("exclusion", false, "client B acquired %s while client A held it", key1)
	case errors.Is(err, redlock.ErrTaken):
		check("exclusion", true, "client B was refused while A held the lock (%v)", err)
	default:
		check("exclusion", false, "client B's attempt failed without a refusal: %v", err)
	}

	// 3. release frees the lock at once (no wait for the TTL)
	if err := lockA.Release(ctx); err != nil {
		check("release", false, "client A's release failed: %v", err)
	} else if taken, err := isTaken(key1); err != nil || taken {
		check("release", false, "after A released, the lock was still held (taken=%v, err=%v)", taken, err)
	} else {
		check("release", true, "after A released, the lock was free at once")
	}

	// 4. expiry: A's short lock expires by itself and B then gets it, never before A's
	// validity ended.
	key2 := prefix + ":expiry"
	stale, err := acquireFree(a, key2, shortTTL)
	if err != nil {
		check("expiry", false, "client A could not acquire %s: %v", key2, err)
		return checks, nil
	}
	held = append(held, stale)
	waitCtx, cancel := context.WithTimeout(ctx, shortTTL*4+5*time.Second)
	successor, err := b.Acquire(waitCtx, key2, ttl)
	cancel()
	if err != nil {
		check("expiry", false, "client A's %v lock never expired for client B: %v", shortTTL, err)
		return checks, nil
	}
	held = append(held, successor)
	gotAt := time.Now()
	check("expiry", !gotAt.Before(stale.Deadline()),
		"client A's %v lock expired unreleased; client B acquired it %v after A's validity ended",
		shortTTL, gotAt.Sub(stale.Deadline()).Round(time.Millisecond))

	// 5. only the owner extends: A's stale handle is refused, B's extension moves B's
	// deadline later.
	if staleErr := stale.Extend(ctx, ttl); staleErr == nil {
		check("extend", false, "client A extended a lock that had expired and belongs to client B")
	} else if before := successor.Deadline(); successor.Extend(ctx, ttl) != nil {
		check("extend", false, "client B could not extend its own lock")
	} else {
		check("extend", successor.Deadline().After(before),
			"client B extended its lock (validity left %v); client A's stale extend was refused (%v)",
			time.Until(successor.Deadline()).Round(time.Millisecond), staleErr)
	}

	// 6. owner-only release: A's stale handle runs the release script on the masters with
	// its own token; they must refuse, and B's lock must stay.
	relErr := stale.Release(ctx)
	t := a.tally(redlock.OpRelease, key2)
	if taken, err := isTaken(key2); err != nil || !taken || t.votes > 0 {
		check("owner-only release", false, "client A's stale release (err=%v, %d master(s) deleted the key) freed client B's lock (taken=%v, probe err=%v)",
			relErr, t.votes, taken, err)
	} else {
		check("owner-only release", t.refusals > 0,
			"client A's stale release was refused by %d master(s), none deleted the key; client B's lock stayed in place",
			t.refusals)
	}

	// 7. fencing: every acquisition of a key gets a larger token than the one before.
	fences := []uint64{stale.Fence(), successor.Fence()}
	if err := successor.Release(ctx); err != nil {
		check("fencing", false, "client B's release failed: %v", err)
		return checks, nil
	}
	for i := 0; i < 4; i++ {
		c := []*validateLocker{a, b}[i%2]
		l, err := acquireFree(c, key2, shortTTL)
		if err != nil {
			check("fencing", false, "acquisition %d of %s failed: %v", len(fences)+1, key2, err)
			return checks, nil
		}
		fences = append(fences, l.Fence())
		if err := l.Release(ctx); err != nil {
			held = append(held, l)
		}
	}
	increasing := true
	for i := 1; i < len(fences); i++ {
		increasing = increasing && fences[i] > fences[i-1]
	}
	check("fencing", increasing, "tokens of %d successive holders: %v", len(fences), fences)
	return checks, nil
}

// contentionTTL is the lock TTL of phase 3: long enough that a slow machine does not make
// every hold expire, short enough that a hold lost to a crash frees quickly.
func contentionTTL(maxTTL time.Duration) time.Duration { return min(maxTTL, 2*time.Second) }

// runContention has o.clients independent clients compete for one key for o.duration.
// Every hold is recorded as [acquired, min(validity deadline, release start)] on this
// process's monotonic clock; the overlap checker then looks for two holders at once and
// for fencing tokens that do not increase.
func runContention(ctx context.Context, o *validateOptions, key string, w io.Writer) (*contentionStats, error) {
	lockers := make([]*validateLocker, 0, o.clients)
	defer func() {
		for _, l := range lockers {
			l.close()
		}
	}()
	for range o.clients {
		l, err := newValidateLocker(o)
		if err != nil {
			return nil, fmt.Errorf("redlock client: %w", err)
		}
		lockers = append(lockers, l)
	}
	ttl := contentionTTL(o.cfg.MaxLockTTL.Duration)
	checker := overlap.New()
	stats := &contentionStats{Clients: o.clients, DurationMS: o.duration.Milliseconds()}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		firstErr  error
	)
	end := time.Now().Add(o.duration)
	var wg sync.WaitGroup
	for _, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(end) {
				actx, cancel := context.WithDeadline(ctx, end)
				start := time.Now()
				lock, err := l.Acquire(actx, key, ttl)
				cancel()
				acquired := time.Now()
				if err != nil {
					mu.Lock()
					switch {
					case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
						// the phase ended while waiting: not a refusal, not an error
					case errors.Is(err, redlock.ErrTaken):
						stats.Refusals++
					default:
						stats.Errors++
						if firstErr == nil {
							firstErr = err
						}
					}
					mu.Unlock()
					continue
				}
				// The holder's critical section: a brief piece of work, as real users have.
				time.Sleep(time.Duration(rand.Int64N(int64(time.Millisecond))))
				releaseStart := time.Now()
				checker.Record(key, lock.Token(), acquired, minTime(releaseStart, lock.Deadline()), lock.Fence())
				rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				relErr := lock.Release(rctx)
				rcancel()
				mu.Lock()
				stats.Acquisitions++
				latencies = append(latencies, acquired.Sub(start))
				if relErr != nil {
					stats.Errors++
					if firstErr == nil {
						firstErr = fmt.Errorf("release: %w", relErr)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, v := range checker.Violations() {
		stats.Violations++
		stats.ViolationLog = append(stats.ViolationLog, v.String())
	}
	stats.LatencyP50MS = audit.Millis(percentile(latencies, 0.50))
	stats.LatencyP99MS = audit.Millis(percentile(latencies, 0.99))
	if firstErr != nil {
		fmt.Fprintf(w, "  first error: %v\n", firstErr)
	}
	return stats, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// percentile is the nearest-rank percentile of ds (0 for none).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(rank, len(s)-1))]
}

// validateRandomID names this run's keys: 8 random bytes, hex.
func validateRandomID() string {
	var b [8]byte
	_, _ = cryptorand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// cleanupValidateKeys deletes every key of this run (locks left by a failed check, fencing
// registers, which have no TTL) on every master, as the admin user.
func cleanupValidateKeys(o *validateOptions, prefix string, w io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	deleted := 0
	var errs []string
	for _, ep := range o.cfg.Endpoints {
		opt := lockClientOptions(o.cfg, ep)
		opt.Username, opt.Password = o.cfg.AdminUsername, o.cfg.AdminPassword
		c := redis.NewClient(opt)
		iter := c.Scan(ctx, 0, prefix+":*", 100).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		err := iter.Err()
		if err == nil && len(keys) > 0 {
			var n int64
			n, err = c.Del(ctx, keys...).Result()
			deleted += int(n)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", ep, err))
		}
		_ = c.Close()
	}
	if len(errs) > 0 {
		fmt.Fprintf(w, "\n  cleanup: could not delete the test keys %s:* on %s\n", prefix, strings.Join(errs, "; "))
		return
	}
	fmt.Fprintf(w, "\n  cleanup: deleted %d test key(s) %s:* across the masters\n", deleted, prefix)
}
