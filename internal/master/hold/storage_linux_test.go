package hold

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// mount mounts and registers the unmount (detached, so that it also goes when a test fails).
func mount(t *testing.T, source, target, fstype, data string) {
	t.Helper()
	if err := unix.Mount(source, target, fstype, unix.MS_NOSUID|unix.MS_NODEV, data); err != nil {
		t.Fatalf("mount %s on %s: %v", fstype, target, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", target, err)
		}
	})
}

// TestDataFSFollowsAnOverlaysUpperDir: an overlay's writes go to its upper dir, so a data
// dir on an overlay over tmpfs is on tmpfs (a reboot empties it), and one over a disk is on
// that disk. Real mounts; a plain tmpfs is the control.
func TestDataFSFollowsAnOverlaysUpperDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	overlay := func(t *testing.T, upperOn string) string {
		t.Helper()
		for _, d := range []string{"upper", "work"} {
			if err := os.Mkdir(filepath.Join(upperOn, d), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		lower, merged := t.TempDir(), t.TempDir()
		mount(t, "overlay", merged, "overlay", "lowerdir="+lower+",upperdir="+filepath.Join(upperOn, "upper")+",workdir="+filepath.Join(upperOn, "work"))
		data := filepath.Join(merged, "data")
		if err := os.Mkdir(data, 0o700); err != nil {
			t.Fatal(err)
		}
		return data
	}
	disk, err := DataFS(t.TempDir())
	if err != nil || disk == "" || Volatile(disk) {
		t.Skipf("the temp dir is on %q (%v): this test needs it on a disk", disk, err)
	}
	ram := t.TempDir()
	mount(t, "tmpfs", ram, "tmpfs", "size=16m")
	for _, tc := range []struct {
		name, dir, want string
	}{
		{"a tmpfs (the control)", ram, "tmpfs"},
		{"an overlay over tmpfs", overlay(t, ram), "tmpfs"},
		{"an overlay over a disk", overlay(t, t.TempDir()), disk},
	} {
		if got, err := DataFS(tc.dir); err != nil || got != tc.want {
			t.Errorf("%s: DataFS = %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}
