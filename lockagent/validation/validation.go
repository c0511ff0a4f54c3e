package validation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
)

// Exit codes of `lockagent validate`, one per outcome (Report.ExitCode).
const (
	ExitSafe         = 0  // every phase passed (SAFE, or SAFE degraded)
	ExitUnsafe       = 1  // evidence that exclusion can break: the report says which
	ExitUsage        = 64 // EX_USAGE: bad flags or config, nothing was checked
	ExitFailed       = 70 // EX_SOFTWARE: validation could not finish (interrupted, internal error)
	ExitInconclusive = 75 // EX_TEMPFAIL: masters did not answer (in time), even after retries; run again
	ExitDenied       = 77 // EX_NOPERM: a master refused the credentials or the ACL (WRONGPASS, NOPERM)
)

// Verdict is the outcome of a run. Evidence beats a refusal, which beats ignorance.
type Verdict = string

// Verdicts, strongest first.
const (
	VerdictSafe         Verdict = "SAFE"
	VerdictUnsafe       Verdict = "UNSAFE"
	VerdictDenied       Verdict = "DENIED"
	VerdictInconclusive Verdict = "INCONCLUSIVE"
)

// Defaults of Options.
const (
	DefaultClients  = 8
	DefaultDuration = 3 * time.Second
)

// ErrConfig is wrapped by every error about the configuration or the options: the
// configuration is invalid and nothing was checked (the CLI's exit code 64, ExitUsage).
var ErrConfig = errors.New("validation: invalid configuration, nothing was checked")

// Options tune a run. The zero value is the CLI's defaults.
type Options struct {
	// Clients compete for one key in the contention phase; DefaultClients when zero.
	Clients int
	// Duration of the contention phase; DefaultDuration when zero.
	Duration time.Duration
	// NodeTimeout is the Redlock per-master timeout; zero is the library's default.
	NodeTimeout time.Duration
	// AuditTimeout bounds each audit connection and command; audit's default when zero.
	AuditTimeout time.Duration
	// ClockInterval separates the two TIME samples of the clock-rate check; audit's
	// default when zero.
	ClockInterval time.Duration
	// Dialer, when set, opens every connection to the masters (audit, lock clients,
	// cleanup), for tests that reach them through a network namespace or a tunnel.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// Progress receives the human progress report as the phases run; nil discards it.
	// The verdict itself is not written: see Report.WriteVerdict.
	Progress io.Writer
	// Hook, when set, is called at named points of phases 2 and 3 ("behaviour",
	// "release:probe", "contention", "cleanup", ...): fault-injection tests use it to stop
	// masters at an exact step. Most callers leave it nil.
	Hook func(point string)
}

// validateOptions is everything a run needs, after defaults.
type validateOptions struct {
	cfg           *agentconfig.Config
	clients       int
	duration      time.Duration
	nodeTimeout   time.Duration // Redlock per-node timeout; 0 = the library's default
	auditTimeout  time.Duration
	clockInterval time.Duration
	dialer        func(ctx context.Context, network, addr string) (net.Conn, error)
	// identity checks every lock connection of phases 2 and 3 (set when they start).
	identity *identityWatch
}

// CheckConfig fills cfg's defaults (admin user "default", lock user redlock) and checks
// that it describes a deployment validation can check: endpoints, max_lock_ttl, both
// passwords, a quorum consistent with the endpoints. Its errors wrap ErrConfig.
func CheckConfig(cfg *agentconfig.Config) error {
	if err := checkConfig(cfg); err != nil {
		return configError{err}
	}
	return nil
}

// configError is an error about the configuration: its text is the cause's alone, and it
// matches ErrConfig.
type configError struct{ error }

func (e configError) Is(target error) bool { return target == ErrConfig }
func (e configError) Unwrap() error        { return e.error }

func checkConfig(cfg *agentconfig.Config) error {
	if cfg == nil {
		return errors.New("no configuration")
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.MaxLockTTL.Duration <= 0 {
		return errors.New("max_lock_ttl: not set; give the largest TTL clients use (\"max_lock_ttl\": \"30s\" in agent.json, LOCKAGENT_MAX_LOCK_TTL or --max-lock-ttl)")
	}
	if cfg.AdminUsername == "" {
		cfg.AdminUsername = "default"
	}
	if cfg.Username == "" {
		cfg.Username = redisconf.DefaultLockUser
	}
	if cfg.AdminPassword == "" {
		return errors.New("admin_password: not set; the audit needs the admin user for CONFIG GET and INFO (the lock user is deliberately not allowed): set admin_password in agent.json, LOCKAGENT_ADMIN_PASSWORD or --admin-password")
	}
	if cfg.Password == "" {
		return errors.New("password: the restricted lock user's password is not set; set password in agent.json, LOCKAGENT_PASSWORD (preferred: flags show in ps) or --password")
	}
	if cfg.Quorum != 0 && cfg.Quorum != cfg.QuorumSize() {
		return fmt.Errorf("quorum: agent.json says %d but %d endpoints need a quorum of %d (N/2+1); fix or drop the quorum field", cfg.Quorum, len(cfg.Endpoints), cfg.QuorumSize())
	}
	return nil
}

// resolve applies the defaults of opts and checks them.
func (opts Options) resolve(cfg *agentconfig.Config) (*validateOptions, error) {
	o := &validateOptions{cfg: cfg, clients: opts.Clients, duration: opts.Duration, nodeTimeout: opts.NodeTimeout,
		auditTimeout: opts.AuditTimeout, clockInterval: opts.ClockInterval, dialer: opts.Dialer}
	if o.clients == 0 {
		o.clients = DefaultClients
	}
	if o.duration == 0 {
		o.duration = DefaultDuration
	}
	if o.auditTimeout == 0 {
		o.auditTimeout = audit.DefaultNodeTimeout
	}
	if o.clockInterval == 0 {
		o.clockInterval = audit.DefaultClockInterval
	}
	switch {
	case o.clients < 2:
		return nil, configError{fmt.Errorf("clients %d: the contention phase needs at least 2 competing clients", o.clients)}
	case o.duration < 0:
		return nil, configError{fmt.Errorf("duration %v: must be positive, such as 3s", o.duration)}
	case o.nodeTimeout < 0 || o.auditTimeout < 0 || o.clockInterval < 0:
		return nil, configError{errors.New("node timeout, audit timeout and clock interval: must be positive durations")}
	}
	return o, nil
}

// Report is the outcome of a run: the verdict, the findings that decided it, and each
// phase's results. It is also the JSON document of `lockagent validate --json`.
type Report struct {
	Verdict Verdict `json:"verdict"` // SAFE, UNSAFE, DENIED or INCONCLUSIVE
	Safe    bool    `json:"safe"`
	// Problems are evidence that exclusion can break (UNSAFE).
	Problems []string `json:"problems"`
	// Denied: what the masters refused to the credentials (DENIED unless there is evidence).
	Denied []string `json:"denied"`
	// Inconclusive: what could not be checked because masters did not answer (in time).
	Inconclusive []string `json:"inconclusive"`
	// Warnings: degraded but safe, e.g. a minority of masters down.
	Warnings []string `json:"warnings"`
	// Independence says whether the masters can be independent: "one machine: for trying
	// the kit, not independent" when every endpoint is on one machine (OneMachine).
	Independence string `json:"independence"`
	OneMachine   bool   `json:"one_machine"`
	// Audit is phase 1, per master; AuditAfter is phase 4, the same audit after the
	// contention phase (nil when it did not run). A change in between is a problem.
	Audit      *audit.Report `json:"audit"`
	AuditAfter *audit.Report `json:"audit_after,omitempty"`
	// Behaviour is phase 2, one entry per Redlock property.
	Behaviour []BehaviourCheck `json:"behaviour"`
	// Contention is phase 3 (nil when it did not run).
	Contention *ContentionStats `json:"contention,omitempty"`
}

// add files a finding under the list of its status (statusOK adds nothing).
func (r *Report) add(status checkStatus, finding string) {
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
func (r *Report) decide() {
	switch {
	case len(r.Problems) > 0:
		r.Verdict = VerdictUnsafe
	case len(r.Denied) > 0:
		r.Verdict = VerdictDenied
	case len(r.Inconclusive) > 0:
		r.Verdict = VerdictInconclusive
	default:
		r.Verdict = VerdictSafe
	}
	r.Safe = r.Verdict == VerdictSafe
}

// Degraded reports a SAFE verdict with warnings (a minority of masters down, still
// exclusive): "SAFE, degraded".
func (r *Report) Degraded() bool { return r.Verdict == VerdictSafe && len(r.Warnings) > 0 }

// ExitCode is the exit code `lockagent validate` gives this report.
func (r *Report) ExitCode() int {
	switch r.Verdict {
	case VerdictSafe:
		return ExitSafe
	case VerdictDenied:
		return ExitDenied
	case VerdictInconclusive:
		return ExitInconclusive
	}
	return ExitUnsafe
}

// String is the verdict block the CLI prints last ("VERDICT: ..." and its findings).
func (r *Report) String() string {
	var b strings.Builder
	r.WriteVerdict(&b)
	return strings.TrimSpace(b.String())
}

// Run validates the deployment cfg describes, in three phases (audit of every master,
// Redlock behaviour, contention), writing progress to opts.Progress. cfg is not
// modified. Run returns an error, and no report, only when nothing could be judged: a
// bad configuration (wrapping ErrConfig), or a run that could not finish (ctx ended,
// internal error). Any verdict, SAFE or not, comes back as a report.
func Run(ctx context.Context, cfg *agentconfig.Config, opts Options) (*Report, error) {
	if cfg == nil {
		return nil, configError{errors.New("no configuration")}
	}
	c := *cfg
	c.Endpoints = slices.Clone(cfg.Endpoints)
	if err := checkConfig(&c); err != nil {
		return nil, configError{err}
	}
	o, err := opts.resolve(&c)
	if err != nil {
		return nil, err
	}
	if opts.Hook != nil {
		ctx = context.WithValue(ctx, validateHookKey{}, opts.Hook)
	}
	w := opts.Progress
	if w == nil {
		w = io.Discard
	}
	return runValidate(ctx, o, &lockedWriter{w: w})
}

// lockedWriter serialises progress lines written from concurrent phases.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// runValidate runs the three phases in order, printing progress to w. It returns an
// error only when the run could not finish (ctx ended, internal error): no verdict then.
func runValidate(ctx context.Context, o *validateOptions, w io.Writer) (*Report, error) {
	cfg := o.cfg
	fmt.Fprintf(w, "lockagent validate: %d masters, quorum %d, max lock TTL %v, restart delay in the config %s (a cross-check: the masters' own is read in the audit)\n",
		len(cfg.Endpoints), cfg.QuorumSize(), cfg.MaxLockTTL.Duration, orUnknown(cfg.RestartDelay.Duration))

	res := &Report{Problems: []string{}, Denied: []string{}, Inconclusive: []string{},
		Warnings: []string{}, Behaviour: []BehaviourCheck{}}

	fmt.Fprintf(w, "\n[1/4] Audit of every master\n")
	rep, err := runAudit(ctx, o, w, true)
	if err != nil {
		return nil, err
	}
	res.Audit = rep
	res.OneMachine, res.Independence = rep.OneMachine, rep.Independence
	fmt.Fprintf(w, "  independence: %s\n", rep.Independence)
	res.Warnings = append(res.Warnings, rep.Warnings...)
	fileAudit(res, rep, nil)

	// Phases 2 and 3 use the Redlock library; they cannot run without a quorum.
	if rep.Reachable < rep.Quorum {
		fmt.Fprintf(w, "\n[2/4] Redlock behaviour: skipped (only %d of %d masters reachable, quorum %d)\n", rep.Reachable, len(rep.Masters), rep.Quorum)
		fmt.Fprintf(w, "\n[3/4] Contention: skipped\n\n[4/4] Audit again: skipped\n")
		res.add(statusInconclusive, "Redlock behaviour and contention were not checked: fewer masters are reachable than the quorum.")
		res.decide()
		return res, nil
	}
	if err := runRedlockPhases(ctx, o, w, res); err != nil {
		return nil, err
	}
	if o.identity != nil {
		o.identity.file(res)
	}

	// The deployment must still be what phase 1 saw: a change in between is unsafe.
	fmt.Fprintf(w, "\n[4/4] Audit again, after the contention phase\n")
	after, err := runAudit(ctx, o, w, false)
	if err != nil {
		return nil, err
	}
	res.AuditAfter = after
	changes := audit.Changes(rep, after)
	for _, c := range changes {
		fmt.Fprintf(w, "    - %s\n", c)
		res.add(statusFailed, c)
	}
	if len(changes) == 0 {
		fmt.Fprintf(w, "  no change since phase 1\n")
	}
	fileAudit(res, after, rep)
	res.decide()
	return res, nil
}

// fileAudit files an audit's problems in res: evidence, refusals and what could not be
// checked. Problems already filed from the audit before (same sentence) are not repeated.
func fileAudit(res *Report, rep, before *audit.Report) {
	for _, p := range rep.Problems {
		if before != nil && slices.Contains(before.Problems, p) {
			continue
		}
		switch {
		case slices.Contains(rep.Denied, p):
			res.add(statusDenied, p)
		case slices.Contains(rep.Unknown, p):
			res.add(statusInconclusive, p)
		default:
			res.add(statusFailed, p)
		}
	}
	if before != nil {
		for _, w := range rep.Warnings {
			if !slices.Contains(res.Warnings, w) {
				res.Warnings = append(res.Warnings, w)
			}
		}
	}
}

// auditAttempts bounds the audits of phase 1 while masters answer only partly.
const auditAttempts = 3

// runAudit is phase 1. An audit that could not read some master because it did not answer
// in time (or fewer than a quorum answered) is run again, a few times with a growing
// pause; a refusal (WRONGPASS, NOPERM) is not retried: waiting cannot fix a password.
// A check that could not be made (rename-command, an admin without ACL rights) is not
// retried either. perMaster prints one line per master (phase 1); without it (phase 4)
// the clock-rate interval is shorter.
func runAudit(ctx context.Context, o *validateOptions, w io.Writer, perMaster bool) (*audit.Report, error) {
	var progressMu sync.Mutex // masters finish concurrently
	for attempt := 1; ; attempt++ {
		tgt := auditTarget(o)
		if !perMaster {
			// The audit after the contention phase: a clock step since phase 1 shows in the
			// offset at once; the rate was measured over the full interval in phase 1.
			tgt.ClockInterval = max(o.clockInterval/5, 20*time.Millisecond)
		}
		rep, err := audit.RunWithProgress(ctx, tgt, func(m audit.Master) {
			if !perMaster {
				return
			}
			progressMu.Lock()
			defer progressMu.Unlock()
			fmt.Fprintf(w, "  %s\n", describeMaster(m))
		})
		if err != nil {
			return nil, err
		}
		if len(rep.Unknown) == len(rep.Unchecked) || attempt == auditAttempts {
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
		TLSConfig:     clientTLS(cfg),
		MaxLockTTL:    cfg.MaxLockTTL.Duration,
		RestartDelay:  cfg.RestartDelay.Duration,
		NodeTimeout:   o.auditTimeout,
		ClockInterval: o.clockInterval,
		Dialer:        o.dialer,
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
	if ms := m.BusyReplyThresholdMS(); ms >= 0 {
		line += fmt.Sprintf("  busy-reply-threshold %dms", ms)
	}
	if m.FunctionLibrary != "" {
		line += "  functions " + m.FunctionLibrary
		if m.FunctionLibraryVersion != "" {
			line += " " + m.FunctionLibraryVersion
		}
	}
	if !m.CertNotAfter.IsZero() {
		// Shown on every run, not only within the audit's 30-day warning: after a rotation
		// the operator sees each master's new expiry.
		line += "  tls cert until " + m.CertNotAfter.UTC().Format(time.RFC3339)
	}
	if ms := m.PublishedRestartDelayMS(); ms >= 0 {
		line += fmt.Sprintf("  hold %v (%s)", time.Duration(ms)*time.Millisecond, m.Runtime)
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

// WriteVerdict writes the verdict block: a blank line, "VERDICT: ..." and the findings
// behind it, as `lockagent validate` prints it last.
func (res *Report) WriteVerdict(w io.Writer) {
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
	case VerdictSafe:
		if len(res.Warnings) > 0 {
			fmt.Fprintf(w, "VERDICT: SAFE, degraded (%d warning(s) above)\n", len(res.Warnings))
		} else {
			fmt.Fprintln(w, "VERDICT: SAFE")
		}
		if res.OneMachine {
			fmt.Fprintf(w, "  %s\n", audit.OneMachineNotice)
		}
		return
	case VerdictUnsafe:
		fmt.Fprintf(w, "VERDICT: UNSAFE (%d problem(s))\n", len(res.Problems))
		list("", res.Problems)
	case VerdictDenied:
		fmt.Fprintf(w, "VERDICT: DENIED (%d refusal(s)): a master refused the credentials or the ACL (WRONGPASS, NOPERM), so part of the deployment could not be checked. This is not evidence about exclusion. Fix: the password or user in agent.json (admin_password for the audit, password for the lock user), or the ACL.\n", len(res.Denied))
		list("", res.Denied)
	case VerdictInconclusive:
		fmt.Fprintf(w, "VERDICT: INCONCLUSIVE (%d check(s) could not be completed): masters did not answer (in time), or a check could not be made (a command renamed or missing, an admin without the rights the audit needs). Nothing showed that exclusion can break, and nothing proved it holds. Fix what the list says, or run validate again when every master answers.\n", len(res.Inconclusive))
		list("", res.Inconclusive)
		return
	}
	if res.Verdict != VerdictDenied {
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
		return "not given"
	}
	return d.String()
}
