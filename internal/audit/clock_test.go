package audit_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

func TestClockSampleOffset(t *testing.T) {
	t.Parallel()
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name    string
		sample  audit.ClockSample
		want    time.Duration
		wantRTT time.Duration
	}{
		{"in step", audit.ClockSample{Sent: base, Received: base.Add(10 * time.Millisecond), Server: base.Add(5 * time.Millisecond)}, 0, 10 * time.Millisecond},
		{"master ahead, read at the midpoint", audit.ClockSample{Sent: base, Received: base.Add(10 * time.Millisecond), Server: base.Add(2*time.Second + 5*time.Millisecond)}, 2 * time.Second, 10 * time.Millisecond},
		{"master behind", audit.ClockSample{Sent: base, Received: base.Add(2 * time.Millisecond), Server: base.Add(-299 * time.Millisecond)}, -300 * time.Millisecond, 2 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.sample.Offset(); got != tc.want {
				t.Errorf("Offset = %v, want %v", got, tc.want)
			}
			if got := tc.sample.RTT(); got != tc.wantRTT {
				t.Errorf("RTT = %v, want %v", got, tc.wantRTT)
			}
		})
	}
}

func TestClockRate(t *testing.T) {
	t.Parallel()
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	sample := func(at, rtt, server time.Duration) audit.ClockSample {
		return audit.ClockSample{Sent: base.Add(at), Received: base.Add(at + rtt), Server: base.Add(server)}
	}
	tests := []struct {
		name          string
		first, second audit.ClockSample
		wantRate      float64
		wantErr       float64
	}{
		{"same rate, offset does not matter", sample(0, time.Millisecond, time.Hour), sample(time.Second, time.Millisecond, time.Hour+time.Second), 1, 0.001002},
		{"master 2% fast", sample(0, 0, 0), sample(time.Second, 0, 1020*time.Millisecond), 1.02, 0.000002},
		{"master 5% slow", sample(0, 0, 0), sample(2*time.Second, 0, 1900*time.Millisecond), 0.95, 0.000001},
		{"master clock stepped back", sample(0, 0, 0), sample(time.Second, 0, -time.Second), -1, 0.000002},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rate, errBound := audit.ClockRate(tc.first, tc.second)
			if math.Abs(rate-tc.wantRate) > 1e-9 || math.Abs(errBound-tc.wantErr) > 1e-9 {
				t.Fatalf("ClockRate = %v ± %v, want %v ± %v", rate, errBound, tc.wantRate, tc.wantErr)
			}
		})
	}
	t.Run("no time elapsed locally", func(t *testing.T) {
		if rate, _ := audit.ClockRate(sample(0, 0, 0), sample(0, 0, time.Second)); !math.IsNaN(rate) {
			t.Fatalf("rate = %v, want NaN", rate)
		}
	})
}

func TestRateOff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		rate, errBound float64
		want           bool
	}{
		{"same rate", 1, 0.0001, false},
		{"within the 1% drift", 1.009, 0, false},
		{"2% fast", 1.02, 0.0001, true},
		{"2% slow", 0.98, 0.0001, true},
		{"beyond drift but explained by the measurement error", 1.012, 0.005, false},
		{"unmeasurable", math.NaN(), 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := audit.RateOff(tc.rate, tc.errBound, 0.01); got != tc.want {
				t.Fatalf("RateOff(%v ± %v) = %v, want %v", tc.rate, tc.errBound, got, tc.want)
			}
		})
	}
}

func TestOffsetTooLarge(t *testing.T) {
	t.Parallel()
	limit := 102 * time.Millisecond // Drift(10s, 1%)
	if got := audit.Drift(10*time.Second, 0.01); got != limit {
		t.Fatalf("Drift(10s, 1%%) = %v, want %v", got, limit)
	}
	tests := []struct {
		name        string
		offset, rtt time.Duration
		want        bool
	}{
		{"in step", 0, time.Millisecond, false},
		{"just inside", 100 * time.Millisecond, 0, false},
		{"ahead by a second", time.Second, time.Millisecond, true},
		{"behind by a second", -time.Second, time.Millisecond, true},
		{"explained by half the round trip", 110 * time.Millisecond, 20 * time.Millisecond, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := audit.OffsetTooLarge(tc.offset, tc.rtt, limit); got != tc.want {
				t.Fatalf("OffsetTooLarge(%v, rtt %v) = %v, want %v", tc.offset, tc.rtt, got, tc.want)
			}
		})
	}
}

// TestClockSkewedMaster runs one real master whose wall clock is 1 hour ahead and 10%
// fast (the harness preloads a clock-skew shim) and expects the audit to report both its
// offset and its rate, and nothing about the correct masters.
func TestClockSkewedMaster(t *testing.T) {
	t.Parallel()
	redistest.RequireClockSkew(t)
	skewed := startKit(t, redistest.Options{Masters: 1, Clock: &redistest.ClockSkew{Offset: time.Hour, Rate: 1.1}})
	normal := startKit(t, redistest.Options{Masters: 2})
	tgt := target(normal)
	tgt.Endpoints = append(tgt.Endpoints, skewed.Masters[0].Addr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := audit.Run(ctx, tgt)
	if err != nil {
		t.Fatal(err)
	}
	addr := skewed.Masters[0].Addr
	if !hasProblem(rep.Problems, addr, []string{"clock is"}) || !hasProblem(rep.Problems, addr, []string{"times this machine's rate"}) {
		t.Fatalf("no clock offset and rate problems for %s:\n%s", addr, strings.Join(rep.Problems, "\n"))
	}
	for _, m := range rep.Masters[:2] {
		if hasProblem(rep.Problems, m.Endpoint, []string{"clock"}) {
			t.Errorf("clock problem reported for the unskewed master %s", m.Endpoint)
		}
	}
}
