//go:build !linux

package supervisor

import (
	"fmt"
	"runtime"
)

// Crash needs Linux: it proves the pid through /proc and signals it through a pidfd.
func Crash(dataDir string) (Live, error) {
	return Live{}, fmt.Errorf("supervisor: crash needs Linux (pidfd and /proc); this is %s", runtime.GOOS)
}
