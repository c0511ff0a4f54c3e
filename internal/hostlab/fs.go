//go:build linux

package hostlab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// mountPoints lists the mount points in /proc/self/mountinfo at or under dir,
// deepest first.
func mountPoints(dir string) ([]string, error) {
	mounts, err := readMounts()
	dir = filepath.Clean(dir)
	var out []string
	for _, m := range mounts {
		if m.point == dir || strings.HasPrefix(m.point, dir+"/") {
			out = append(out, m.point)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, err
}

// unmount unmounts dir, retrying a busy mount briefly, then detaching it.
func unmount(dir string) error {
	var err error
	for i := 0; i < 20; i++ {
		err = unix.Unmount(dir, 0)
		if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			return nil // EINVAL: not a mount point (any more)
		}
		if !errors.Is(err, unix.EBUSY) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err2 := unix.Unmount(dir, unix.MNT_DETACH); err2 == nil {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", dir, err)
}

// unmountUnder unmounts every mount at or under dir, deepest first (stacked mounts too).
func unmountUnder(dir string) error {
	var errs []error
	for round := 0; round < 10; round++ {
		mps, err := mountPoints(dir)
		if err != nil {
			return err
		}
		if len(mps) == 0 {
			return errors.Join(errs...)
		}
		errs = errs[:0]
		for _, mp := range mps {
			if err := unmount(mp); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if mps, _ := mountPoints(dir); len(mps) > 0 {
		errs = append(errs, fmt.Errorf("still mounted under %s: %v", dir, mps))
	}
	return errors.Join(errs...)
}

// removeTree is os.RemoveAll that first unmounts anything under path and then
// refuses to descend into another file system, so a mount it could not remove
// (a stray bind of /proc or /dev, say) is never emptied.
func removeTree(path string) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return err
	}
	if err := unmountUnder(path); err != nil {
		return err
	}
	if err := unix.Lstat(path, &st); err != nil {
		return err
	}
	dev := st.Dev
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		var s unix.Stat_t
		if err := unix.Lstat(p, &s); err != nil {
			return err
		}
		if s.Dev != dev {
			return fmt.Errorf("refusing to remove %s: %s is another file system", path, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return os.RemoveAll(path)
}
