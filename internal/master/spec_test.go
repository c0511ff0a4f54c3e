package master

import (
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
