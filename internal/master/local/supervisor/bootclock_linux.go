//go:build linux

package supervisor

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// bootClockNS reads CLOCK_BOOTTIME: the clock holds are timed by, as the host gate does. It
// counts across suspend and never steps, unlike the wall clock.
func bootClockNS() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0, fmt.Errorf("read CLOCK_BOOTTIME: %w", err)
	}
	return ts.Sec*1_000_000_000 + ts.Nsec, nil
}
