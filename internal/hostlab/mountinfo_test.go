//go:build linux

package hostlab

import (
	"slices"
	"testing"
)

// The one mountinfo reader serves the lab's mount listing and the cgroup detection.
func TestReadMounts(t *testing.T) {
	mounts, err := readMounts()
	if err != nil {
		t.Fatal(err)
	}
	var proc *mount
	for i := range mounts {
		if mounts[i].point == "/proc" {
			proc = &mounts[i]
		}
	}
	if proc == nil || proc.fsType != "proc" {
		t.Fatalf("/proc is not read as a proc mount: %+v", proc)
	}
	t.Run("mount points under a dir", func(t *testing.T) {
		if got, err := mountPoints("/proc/"); err != nil || !slices.Contains(got, "/proc") {
			t.Errorf("mountPoints(/proc/) = %v, %v: want /proc in it", got, err)
		}
		// Negative control: a fresh directory has no mount at or under it.
		if got, err := mountPoints(t.TempDir()); err != nil || len(got) != 0 {
			t.Errorf("mountPoints(a fresh dir) = %v, %v: want none", got, err)
		}
	})
	t.Run("escaped mount point", func(t *testing.T) {
		if got := unescapeMount(`/a\040b\134c`); got != `/a b\c` {
			t.Errorf("unescapeMount = %q", got)
		}
		if got := unescapeMount(`/plain`); got != `/plain` {
			t.Errorf("unescapeMount(/plain) = %q", got)
		}
	})
}
