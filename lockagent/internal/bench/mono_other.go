//go:build !linux

package bench

import (
	"errors"
	"time"
)

// monoNow: the cross-process scenario compares holds of different processes on one
// system-wide monotonic clock, which only Linux guarantees for CLOCK_MONOTONIC.
func monoNow() (int64, error) {
	return 0, errors.New("bench: the cross-process scenario needs Linux (a system-wide CLOCK_MONOTONIC)")
}

// CrossSupported says whether the cross-process scenario can run here.
const CrossSupported = false

// hold sleeps for d, the critical section of every implementation (see mono_linux.go).
func hold(d time.Duration) { time.Sleep(d) }

// processUsage is not measured here (see mono_linux.go).
func processUsage() (time.Duration, int64) { return 0, 0 }
