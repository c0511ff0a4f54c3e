package audit

import (
	"strings"
	"testing"
	"time"
)

// TestFindingsFromMeasurements covers findings that a healthy test machine cannot produce
// on a real server (a failed AOF write needs a full disk; clock and latency problems need
// another machine). The measurements are given; the findings are computed as in Run.
func TestFindingsFromMeasurements(t *testing.T) {
	healthy := func(ep string) Master {
		return Master{Endpoint: ep, Reachable: true, Role: "master", RunID: "run-" + ep, AOFEnabled: true,
			AppendFsync: "always", NoAppendfsyncOnRewrite: "no", MaxMemory: 64 << 20, MaxMemoryPolicy: "noeviction",
			AOFLastWriteStatus: "ok", AOFLastBgrewriteStatus: "ok", ClockRate: 1, ClockRateError: 0.0001,
			RTT: 100 * time.Microsecond, audited: true}
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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			masters := []Master{healthy("a:1"), healthy("b:1"), healthy("c:1")}
			if r := newReport(tgt, masters); !r.Safe {
				t.Fatalf("healthy measurements gave problems: %q", r.Problems)
			}
			tc.break_(&masters[1])
			r := newReport(tgt, masters)
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
