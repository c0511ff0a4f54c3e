package audit

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

// TestFindingsFromMeasurements covers findings that a healthy test machine cannot produce
// on a real server (a failed AOF write needs a full disk; clock and latency problems need
// another machine). The measurements are given; the findings are computed as in Run.
func TestFindingsFromMeasurements(t *testing.T) {
	t.Parallel()
	healthy := func(ep string) Master {
		return Master{Endpoint: ep, Reachable: true, Role: "master", RunID: "run-" + ep, AOFEnabled: true,
			AppendFsync: "always", NoAppendfsyncOnRewrite: "no", MaxMemory: 64 << 20, MaxMemoryPolicy: "noeviction",
			AOFLastWriteStatus: "ok", AOFLastBgrewriteStatus: "ok", ClockRate: 1, ClockRateError: 0.0001,
			RTT: 100 * time.Microsecond, audited: true,
			// The checks that must be established, established.
			Anonymous: AnonymousRefused, ConnectionRunIDs: []string{"run-" + ep}, usersRead: true,
			PublishedRestartDelay: 11 * time.Second, Runtime: hold.RuntimeLocal, DataFS: "ext2/ext3", deploymentRead: true, continuityRead: true}
	}
	tgt := Target{Endpoints: []string{"a:1", "b:1", "c:1"}, MaxLockTTL: 10 * time.Second}.withDefaults()
	tests := []struct {
		name   string
		break_ func(*Master)
		want   []string // substrings of one finding, besides the endpoint "b:1"
		// warning: the finding costs latency or fault tolerance, not exclusion, and the
		// deployment stays safe.
		warning bool
	}{
		{"aof write failed", func(m *Master) { m.AOFLastWriteStatus = "err" }, []string{"aof_last_write_status err"}, false},
		{"aof rewrite failed", func(m *Master) { m.AOFLastBgrewriteStatus = "err" }, []string{"aof_last_bgrewrite_status err"}, false},
		{"clock an hour ahead", func(m *Master) { m.ClockOffset = time.Hour }, []string{"clock is 1h0m0s away", "slew"}, false},
		{"clock 3% fast", func(m *Master) { m.ClockRate = 1.03 }, []string{"1.0300 times this machine's rate"}, false},
		{"round trip 200ms for a 10s TTL", func(m *Master) { m.RTT = 200 * time.Millisecond }, []string{"round trip is 200ms", "1% of the max lock TTL"}, true},
		{"unreachable", func(m *Master) { m.Reachable, m.Error = false, "connection refused" }, []string{"unreachable", "connection refused"}, true},
		{"data dir on tmpfs", func(m *Master) { m.DataFS = "tmpfs" }, []string{"keeps its data dir on tmpfs", "reboot"}, false},
		{"data dir storage not published", func(m *Master) { m.DataFS = "" }, []string{"does not say what storage its data dir is on"}, true},
		// Fail closed: a check that neither ran nor said why is unknown, never passed.
		{"restart delay never read", func(m *Master) { m.deploymentRead = false }, []string{"check could not be made", "restart delay"}, false},
		{"users never read", func(m *Master) { m.usersRead = false }, []string{"check could not be made", "users were not read"}, false},
		{"a user's rights never asked", func(m *Master) { m.LockUsers = []LockUserACL{{Name: "x", Enabled: true, Passwords: 1}} }, []string{"rights of user x"}, false},
		{"anonymous access never tried", func(m *Master) { m.Anonymous = "" }, []string{"without credentials"}, false},
		{"identity never tried", func(m *Master) { m.ConnectionRunIDs = nil }, []string{"same server"}, false},
		{"restart delay published below the TTL", func(m *Master) { m.PublishedRestartDelay = 5 * time.Second }, []string{"holds it down for 5s"}, false},
		{"a passwordless user", func(m *Master) {
			m.LockUsers = []LockUserACL{{Name: "x", Enabled: true, NoPass: true, DangerousChecked: true}}
		}, []string{"x log in with any password"}, false},
		{"a balancer", func(m *Master) { m.ConnectionRunIDs = []string{"run-b:1", "run-z"} }, []string{"more than one server"}, false},
		{"clients without credentials let in", func(m *Master) { m.Anonymous = AnonymousAllowed }, []string{"without credentials in"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			masters := []Master{healthy("a:1"), healthy("b:1"), healthy("c:1")}
			if r := newReport(context.Background(), tgt, masters); !r.Safe {
				t.Fatalf("healthy measurements gave problems: %q", r.Problems)
			}
			tc.break_(&masters[1])
			r := newReport(context.Background(), tgt, masters)
			findings := r.Problems
			if tc.warning {
				findings = r.Warnings
				if !r.Safe {
					t.Fatalf("a warning made the deployment unsafe: %q", r.Problems)
				}
			} else if r.Safe {
				t.Fatalf("want a problem, got none (warnings %q)", r.Warnings)
			}
			if len(findings) != 1 {
				t.Fatalf("want exactly one finding, got problems %q, warnings %q", r.Problems, r.Warnings)
			}
			p := findings[0]
			for _, w := range append([]string{"b:1"}, tc.want...) {
				if !strings.Contains(p, w) {
					t.Fatalf("problem %q lacks %q", p, w)
				}
			}
		})
	}
}

// TestPublishedDelayAgainstAgentJSON: agent.json's restart_delay is a cross-check of the
// delay the runtime publishes. Published lower, one is stale and the verdict is UNSAFE;
// published higher (a lowered delay whose floor has not lapsed: held longer), a warning.
func TestPublishedDelayAgainstAgentJSON(t *testing.T) {
	t.Parallel()
	tgt := Target{Endpoints: []string{"a:1", "b:1", "c:1"}, MaxLockTTL: 10 * time.Second, RestartDelay: 12 * time.Second}.withDefaults()
	for _, tc := range []struct {
		published time.Duration
		safe      bool
		want      string
	}{
		{published: 12 * time.Second, safe: true},
		{published: 11 * time.Second, safe: false, want: "one of them is stale"},
		{published: 20 * time.Second, safe: true, want: "more than the configuration's 12s"},
	} {
		var masters []Master
		for _, ep := range tgt.Endpoints {
			masters = append(masters, Master{Endpoint: ep, Reachable: true, Role: "master", RunID: "run-" + ep, AOFEnabled: true,
				AppendFsync: "always", NoAppendfsyncOnRewrite: "no", MaxMemory: 64 << 20, MaxMemoryPolicy: "noeviction",
				AOFLastWriteStatus: "ok", AOFLastBgrewriteStatus: "ok", ClockRate: 1, ClockRateError: 0.0001,
				RTT: 100 * time.Microsecond, audited: true, Anonymous: AnonymousRefused, ConnectionRunIDs: []string{"run-" + ep},
				usersRead: true, PublishedRestartDelay: 12 * time.Second, Runtime: hold.RuntimeLocal, DataFS: "ext2/ext3", deploymentRead: true, continuityRead: true})
		}
		masters[1].PublishedRestartDelay = tc.published
		r := newReport(context.Background(), tgt, masters)
		all := strings.Join(append(append([]string(nil), r.Problems...), r.Warnings...), "\n")
		if r.Safe != tc.safe || !strings.Contains(all, tc.want) {
			t.Errorf("published %v, agent.json 12s: safe %v, findings %q; want safe %v and %q", tc.published, r.Safe, all, tc.safe, tc.want)
		}
	}
}
