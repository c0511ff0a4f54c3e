package master

import (
	"strings"
	"testing"
	"time"
)

func TestDefaultMargin(t *testing.T) {
	for ttl, want := range map[time.Duration]time.Duration{
		2 * time.Second:   time.Second,
		30 * time.Second:  time.Second,
		200 * time.Second: 2*time.Second + 102*time.Millisecond,
	} {
		if got := DefaultMargin(ttl); got != want || got < MinMargin(ttl) {
			t.Errorf("DefaultMargin(%s) = %s, want %s (>= MinMargin %s)", ttl, got, want, MinMargin(ttl))
		}
	}
}

func TestLongHold(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		long bool
		want string
	}{
		{spec: Spec{}, long: false},
		{spec: Spec{MaxLockTTL: LongHoldTTL}, long: false},
		{spec: Spec{MaxLockTTL: LongHoldTTL + time.Second}, long: true, want: "restart_delay = 5m4.112s"},
		{spec: Spec{MaxLockTTL: 100000 * time.Hour}, long: true, want: "about 4208.3 days"},
		{spec: Spec{MaxLockTTL: 30 * time.Second, RestartDelay: 3 * time.Hour}, long: true, want: "about 3.0 hours"},
	} {
		_, detail, long := tc.spec.LongHold()
		if long != tc.long || !strings.Contains(detail, tc.want) {
			t.Errorf("LongHold(%+v) = %v, %q; want %v and %q", tc.spec, long, detail, tc.long, tc.want)
		}
	}
}
