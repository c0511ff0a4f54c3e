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
	"strings"
	"syscall"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// `lockagent validate` is a thin caller of package validation: flags, output, exit code.

// validateResult is the --json document.
type validateResult = validation.Report

// validateHookKey carries a func(point string) in the context of validateMain: it becomes
// validation.Options.Hook. Tests use it to pause masters at an exact step.
type validateHookKey struct{}

const validateUsage = `Usage: lockagent validate -c agent.json [flags]

Proves a Redlock deployment, in four phases, printing progress as it goes:
  1. audit      every master: independence (distinct run_ids, no replicas, not a replica,
                one server behind every connection to an endpoint), clients without
                credentials refused, every user but the admin with a password and no
                command the server marks @admin/@dangerous (ACL DRYRUN),
                lock users confined to their own key prefixes,
                AOF appendfsync always, no-appendfsync-on-rewrite no, noeviction with an
                explicit maxmemory, last AOF write ok, the restart delay the masters
                publish (redlock-kit:deployment) >= max TTL + drift,
                clock offset and clock rate vs this machine, round trip vs the TTL
  2. behaviour  acquire, exclusion (a second client is refused), release, expiry, extend
                (only by the owner), owner-only release (a stale holder cannot delete
                the new holder's lock), fencing tokens increasing
  3. contention --clients clients compete for --duration; every hold is checked for overlap
  4. audit again: any change since phase 1 is UNSAFE

Settings come from -c agent.json, then LOCKAGENT_* environment variables
(LOCKAGENT_ENDPOINTS, LOCKAGENT_USERNAME, LOCKAGENT_PASSWORD, LOCKAGENT_KEY_PREFIX,
LOCKAGENT_ADMIN_USERNAME, LOCKAGENT_ADMIN_PASSWORD, LOCKAGENT_TLS, LOCKAGENT_CACERT,
LOCKAGENT_MAX_LOCK_TTL, LOCKAGENT_RESTART_DELAY), then flags. With TLS (--tls, or --cacert
FILE, which implies it) the audit also checks that every master serves TLS only (its
plain-text port closed). The audit also checks that the lock users (one per application)
cannot reach each other's keys (ACL DRYRUN as admin). Test keys are named
<key prefix>redlock-kit:validate:<random> and deleted afterwards.

Verdicts: UNSAFE only on evidence that exclusion can break (an unsafe setting read from a
master, two holders at once, a lock still held after its release, fencing tokens not
increasing). A check that fails because masters do not answer (timeouts, refused
connections) is retried a few times, then reported INCONCLUSIVE. A refusal of the
credentials (WRONGPASS, NOPERM) is reported DENIED: fix the password or the ACL. A check
that cannot be made (a command renamed or missing, an admin without ACL rights) is
INCONCLUSIVE, never SAFE. See docs/validation.md.

Exit codes:
  0   SAFE: every phase passed (SAFE, degraded: a minority of masters down, still exclusive)
  1   UNSAFE: evidence that exclusion can break (listed in the report)
  64  usage or configuration error: nothing was checked
  70  validation could not finish (interrupted or internal error): no verdict
  75  INCONCLUSIVE: masters did not answer (in time), even after retries, or a check could
      not be made; nothing showed that exclusion can break, nothing proved it holds
  77  DENIED: a master refused the credentials or the ACL (WRONGPASS, NOPERM); fix them

Flags:
`

// validateOptions is everything validate needs, after the config, env and flags are merged.
type validateOptions struct {
	cfg         *agentconfig.Config
	jsonOut     bool
	logLevel    string
	metricsFile string
	opts        validation.Options
}

// parseValidateFlags merges agent.json, LOCKAGENT_* and flags (flags win when given). It
// returns ok = false with the exit code to end with when validate must not run: help
// asked for (on stdout), or bad flags or settings (one line on stderr).
func parseValidateFlags(args []string, stdout, stderr io.Writer) (*validateOptions, int, bool) {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	// The deployment flags of run and bench (their own help here), merged the same way.
	d := &deploymentFlags{fs: fs}
	var (
		adminUsername, adminPassword string
		restartDelay                 time.Duration
		o                            = &validateOptions{}
	)
	fs.StringVar(&d.configPath, "c", "", "agent config JSON (the module's agent_config output)")
	fs.StringVar(&d.configPath, "config", "", "same as -c")
	fs.BoolVar(&o.jsonOut, "json", false, "print one JSON document on stdout (progress goes to stderr)")
	fs.StringVar(&d.endpoints, "endpoints", "", "masters as host:port,host:port,... (overrides the config)")
	fs.StringVar(&d.username, "username", "", "restricted lock user (overrides the config)")
	fs.StringVar(&d.password, "password", "", "lock user's password (prefer LOCKAGENT_PASSWORD: flags show in ps)")
	fs.StringVar(&d.keyPrefix, "key-prefix", "", "the lock user's key prefix (lock_users); validate's keys go under it")
	fs.StringVar(&adminUsername, "admin-username", "", "admin user for the audit's CONFIG GET/INFO (default \"default\")")
	fs.StringVar(&adminPassword, "admin-password", "", "admin password (prefer LOCKAGENT_ADMIN_PASSWORD)")
	fs.BoolVar(&d.useTLS, "tls", false, "connect with TLS (the config's CA, else the system roots)")
	fs.StringVar(&d.caCert, "cacert", "", "CA certificate file (PEM) the masters are verified against; implies --tls")
	fs.DurationVar(&d.maxTTL, "max-lock-ttl", 0, "largest lock TTL clients use (overrides the config)")
	fs.DurationVar(&restartDelay, "restart-delay", 0, "how long a crashed master stays down (overrides the config)")
	fs.IntVar(&o.opts.Clients, "clients", 8, "contention phase: competing clients")
	fs.DurationVar(&o.opts.Duration, "duration", 3*time.Second, "contention phase: how long the clients compete")
	fs.DurationVar(&o.opts.NodeTimeout, "node-timeout", 0, "Redlock per-master timeout (default: the library's)")
	fs.DurationVar(&o.opts.AuditTimeout, "audit-timeout", audit.DefaultNodeTimeout, "audit: per-master connect/command timeout")
	fs.DurationVar(&o.opts.ClockInterval, "clock-interval", audit.DefaultClockInterval, "audit: time between the two TIME samples of the clock-rate check")
	fs.StringVar(&o.metricsFile, "metrics-file", "", "write the audit's foreign-lock metrics here (Prometheus text format, for node_exporter's textfile collector: PATH ending in .prom in its directory)")
	fs.StringVar(&o.logLevel, "log-level", "", "diagnostics on stderr: debug, info, warn or error (default warn; LOCKAGENT_LOG_LEVEL); debug shows go-redis's own log lines")
	var help strings.Builder
	help.WriteString(validateUsage)
	fs.SetOutput(&help)
	fs.PrintDefaults()
	if code, ok := parseFlags(fs, args, "validate", help.String(), stdout, stderr); !ok {
		return nil, code, false
	}
	if err := o.settings(fs, d, adminUsername, adminPassword, restartDelay); err != nil {
		return nil, usageError(stderr, "validate", err), false
	}
	return o, exitOK, true
}

// settings finishes parseValidateFlags once the flags parsed: it merges and checks the
// configuration into o.cfg.
func (o *validateOptions) settings(fs *flag.FlagSet, d *deploymentFlags, adminUsername, adminPassword string, restartDelay time.Duration) error {
	if o.logLevel == "" {
		o.logLevel = os.Getenv("LOCKAGENT_LOG_LEVEL")
	}
	if _, err := parseLogLevel(o.logLevel); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: validate takes only flags", fs.Arg(0))
	}
	cfg, err := d.overlay()
	if err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "admin-username":
			cfg.AdminUsername = adminUsername
		case "admin-password":
			cfg.AdminPassword = adminPassword
		case "restart-delay":
			cfg.RestartDelay.Duration = restartDelay
		}
	})
	if err := validation.CheckConfig(cfg); err != nil {
		return err
	}
	if o.opts.Clients < 2 {
		return fmt.Errorf("--clients %d: the contention phase needs at least 2 competing clients", o.opts.Clients)
	}
	if o.opts.Duration <= 0 {
		return fmt.Errorf("--duration %v: must be positive, such as 3s", o.opts.Duration)
	}
	if o.opts.NodeTimeout < 0 || o.opts.AuditTimeout <= 0 || o.opts.ClockInterval <= 0 {
		return errors.New("--node-timeout, --audit-timeout and --clock-interval: must be positive durations")
	}
	o.cfg = cfg
	return nil
}

// validateMain is `lockagent validate`. It returns the process exit code.
func validateMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, code, ok := parseValidateFlags(args, stdout, stderr)
	if !ok {
		return code
	}
	// Ctrl-C ends the run early but still deletes the test keys (fence registers have no TTL).
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	level, _ := parseLogLevel(o.logLevel) // checked by parseValidateFlags
	routeRedisLogs(stderr, level)
	o.opts.Progress = stdout
	if o.jsonOut {
		o.opts.Progress = stderr
	}
	if hook, ok := ctx.Value(validateHookKey{}).(func(string)); ok {
		o.opts.Hook = hook
	}
	res, err := validation.Run(ctx, o.cfg, o.opts)
	if errors.Is(err, validation.ErrConfig) {
		return usageError(stderr, "validate", err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "lockagent validate: %v\n", err)
		return validation.ExitFailed
	}
	if o.metricsFile != "" {
		if err := writeAuditMetrics(o.metricsFile, res); err != nil {
			fmt.Fprintf(stderr, "lockagent validate: --metrics-file: %v\n", err)
			return validation.ExitFailed
		}
	}
	if o.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintf(stderr, "lockagent validate: %v\n", err)
			return validation.ExitFailed
		}
	} else {
		res.WriteVerdict(stdout)
	}
	return res.ExitCode()
}
