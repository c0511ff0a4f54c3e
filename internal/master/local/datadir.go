package local

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// DirCreatable reports why dir cannot be a data directory: an existing non-directory at
// the path, or a regular file where a parent directory should be. It does not create
// anything; nil means mkdir has a chance.
func DirCreatable(dir string) error {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return nil
		case err == nil && p == filepath.Clean(dir):
			return fmt.Errorf("%s exists and is not a directory: choose another data_dir or remove the file", p)
		case err == nil:
			return fmt.Errorf("%s is a file, so %s cannot be created under it: choose a data_dir under a directory", p, dir)
		case !os.IsNotExist(err) && !errors.Is(err, syscall.ENOTDIR):
			return fmt.Errorf("cannot inspect %s: %v", p, err)
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// LookPath explains, with the fix, why a command cannot be run.
func LookPath(name string) error {
	if name == "" {
		return fmt.Errorf("the command is empty: give a program name or path")
	}
	if _, err := exec.LookPath(name); err != nil {
		return fmt.Errorf("%q was not found on PATH or is not executable: install it or give its full path", name)
	}
	return nil
}

// prepareDataDir creates dir (0700) and proves it is writable.
func prepareDataDir(dir string) error {
	if err := DirCreatable(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create %s: %v: choose a data_dir under a writable directory", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("cannot restrict %s to mode 0700: %v", dir, err)
	}
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		return fmt.Errorf("%s is not writable: %v: fix its permissions or choose another data_dir", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
