package audit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

const (
	testTTL          = 10 * time.Second
	testRestartDelay = redistest.KitRestartDelay
)

// startKit starts masters as the kit runs them, the restart delay published.
func startKit(t *testing.T, opts redistest.Options) *redistest.Cluster {
	t.Helper()
	c := redistest.StartKit(t, opts)
	return c
}

// target audits c's masters with the harness credentials, the restart delay they publish,
// and a short clock interval so the suite stays quick.
func target(c *redistest.Cluster) audit.Target {
	return audit.Target{
		Endpoints: c.Addrs(),
		Username:  "default", Password: redistest.AdminPassword,
		LockUsername: redistest.LockUser, LockPassword: redistest.LockPassword,
		MaxLockTTL:    testTTL,
		RestartDelay:  testRestartDelay,
		ClockInterval: 200 * time.Millisecond,
	}
}

func run(t *testing.T, tgt audit.Target) *audit.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := audit.Run(ctx, tgt)
	if err != nil {
		t.Fatalf("audit.Run: %v", err)
	}
	if rep.Safe != (len(rep.Problems) == 0) {
		t.Fatalf("Safe=%v but %d problems: %q", rep.Safe, len(rep.Problems), rep.Problems)
	}
	return rep
}

func TestSafeClusterHasNoProblems(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 5})
	rep := run(t, target(c))
	if !rep.Safe || len(rep.Problems) != 0 {
		t.Fatalf("safe cluster reported unsafe:\n%s", strings.Join(rep.Problems, "\n"))
	}
	if rep.Quorum != 3 || rep.Reachable != 5 || len(rep.Masters) != 5 {
		t.Fatalf("quorum %d reachable %d masters %d; want 3, 5, 5", rep.Quorum, rep.Reachable, len(rep.Masters))
	}
	runIDs := map[string]bool{}
	for i, m := range rep.Masters {
		if m.Endpoint != c.Masters[i].Addr {
			t.Errorf("master %d endpoint %s, want %s (endpoint order)", i, m.Endpoint, c.Masters[i].Addr)
		}
		if !m.Reachable || m.Error != "" || m.Role != "master" || m.ConnectedReplicas != 0 || !m.AOFEnabled ||
			m.AppendFsync != "always" || m.NoAppendfsyncOnRewrite != "no" || m.MaxMemoryPolicy != "noeviction" ||
			m.MaxMemory <= 0 || m.AOFLastWriteStatus != "ok" || m.RunID == "" || m.RTT <= 0 || m.ClockRate <= 0 ||
			!m.LockUserChecked || m.LockUserCanConfig || m.LockUserError != "" || m.LockUserCanEval ||
			m.BusyReplyThreshold != redisconf.BusyReplyThreshold*time.Millisecond ||
			m.FunctionLibrary != audit.FunctionLibraryCurrent || m.FunctionLibraryVersion != redlock.FunctionLibrary().Version {
			t.Errorf("master %s: unexpected audit %+v", m.Endpoint, m)
		}
		runIDs[m.RunID] = true
	}
	if len(runIDs) != 5 {
		t.Errorf("want 5 distinct run_ids, got %d", len(runIDs))
	}
	if len(rep.Warnings) != 0 {
		t.Errorf("safe cluster has warnings:\n%s", strings.Join(rep.Warnings, "\n"))
	}
}

// TestScriptFindings: the audit reports the busy-script threshold, whether the kit's
// function library is loaded and current, and a lock user that may EVAL, each as a
// warning naming the master and the fix; the values are in the report.
func TestScriptFindings(t *testing.T) {
	t.Parallel()
	admin := func(t *testing.T, m *redistest.Master, args ...any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.Admin().Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	tests := []struct {
		name   string
		mutate func(*testing.T, *redistest.Master)
		check  func(audit.Master) bool
		want   []string
	}{
		{"busy-reply-threshold 5000", func(t *testing.T, m *redistest.Master) {
			admin(t, m, "CONFIG", "SET", "busy-reply-threshold", "5000")
		}, func(m audit.Master) bool { return m.BusyReplyThreshold == 5*time.Second },
			[]string{"only after 5s", "CONFIG SET busy-reply-threshold 100"}},
		{"busy-reply-threshold 0", func(t *testing.T, m *redistest.Master) {
			admin(t, m, "CONFIG", "SET", "busy-reply-threshold", "0")
		}, func(m audit.Master) bool { return m.BusyReplyThreshold == 0 }, []string{"BUSY and accepts SCRIPT KILL never"}},
		{"function library missing", func(t *testing.T, m *redistest.Master) {
			admin(t, m, "FUNCTION", "DELETE", redlock.FunctionLibraryName)
		}, func(m audit.Master) bool {
			return m.FunctionLibrary == audit.FunctionLibraryMissing && m.FunctionLibraryVersion == ""
		},
			[]string{"does not have the kit's function library", "lockagent functions"}},
		{"function library of another version", func(t *testing.T, m *redistest.Master) {
			admin(t, m, "FUNCTION", "LOAD", "REPLACE", "#!lua name="+redlock.FunctionLibraryName+
				"\n-- redlock-kit function library, version 0123456789ab: old\nredis.register_function('redlock_x_0', function() return 1 end)")
		}, func(m audit.Master) bool {
			return m.FunctionLibrary == audit.FunctionLibraryStale && m.FunctionLibraryVersion == "0123456789ab"
		},
			[]string{"another version (0123456789ab)", redlock.FunctionLibrary().Version}},
		{"lock user allowed EVAL", func(t *testing.T, m *redistest.Master) {
			admin(t, m, "ACL", "SETUSER", redistest.LockUser, "+eval")
		}, func(m audit.Master) bool { return m.LockUserCanEval }, []string{"lock user run EVAL", "busy loop"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := startKit(t, redistest.Options{Masters: 3})
			m := c.Masters[1]
			tc.mutate(t, m)
			rep := run(t, target(c))
			if !rep.Safe {
				t.Errorf("a script finding made the deployment unsafe:\n%s", strings.Join(rep.Problems, "\n"))
			}
			if !tc.check(rep.Masters[1]) {
				t.Errorf("master %s: audit %+v does not show the change", m.Addr, rep.Masters[1])
			}
			if !hasProblem(rep.Warnings, m.Addr, tc.want) {
				t.Fatalf("no warning naming %q and %q among:\n%s", m.Addr, tc.want, strings.Join(rep.Warnings, "\n"))
			}
			for i, other := range rep.Masters {
				if i != 1 && (other.FunctionLibrary != audit.FunctionLibraryCurrent || other.LockUserCanEval) {
					t.Errorf("untouched master %s: %+v", other.Endpoint, other)
				}
			}
		})
	}
}

// TestLockUserCannotRunABusyScript: the lock user of a kit master is refused EVAL of a
// busy loop (NOPERM) and any function load; the kit's functions are all it can run.
func TestLockUserCannotRunABusyScript(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 1})
	lock := c.Masters[0].LockClient()
	defer lock.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, cmd := range [][]any{
		{"EVAL", "while true do end", "0"},
		{"FUNCTION", "LOAD", "#!lua name=busy\nredis.register_function('busy', function() while true do end end)"},
		{"SCRIPT", "LOAD", "while true do end"},
	} {
		if err := lock.Do(ctx, cmd...).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("lock user %v: %v, want NOPERM", cmd[:2], err)
		}
	}
}

// TestUnsafeMutations breaks one thing at a time on a safe cluster and expects the audit to
// say so, naming the master and the setting.
func TestUnsafeMutations(t *testing.T) {
	t.Parallel()
	admin := func(m *redistest.Master, args ...any) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return m.Admin().Do(ctx, args...).Err()
	}
	configSet := func(name, value string) func(*testing.T, *redistest.Cluster, *audit.Target) string {
		return func(t *testing.T, c *redistest.Cluster, _ *audit.Target) string {
			if err := admin(c.Masters[1], "CONFIG", "SET", name, value); err != nil {
				t.Fatalf("CONFIG SET %s %s: %v", name, value, err)
			}
			return c.Masters[1].Addr
		}
	}
	tests := []struct {
		name    string
		masters int
		// mutate breaks the cluster (or the target) and returns the endpoint the
		// problem must name ("" when the problem is deployment-wide).
		mutate func(*testing.T, *redistest.Cluster, *audit.Target) string
		want   []string // substrings of one problem
	}{
		{name: "appendfsync everysec", mutate: configSet("appendfsync", "everysec"), want: []string{"appendfsync everysec", "always"}},
		{name: "maxmemory-policy allkeys-lru", mutate: configSet("maxmemory-policy", "allkeys-lru"), want: []string{"maxmemory-policy allkeys-lru", "noeviction"}},
		{name: "no-appendfsync-on-rewrite yes", mutate: configSet("no-appendfsync-on-rewrite", "yes"), want: []string{"no-appendfsync-on-rewrite yes"}},
		{name: "appendonly no", mutate: configSet("appendonly", "no"), want: []string{"AOF off", "appendonly yes"}},
		{name: "maxmemory 0", mutate: configSet("maxmemory", "0"), want: []string{"maxmemory 0"}},
		{name: "majority killed", mutate: func(t *testing.T, c *redistest.Cluster, _ *audit.Target) string {
			for _, m := range c.Masters[:2] {
				if err := m.Kill(); err != nil {
					t.Fatal(err)
				}
			}
			return ""
		}, want: []string{"Only 1 of 3 masters are reachable", "quorum of 2"}},
		{name: "same endpoint listed twice", masters: 4, mutate: func(t *testing.T, c *redistest.Cluster, tgt *audit.Target) string {
			tgt.Endpoints = append(tgt.Endpoints, c.Masters[0].Addr)
			return c.Masters[0].Addr
		}, want: []string{"same server", "run_id"}},
		{name: "replicaof another master", mutate: func(t *testing.T, c *redistest.Cluster, _ *audit.Target) string {
			replica, primary := c.Masters[1], c.Masters[0]
			if err := admin(replica, "CONFIG", "SET", "masterauth", redistest.AdminPassword); err != nil {
				t.Fatal(err)
			}
			if err := admin(replica, "REPLICAOF", primary.Host, fmt.Sprint(primary.Port)); err != nil {
				t.Fatal(err)
			}
			return replica.Addr
		}, want: []string{"is a slave of", "REPLICAOF NO ONE"}},
		{name: "restart delay below the TTL", mutate: func(t *testing.T, c *redistest.Cluster, tgt *audit.Target) string {
			tgt.RestartDelay = tgt.MaxLockTTL / 2
			return ""
		}, want: []string{"restart delay 5s is shorter than the max lock TTL 10s"}},
		{name: "restart delay without the drift margin", mutate: func(t *testing.T, c *redistest.Cluster, tgt *audit.Target) string {
			tgt.RestartDelay = tgt.MaxLockTTL
			return ""
		}, want: []string{"restart delay 10s is shorter", "drift margin"}},
		{name: "lock user allowed CONFIG", mutate: func(t *testing.T, c *redistest.Cluster, _ *audit.Target) string {
			if err := admin(c.Masters[2], "ACL", "SETUSER", redistest.LockUser, "+config"); err != nil {
				t.Fatal(err)
			}
			return c.Masters[2].Addr
		}, want: []string{"lock user run CONFIG"}},
		{name: "lock user allowed FLUSHALL and SELECT", mutate: func(t *testing.T, c *redistest.Cluster, _ *audit.Target) string {
			if err := admin(c.Masters[1], "ACL", "SETUSER", redistest.LockUser, "+flushall", "+select"); err != nil {
				t.Fatal(err)
			}
			return c.Masters[1].Addr
		}, want: []string{"user redlock run flushall, select", "ACL SETUSER redlock -@all"}},
		{name: "wrong lock password", mutate: func(t *testing.T, c *redistest.Cluster, tgt *audit.Target) string {
			tgt.LockPassword = "not-the-password"
			return c.Masters[0].Addr
		}, want: []string{"refused the lock user"}},
		{name: "even number of masters", masters: 4, mutate: func(*testing.T, *redistest.Cluster, *audit.Target) string { return "" },
			want: []string{"4 masters, an even count"}},
		{name: "single master", masters: 1, mutate: func(*testing.T, *redistest.Cluster, *audit.Target) string { return "" },
			want: []string{"at least 3 independent masters"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.masters
			if n == 0 {
				n = 3
			}
			c := startKit(t, redistest.Options{Masters: n})
			tgt := target(c)
			endpoint := tc.mutate(t, c, &tgt)
			rep := run(t, tgt)
			if rep.Safe {
				t.Fatalf("audit says safe after %s", tc.name)
			}
			if !hasProblem(rep.Problems, endpoint, tc.want) {
				t.Fatalf("no problem naming %q and %q among:\n%s", endpoint, tc.want, strings.Join(rep.Problems, "\n"))
			}
		})
	}
}

// TestReplicaSeenFromPrimary checks the other half of a replication setup: the primary
// reports its connected replica.
func TestReplicaSeenFromPrimary(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3})
	replica, primary := c.Masters[1], c.Masters[0]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := replica.Admin().ConfigSet(ctx, "masterauth", redistest.AdminPassword).Err(); err != nil {
		t.Fatal(err)
	}
	if err := replica.Admin().Do(ctx, "REPLICAOF", primary.Host, fmt.Sprint(primary.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	// Wait for the link, observed from the primary (behaviour, not a time limit).
	for {
		info, err := primary.Admin().Info(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info, "connected_slaves:1") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("replica never connected: %s", info)
		case <-time.After(50 * time.Millisecond):
		}
	}
	rep := run(t, target(c))
	if rep.Masters[0].ConnectedReplicas != 1 || rep.Masters[1].Role != "slave" || rep.Masters[1].MasterHost != primary.Addr {
		t.Fatalf("replication not reported: %+v / %+v", rep.Masters[0], rep.Masters[1])
	}
	if !hasProblem(rep.Problems, primary.Addr, []string{"1 connected replica"}) {
		t.Fatalf("no problem about the primary's replica:\n%s", strings.Join(rep.Problems, "\n"))
	}
}

// A minority of masters down is what Redlock is built to survive: every lock stays
// exclusive, so the deployment is still safe, with a warning naming the missing master.
func TestMinorityDownIsAWarning(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3})
	if err := c.Masters[2].Kill(); err != nil {
		t.Fatal(err)
	}
	rep := run(t, target(c))
	if !rep.Safe {
		t.Fatalf("one of three masters down made the deployment unsafe:\n%s", strings.Join(rep.Problems, "\n"))
	}
	if !hasProblem(rep.Warnings, c.Masters[2].Addr, []string{"unreachable", "tolerates one fewer failure"}) {
		t.Fatalf("no warning naming the unreachable master:\n%s", strings.Join(rep.Warnings, "\n"))
	}
}

func TestAdminCredentialsRequired(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3})
	tgt := target(c)
	// The lock user may not run CONFIG GET or INFO: an audit with its credentials cannot
	// vouch for the settings, and must say so instead of passing.
	tgt.Username, tgt.Password = redistest.LockUser, redistest.LockPassword
	rep := run(t, tgt)
	if rep.Safe {
		t.Fatal("audit with the restricted lock user's credentials said safe")
	}
	if !hasProblem(rep.Problems, c.Masters[0].Addr, []string{"could not be fully audited", "admin"}) {
		t.Fatalf("no problem about missing admin rights:\n%s", strings.Join(rep.Problems, "\n"))
	}
}

func TestBadTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tgt   audit.Target
		field string
	}{
		{"no endpoints", audit.Target{MaxLockTTL: time.Second}, "endpoints"},
		{"endpoint without port", audit.Target{Endpoints: []string{"127.0.0.1"}, MaxLockTTL: time.Second}, "endpoints"},
		{"no max lock ttl", audit.Target{Endpoints: []string{"127.0.0.1:1"}}, "max_lock_ttl"},
		{"negative restart delay", audit.Target{Endpoints: []string{"127.0.0.1:1"}, MaxLockTTL: time.Second, RestartDelay: -time.Second}, "restart_delay"},
		{"drift factor of 100%", audit.Target{Endpoints: []string{"127.0.0.1:1"}, MaxLockTTL: time.Second, DriftFactor: 1}, "drift factor"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := audit.Run(context.Background(), tc.tgt)
			if !errors.Is(err, audit.ErrBadTarget) || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("err = %v; want ErrBadTarget naming %q", err, tc.field)
			}
		})
	}
}

func hasProblem(problems []string, endpoint string, want []string) bool {
	for _, p := range problems {
		ok := strings.Contains(p, endpoint)
		for _, w := range want {
			ok = ok && strings.Contains(p, w)
		}
		if ok {
			return true
		}
	}
	return false
}
