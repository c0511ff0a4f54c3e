//go:build linux

package bench

import "golang.org/x/sys/unix"

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
