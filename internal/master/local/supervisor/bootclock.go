package supervisor

import (
	"errors"
	"time"
)

// clockPair is one moment on both clocks: now (time.Now, with its monotonic reading) lies
// between the boot clock readings lo and hi (ns), taken right before and after it.
type clockPair struct {
	now    time.Time
	lo, hi int64
}

// readClockPair reads the two clocks close together: a pair whose boot readings lie more
// than maxClockPairWindow apart (the process was descheduled in between) is read again.
func readClockPair() (clockPair, error) {
	var p clockPair
	for range 20 {
		lo, err := bootClockNS()
		if err != nil {
			return p, err
		}
		now := time.Now()
		hi, err := bootClockNS()
		if err != nil {
			return p, err
		}
		p = clockPair{now: now, lo: lo, hi: hi}
		if hi-lo <= int64(maxClockPairWindow) {
			return p, nil
		}
	}
	return p, errors.New("cannot read the boot clock and the monotonic clock together (the machine is too busy)")
}

const maxClockPairWindow = 200 * time.Microsecond

// msAtOrAfter is t on the boot clock in whole ms, never earlier than t.
func (p clockPair) msAtOrAfter(t time.Time) int64 {
	ns := p.hi + int64(t.Sub(p.now)) // t.Sub is monotonic when t came from this process
	return ceilDiv(ns, int64(time.Millisecond))
}

// timeAtOrAfter is the boot clock's ms as a time.Time with a monotonic reading, never
// earlier than that moment.
func (p clockPair) timeAtOrAfter(ms int64) time.Time {
	return p.now.Add(time.Duration(ms*int64(time.Millisecond) - p.lo))
}

// nowMS is the boot clock now, in whole ms, rounded down (a moment not yet later than now).
func (p clockPair) nowMS() int64 { return p.lo / int64(time.Millisecond) }

func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a > 0) == (b > 0) {
		q++
	}
	return q
}
