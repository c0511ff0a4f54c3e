package validation_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// configFor is what the redlock-cluster module's agent_config output holds for c.
func configFor(c *redistest.Cluster) *agentconfig.Config {
	return &agentconfig.Config{
		Endpoints: c.Addrs(), Username: redistest.LockUser, Password: redistest.LockPassword,
		AdminUsername: "default", AdminPassword: redistest.AdminPassword,
		MaxLockTTL:   agentconfig.Duration{Duration: 10 * time.Second},
		RestartDelay: agentconfig.Duration{Duration: 11 * time.Second},
	}
}

// quick keeps the phases short: the suite checks behaviour, not endurance. NodeTimeout
// replaces the one derived from the 10s TTL (50ms): the tests share a busy machine whose
// fsyncs outlast it, and a verdict of INCONCLUSIVE because a healthy master answered late
// is not what they are about.
var quick = validation.Options{Clients: 4, Duration: time.Second, ClockInterval: 200 * time.Millisecond, NodeTimeout: 250 * time.Millisecond}

// recorder is a TestingT that records what the helpers did with it. Fatalf ends the
// goroutine, as testing.T's does; helpers run in their own goroutine (run).
type recorder struct {
	mu     sync.Mutex
	logs   []string
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}
func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.mu.Lock()
	r.fatal = true
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) run(f func()) {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	<-done
}

func (r *recorder) log() string { return strings.Join(r.logs, "\n") }

// A healthy cluster is SAFE: Validate passes, logs the progress of every phase and the
// verdict, and the dialer opened every connection.
func TestValidateSafe(t *testing.T) {
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	var dials atomic.Int64
	opts := quick
	opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	r := &recorder{}
	var rep *validation.Report
	r.run(func() { rep = validation.ValidateWithOptions(r, configFor(c), opts) })
	if r.fatal || len(r.errors) > 0 {
		t.Fatalf("Validate failed the test: %v\nlog:\n%s", r.errors, r.log())
	}
	if rep.Verdict != validation.VerdictSafe || !rep.Safe || rep.ExitCode() != validation.ExitSafe || rep.Degraded() {
		t.Fatalf("verdict %s (exit %d, degraded %v), want SAFE:\n%s", rep.Verdict, rep.ExitCode(), rep.Degraded(), r.log())
	}
	for _, want := range []string{"[1/4] Audit of every master", "[2/4] Redlock behaviour", "[3/4] Contention", "VERDICT: SAFE"} {
		if !strings.Contains(r.log(), want) {
			t.Errorf("log lacks %q:\n%s", want, r.log())
		}
	}
	if len(rep.Behaviour) != 7 || rep.Contention == nil || rep.Contention.Acquisitions == 0 || rep.Audit == nil || len(rep.Audit.Masters) != 3 {
		t.Errorf("incomplete report: %d behaviour checks, contention %+v, audit %+v", len(rep.Behaviour), rep.Contention, rep.Audit)
	}
	for _, b := range rep.Behaviour {
		if b.Status != validation.StatusOK {
			t.Errorf("behaviour %q: %s %s", b.Name, b.Status, b.Detail)
		}
	}
	if dials.Load() == 0 {
		t.Error("Options.Dialer was never called")
	}
	assertNoValidateKeys(t, c)
}

// Connections that take longer to open than the whole contention phase (a slow TLS
// handshake on a busy machine, a slow network path) cost the phase no attempt: its clients
// open their connections before it starts and keep them across its attempts. Clients that
// dialled inside the phase would see only node timeouts: INCONCLUSIVE.
func TestSlowConnectionsCostTheContentionPhaseNothing(t *testing.T) {
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	opts := quick
	slowDial := opts.Duration + opts.Duration/2 // under go-redis's 2s dial timeout
	opts.AuditTimeout = 3 * slowDial            // it bounds the clients' warm-up
	var slow atomic.Bool
	var slowDials atomic.Int64
	opts.Hook = func(point string) {
		switch point {
		case "contention":
			slow.Store(true)
		case "cleanup":
			slow.Store(false)
		}
	}
	opts.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if slow.Load() {
			slowDials.Add(1)
			t := time.NewTimer(slowDial)
			defer t.Stop()
			select {
			case <-t.C:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	var progress bytes.Buffer
	opts.Progress = &progress
	rep, err := validation.Run(context.Background(), configFor(c), opts)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if rep.Contention == nil || rep.Contention.Status != validation.StatusOK || rep.Contention.Acquisitions == 0 || rep.Contention.Attempts != 1 {
		t.Fatalf("contention %+v, want ok with acquisitions in its first attempt:\n%s", rep.Contention, progress.String())
	}
	if rep.Verdict != validation.VerdictSafe {
		t.Errorf("verdict %s, want SAFE:\n%s", rep.Verdict, progress.String())
	}
	if n := slowDials.Load(); n < int64(opts.Clients*len(c.Masters)) {
		t.Errorf("%d slow dials, want at least one per contention client and master (%d): the fault was not applied", n, opts.Clients*len(c.Masters))
	}
	assertNoValidateKeys(t, c)
}

// appendfsync everysec on one master is UNSAFE: ValidateE returns the report and a
// *VerdictError naming the master and the setting; Validate fails the test.
func TestValidateUnsafeAppendfsync(t *testing.T) {
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	if err := c.Masters[0].Admin().ConfigSet(context.Background(), "appendfsync", "everysec").Err(); err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	opts := quick
	opts.Progress = &progress
	r := &recorder{}
	var (
		rep *validation.Report
		err error
	)
	r.run(func() { rep, err = validation.ValidateWithOptionsE(r, configFor(c), opts) })
	if r.fatal || len(r.errors) > 0 {
		t.Fatalf("ValidateE failed the test itself: %v", r.errors)
	}
	var ve *validation.VerdictError
	if !errors.As(err, &ve) || !validation.IsVerdict(err, validation.VerdictUnsafe) || ve.Report != rep {
		t.Fatalf("err = %v, want a *VerdictError with UNSAFE\nprogress:\n%s", err, progress.String())
	}
	if rep.Verdict != validation.VerdictUnsafe || rep.Safe || rep.ExitCode() != validation.ExitUnsafe {
		t.Fatalf("verdict %s exit %d, want UNSAFE 1", rep.Verdict, rep.ExitCode())
	}
	for _, want := range []string{c.Masters[0].Addr, "appendfsync everysec"} {
		if !strings.Contains(err.Error(), want) || !strings.Contains(strings.Join(rep.Problems, "\n"), want) {
			t.Errorf("error and problems lack %q:\nerror: %v\nproblems: %q", want, err, rep.Problems)
		}
	}
	if !strings.Contains(progress.String(), "[1/4] Audit of every master") {
		t.Errorf("progress went elsewhere than Options.Progress:\n%s", progress.String())
	}

	// Validate fails the test with the same report.
	r = &recorder{}
	opts.Progress = nil
	r.run(func() { validation.ValidateWithOptions(r, configFor(c), opts) })
	if !r.fatal || !strings.Contains(strings.Join(r.errors, "\n"), "VERDICT: UNSAFE") {
		t.Fatalf("Validate did not fail the test with the verdict: fatal=%v errors=%q", r.fatal, r.errors)
	}
	assertNoValidateKeys(t, c)
}

// A configuration validation cannot check is an error wrapping ErrConfig, before any
// master is contacted; the caller's config is not modified.
func TestRunBadConfig(t *testing.T) {
	good := &agentconfig.Config{Endpoints: []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"},
		Password: "p", AdminPassword: "a", MaxLockTTL: agentconfig.Duration{Duration: time.Second}}
	tests := []struct {
		name string
		edit func(c *agentconfig.Config, o *validation.Options)
		want string
	}{
		{"no max_lock_ttl", func(c *agentconfig.Config, _ *validation.Options) { c.MaxLockTTL.Duration = 0 }, "max_lock_ttl"},
		{"no admin password", func(c *agentconfig.Config, _ *validation.Options) { c.AdminPassword = "" }, "admin_password"},
		{"no lock password", func(c *agentconfig.Config, _ *validation.Options) { c.Password = "" }, "password"},
		{"wrong quorum", func(c *agentconfig.Config, _ *validation.Options) { c.Quorum = 3 }, "quorum"},
		{"one client", func(_ *agentconfig.Config, o *validation.Options) { o.Clients = 1 }, "at least 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := *good
			cfg.Endpoints = append([]string(nil), good.Endpoints...)
			opts := validation.Options{}
			tc.edit(&cfg, &opts)
			before := cfg
			rep, err := validation.Run(context.Background(), &cfg, opts)
			if rep != nil || !errors.Is(err, validation.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run = %v, %v; want ErrConfig mentioning %q", rep, err, tc.want)
			}
			if cfg.Username != before.Username || cfg.AdminUsername != before.AdminUsername {
				t.Errorf("Run modified the caller's config: %+v", cfg)
			}
		})
	}
}

// assertNoValidateKeys proves the run cleaned up: no redlock-kit:validate:* key is left.
func assertNoValidateKeys(t *testing.T, c *redistest.Cluster) {
	t.Helper()
	for _, m := range c.Masters {
		keys, err := m.Admin().Keys(context.Background(), "redlock-kit:validate:*").Result()
		if err != nil {
			t.Fatalf("%s: %v", m.Addr, err)
		}
		if len(keys) != 0 {
			t.Errorf("%s: validation left keys behind: %v", m.Addr, keys)
		}
	}
}
