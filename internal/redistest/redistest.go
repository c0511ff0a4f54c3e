// Package redistest starts real redis-server masters for tests: internal/localmasters, with
// the cluster stopped in t.Cleanup and a missing capability turned into a skip that says why.
//
// Each master runs with the deployment's safe configuration (internal/redisconf: AOF
// appendfsync always, noeviction, admin password, restricted lock user, the kit's function
// library loaded at every start) in its own temp dir on a free loopback port. A test can
// SIGKILL, SIGSTOP/SIGCONT, restart and cleanly stop any master. The names below are
// internal/localmasters' own (aliases), so a test and the bench share one implementation.
package redistest

import (
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/localmasters"
)

// Options configure a cluster (localmasters.Options).
type Options = localmasters.Options

// Cluster is a set of independent masters (localmasters.Cluster).
type Cluster = localmasters.Cluster

// Master is one redis-server process and its data dir (localmasters.Master).
type Master = localmasters.Master

// ClockSkew makes a master's wall clock wrong (localmasters.ClockSkew).
type ClockSkew = localmasters.ClockSkew

// Credentials every harness master shares (see localmasters).
const (
	AdminPassword = localmasters.AdminPassword
	LockUser      = localmasters.LockUser
	LockPassword  = localmasters.LockPassword
	EvalUser      = localmasters.EvalUser
	EvalPassword  = localmasters.EvalPassword
	// The monitoring user of a cluster started with Options.Monitor.
	MonitorUser     = localmasters.MonitorUser
	MonitorPassword = localmasters.MonitorPassword
)

// Start starts opts.Masters masters for a test and stops them all in t.Cleanup.
// It skips nothing: a missing redis-server fails the test with the fix.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	c, err := localmasters.New(opts)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("redistest: close: %v", err)
		}
	})
	return c
}

// New starts a cluster outside a test's cleanup. The caller must Close it.
func New(opts Options) (*Cluster, error) { return localmasters.New(opts) }

// FreePort returns a loopback port nothing listens on now.
func FreePort(host string) (int, error) { return localmasters.FreePort(host) }

// Loopback returns a loopback address no other test on this machine uses until t ends
// (localmasters.ClaimLoopback): a process a test restarts on the same port, or a port a test
// expects to stay closed, is safe there from other tests' processes.
func Loopback(t testing.TB) string {
	t.Helper()
	claim, err := localmasters.ClaimLoopback()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() { _ = claim.Release() })
	return claim.Host
}

// IsPlainTextRefused reports whether err is a TLS-only master refusing a plain connection.
func IsPlainTextRefused(err error) bool { return localmasters.IsPlainTextRefused(err) }

// ClockSkewLibrary builds (once) the LD_PRELOAD shim that skews a process's wall clock and
// returns its path (localmasters.ClockSkewLibrary).
func ClockSkewLibrary() (string, error) { return localmasters.ClockSkewLibrary() }

// RequireClockSkew skips the test when clock-skewed masters cannot be started here (no C
// compiler to build the shim), saying why.
func RequireClockSkew(t testing.TB) {
	t.Helper()
	if err := localmasters.ClockSkewAvailable(); err != nil {
		t.Skipf("clock skew unavailable: %v", err)
	}
}
