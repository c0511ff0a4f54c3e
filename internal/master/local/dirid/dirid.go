// Package dirid gives a data directory one identity whatever its spelling: a symlink to it, a
// path with "..", a bind mount of it. Two masters must never share a data dir, and a check
// that compares spellings lets a second master in through a symlink.
package dirid

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Key is dir's identity: the device and inode of its deepest existing ancestor (dir itself
// when it exists), symlinks resolved, and the rest of the path below it. Two spellings of one
// directory, existing or still to be created, have the same key; so do a directory and a bind
// mount of it (same device and inode). When nothing of the path can be inspected, the key is
// the cleaned absolute path.
func Key(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = filepath.Clean(dir)
	}
	rest := ""
	for p := abs; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			if dev, ino, ok := devIno(real); ok {
				return fmt.Sprintf("%d:%d:%s", dev, ino, rest)
			}
		}
		if p == filepath.Dir(p) {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// Same reports whether a and b are one directory (see Key).
func Same(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	return Key(a) == Key(b)
}

func devIno(p string) (dev, ino uint64, ok bool) {
	fi, err := os.Stat(p)
	if err != nil {
		return 0, 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return uint64(st.Dev), st.Ino, true //nolint:unconvert // Dev is not uint64 on every platform
}
