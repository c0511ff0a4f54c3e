//go:build !linux

package supervisor

import (
	"fmt"
	"runtime"
)

// bootClockNS needs Linux's CLOCK_BOOTTIME; elsewhere a state's times count as from another
// boot (a hold counts from now).
func bootClockNS() (int64, error) {
	return 0, fmt.Errorf("no CLOCK_BOOTTIME on %s", runtime.GOOS)
}
