package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
)

// Exit codes of `lockagent validate` (documented in its --help).
const (
	validateExitSafe         = 0  // every phase passed
	validateExitUnsafe       = 1  // evidence that exclusion can break: the report says which
	validateExitUsage        = 64 // EX_USAGE, as for every lockagent command: bad flags or config, nothing was checked
	validateExitFailed       = 70 // EX_SOFTWARE: validation could not finish (interrupted, internal error)
	validateExitInconclusive = 75 // EX_TEMPFAIL: masters did not answer (in time), even after retries; run again
	validateExitDenied       = 77 // EX_NOPERM: a master refused the credentials or the ACL (WRONGPASS, NOPERM)
)

// Verdicts, strongest first: evidence beats a refusal, which beats ignorance.
const (
	verdictSafe         = "SAFE"
	verdictUnsafe       = "UNSAFE"
	verdictDenied       = "DENIED"
	verdictInconclusive = "INCONCLUSIVE"
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

Verdicts: UNSAFE only on evidence that exclusion can break (an unsafe setting read from a
master, two holders at once, a lock still held after its release, fencing tokens not
increasing). A check that fails because masters do not answer (timeouts, refused
connections) is retried a few times, then reported INCONCLUSIVE. A refusal of the
credentials (WRONGPASS, NOPERM) is reported DENIED: fix the password or the ACL.

Exit codes:
  0   SAFE: every phase passed (SAFE, degraded: a minority of masters down, still exclusive)
  1   UNSAFE: evidence that exclusion can break (listed in the report)
  64  usage or configuration error: nothing was checked
  70  validation could not finish (interrupted or internal error): no verdict
  75  INCONCLUSIVE: masters did not answer (in time), even after retries; nothing showed
      that exclusion can break; run again when they answer
  77  DENIED: a master refused the credentials or the ACL (WRONGPASS, NOPERM); fix them

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
	logLevel      string
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
	fs.StringVar(&o.logLevel, "log-level", "", "diagnostics on stderr: debug, info, warn or error (default warn; LOCKAGENT_LOG_LEVEL); debug shows go-redis's own log lines")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.logLevel == "" {
		o.logLevel = os.Getenv("LOCKAGENT_LOG_LEVEL")
	}
	if _, err := parseLogLevel(o.logLevel); err != nil {
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
	Verdict string `json:"verdict"` // SAFE, UNSAFE, DENIED or INCONCLUSIVE
	Safe    bool   `json:"safe"`
	// Problems are evidence that exclusion can break (UNSAFE).
	Problems []string `json:"problems"`
	// Denied: what the masters refused to the credentials (DENIED unless there is evidence).
	Denied []string `json:"denied"`
	// Inconclusive: what could not be checked because masters did not answer (in time).
	Inconclusive []string         `json:"inconclusive"`
	Warnings     []string         `json:"warnings"` // degraded but safe, e.g. a minority of masters down
	Audit        *audit.Report    `json:"audit"`
	Behaviour    []behaviourCheck `json:"behaviour"`
	Contention   *contentionStats `json:"contention,omitempty"`
}

// add files a finding under the list of its status (statusOK adds nothing).
func (r *validateResult) add(status checkStatus, finding string) {
	switch status {
	case statusFailed:
		r.Problems = append(r.Problems, finding)
	case statusDenied:
		r.Denied = append(r.Denied, finding)
	case statusInconclusive:
		r.Inconclusive = append(r.Inconclusive, finding)
	}
}

// decide sets the verdict: evidence first, then refusals, then what is unknown.
func (r *validateResult) decide() {
	switch {
	case len(r.Problems) > 0:
		r.Verdict = verdictUnsafe
	case len(r.Denied) > 0:
		r.Verdict = verdictDenied
	case len(r.Inconclusive) > 0:
		r.Verdict = verdictInconclusive
	default:
		r.Verdict = verdictSafe
	}
	r.Safe = r.Verdict == verdictSafe
}

func (r *validateResult) exitCode() int {
	switch r.Verdict {
	case verdictSafe:
		return validateExitSafe
	case verdictDenied:
		return validateExitDenied
	case verdictInconclusive:
		return validateExitInconclusive
	}
	return validateExitUnsafe
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
	level, _ := parseLogLevel(opts.logLevel) // checked by parseValidateFlags
	routeRedisLogs(stderr, level)
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
	return res.exitCode()
}

// runValidate runs the three phases in order, printing progress to w. It returns an
// error only when the run could not finish (ctx ended, internal error): no verdict then.
func runValidate(ctx context.Context, o *validateOptions, w io.Writer) (*validateResult, error) {
	cfg := o.cfg
	fmt.Fprintf(w, "lockagent validate: %d masters, quorum %d, max lock TTL %v, restart delay %s\n",
		len(cfg.Endpoints), cfg.QuorumSize(), cfg.MaxLockTTL.Duration, orUnknown(cfg.RestartDelay.Duration))

	res := &validateResult{Problems: []string{}, Denied: []string{}, Inconclusive: []string{},
		Warnings: []string{}, Behaviour: []behaviourCheck{}}

	fmt.Fprintf(w, "\n[1/3] Audit of every master\n")
	rep, err := runAudit(ctx, o, w)
	if err != nil {
		return nil, err
	}
	res.Audit = rep
	res.Warnings = append(res.Warnings, rep.Warnings...)
	for _, p := range rep.Problems {
		switch {
		case slices.Contains(rep.Denied, p):
			res.add(statusDenied, p)
		case slices.Contains(rep.Unknown, p):
			res.add(statusInconclusive, p)
		default:
			res.add(statusFailed, p)
		}
	}

	// Phases 2 and 3 use the Redlock library; they cannot run without a quorum.
	if rep.Reachable < rep.Quorum {
		fmt.Fprintf(w, "\n[2/3] Redlock behaviour: skipped (only %d of %d masters reachable, quorum %d)\n", rep.Reachable, len(rep.Masters), rep.Quorum)
		fmt.Fprintf(w, "\n[3/3] Contention: skipped\n")
		res.add(statusInconclusive, "Redlock behaviour and contention were not checked: fewer masters are reachable than the quorum.")
	} else if err := runRedlockPhases(ctx, o, w, res); err != nil {
		return nil, err
	}
	res.decide()
	return res, nil
}

// auditAttempts bounds the audits of phase 1 while masters answer only partly.
const auditAttempts = 3

// runAudit is phase 1. An audit that could not read some master because it did not answer
// in time (or fewer than a quorum answered) is run again, a few times with a growing
// pause; a refusal (WRONGPASS, NOPERM) is not retried: waiting cannot fix a password.
func runAudit(ctx context.Context, o *validateOptions, w io.Writer) (*audit.Report, error) {
	var progressMu sync.Mutex // masters finish concurrently
	for attempt := 1; ; attempt++ {
		rep, err := audit.RunWithProgress(ctx, auditTarget(o), func(m audit.Master) {
			progressMu.Lock()
			defer progressMu.Unlock()
			fmt.Fprintf(w, "  %s\n", describeMaster(m))
		})
		if err != nil {
			return nil, err
		}
		if len(rep.Unknown) == 0 || attempt == auditAttempts {
			printAuditFindings(w, rep)
			return rep, nil
		}
		pause := retryPause(attempt).Round(time.Millisecond)
		fmt.Fprintf(w, "  audit: %d finding(s) unknown (masters did not answer, or not in time); auditing again in %v (attempt %d of %d)\n",
			len(rep.Unknown), pause, attempt+1, auditAttempts)
		if err := sleepCtx(ctx, pause); err != nil {
			return nil, err
		}
	}
}

func printAuditFindings(w io.Writer, rep *audit.Report) {
	if len(rep.Problems) == 0 {
		fmt.Fprintf(w, "  audit: no problems\n")
	} else {
		evidence := len(rep.Problems) - len(rep.Denied) - len(rep.Unknown)
		fmt.Fprintf(w, "  audit: %d problem(s): %d read from the masters, %d denied, %d unknown\n",
			len(rep.Problems), evidence, len(rep.Denied), len(rep.Unknown))
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

// describeMaster is one progress line per audited master. What could not be read is
// printed as unknown, never as the zero value it holds (aof off, maxmemory 0).
func describeMaster(m audit.Master) string {
	if !m.Reachable {
		return fmt.Sprintf("DOWN %s  %s", m.Endpoint, m.Error)
	}
	info, config, clock := m.Known()
	status := "ok  "
	switch {
	case m.ErrorClass == audit.ClassDenied:
		status = "DENY"
	case m.Error != "" || m.LockUserError != "":
		status = "PART"
	}
	if !info && !config && !clock {
		return fmt.Sprintf("%s %s  unknown (%s)", status, m.Endpoint, m.Error)
	}
	line := status + " " + m.Endpoint
	if info {
		line += fmt.Sprintf("  %s  run_id %s", m.Role, shortID(m.RunID))
	} else {
		line += "  role unknown"
	}
	if config {
		line += fmt.Sprintf("  aof %s appendfsync %s  %s maxmemory %s", onOff(m.AOFEnabled), m.AppendFsync, m.MaxMemoryPolicy, formatBytes(m.MaxMemory))
	} else {
		line += "  settings unknown"
	}
	if m.RTT > 0 {
		line += fmt.Sprintf("  rtt %.2fms", audit.Millis(m.RTT))
	}
	if clock {
		line += fmt.Sprintf("  clock %+.2fms rate %.4f", audit.Millis(m.ClockOffset), m.ClockRate)
	} else {
		line += "  clock unknown"
	}
	if info {
		line += fmt.Sprintf("  up %v", m.Uptime)
	}
	if m.Error != "" {
		line += "  (" + m.Error + ")"
	}
	if m.LockUserError != "" {
		line += "  (lock user: " + m.LockUserError + ")"
	}
	return line
}

func printVerdict(w io.Writer, res *validateResult) {
	fmt.Fprintln(w)
	list := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		if title != "" {
			fmt.Fprintf(w, "  %s\n", title)
		}
		for _, p := range items {
			fmt.Fprintf(w, "  - %s\n", p)
		}
	}
	switch res.Verdict {
	case verdictSafe:
		if len(res.Warnings) > 0 {
			fmt.Fprintf(w, "VERDICT: SAFE, degraded (%d warning(s) above)\n", len(res.Warnings))
			return
		}
		fmt.Fprintln(w, "VERDICT: SAFE")
		return
	case verdictUnsafe:
		fmt.Fprintf(w, "VERDICT: UNSAFE (%d problem(s))\n", len(res.Problems))
		list("", res.Problems)
	case verdictDenied:
		fmt.Fprintf(w, "VERDICT: DENIED (%d refusal(s)): a master refused the credentials or the ACL (WRONGPASS, NOPERM), so part of the deployment could not be checked. This is not evidence about exclusion. Fix: the password or user in agent.json (admin_password for the audit, password for the lock user), or the ACL.\n", len(res.Denied))
		list("", res.Denied)
	case verdictInconclusive:
		fmt.Fprintf(w, "VERDICT: INCONCLUSIVE (%d check(s) could not be completed): masters did not answer (in time), even after retries. Nothing showed that exclusion can break, and nothing proved it holds. Run validate again when every master answers.\n", len(res.Inconclusive))
		list("", res.Inconclusive)
		return
	}
	if res.Verdict != verdictDenied {
		list("also denied:", res.Denied)
	}
	list("also inconclusive:", res.Inconclusive)
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
