//go:build !linux

package main

import "errors"

// becomeSubreaper is Linux only: elsewhere lockagent follows the command's process group
// (processes that leave it are not waited for).
func becomeSubreaper() error {
	return errors.New("child subreaper: not supported on this system; only the command's process group is followed")
}

// descendants is not available without /proc: the process group is signalled instead.
func descendants(int) []int { return nil }
