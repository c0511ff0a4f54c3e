//go:build linux

package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// monoNow reads CLOCK_MONOTONIC in nanoseconds. On Linux it is one clock for the whole
// system, so holds recorded by different processes can be compared with each other.
func monoNow() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}

// CrossSupported says whether the cross-process scenario can run here.
const CrossSupported = true

// hold sleeps for d with the precision of nanosleep(2), as the critical section of every
// implementation. time.Sleep is not precise enough here: Go's netpoller waits for timers
// in whole milliseconds, so a sub-millisecond wait is rounded up to 1ms whenever a socket
// wakes the process during the sleep (a late reply, a notice from another master), and
// the holds of a Client that still receives anything then last up to 2ms instead of 1ms.
// That would measure the runtime's timer, not the lock. A blocking syscall only costs
// this goroutine's thread.
func hold(d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}

// processUsage is this process's CPU time (user and system, every thread) and its
// voluntary context switches: how often it went to sleep waiting (for a socket, a timer),
// each one a wake-up to come.
func processUsage() (cpu time.Duration, wakeups int64) {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nvcsw
}
