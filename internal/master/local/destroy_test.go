package local

import (
	"testing"
	"time"
)

// TestDestroyLockWait: destroy waits for the locks a master granted, never less than the
// supervisor's hold floor allows (a lowered restart_delay) and never less than the measured
// largest TTL.
func TestDestroyLockWait(t *testing.T) {
	now := time.Now()
	const margin = time.Second
	tests := []struct {
		name     string
		delay    time.Duration
		floor    time.Time
		ttl      time.Duration
		measured bool
		want     time.Duration
	}{
		{name: "measured, under the delay", delay: time.Minute, ttl: 20 * time.Second, measured: true, want: 21 * time.Second},
		{name: "measured, capped by the delay", delay: 10 * time.Second, ttl: 45 * time.Second, measured: true, want: 10 * time.Second},
		{name: "measured, no lock", delay: time.Minute, floor: now.Add(time.Minute), measured: true, want: 0},
		{name: "lowered delay: floor raises the cap above the measured TTL", delay: 10 * time.Second,
			floor: now.Add(50 * time.Second), ttl: 45 * time.Second, measured: true, want: 46 * time.Second},
		{name: "lowered delay, not measured: the floor", delay: 10 * time.Second, floor: now.Add(50 * time.Second),
			want: 50 * time.Second},
		{name: "not measured, floor passed: the delay", delay: 10 * time.Second, floor: now.Add(-time.Minute), want: 10 * time.Second},
		{name: "not measured, no state: the delay", delay: 10 * time.Second, want: 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := destroyLockWait(now, tt.delay, tt.floor, tt.ttl, margin, tt.measured); got != tt.want {
				t.Fatalf("destroyLockWait = %v, want %v", got, tt.want)
			}
		})
	}
}
