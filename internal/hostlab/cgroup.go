//go:build linux

package hostlab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoots are the hierarchies a container's cgroup is created in: the
// name=systemd v1 hierarchy and the unified one (hybrid machines), or the unified
// hierarchy alone (pure cgroup v2 machines). nspawn and the container's systemd take
// the cgroup the nspawn process starts in as the container's own; two containers
// must never share one.
type cgroupRoots struct {
	v1 string // /sys/fs/cgroup/systemd, or "" on a pure v2 machine
	v2 string // the unified hierarchy, or "" when absent
}

func detectCgroups() (cgroupRoots, error) {
	mounts, err := readMounts()
	if err != nil {
		return cgroupRoots{}, err
	}
	var r cgroupRoots
	for _, m := range mounts {
		switch m.fsType {
		case "cgroup":
			if hasOpt(m.superOpts, "name=systemd") && r.v1 == "" {
				r.v1 = m.point
			}
		case "cgroup2":
			if r.v2 == "" {
				r.v2 = m.point
			}
		}
	}
	if r.v1 == "" && r.v2 == "" {
		return r, errors.New("no name=systemd or cgroup2 hierarchy mounted")
	}
	return r, nil
}

func hasOpt(opts, want string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}

// cgroup is one container's cgroup: the same relative path in each hierarchy.
type cgroup struct {
	roots cgroupRoots
	rel   string // e.g. hostlab-123-1/h1.2
}

func (c cgroup) dirs() []string {
	var out []string
	if c.roots.v1 != "" {
		out = append(out, filepath.Join(c.roots.v1, c.rel))
	}
	if c.roots.v2 != "" {
		out = append(out, filepath.Join(c.roots.v2, c.rel))
	}
	return out
}

// procsFile returns the cgroup.procs paths nspawn's wrapper joins (v1 first).
func (c cgroup) procsFiles() []string {
	var out []string
	for _, d := range c.dirs() {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

func (c cgroup) create() error {
	for _, d := range c.dirs() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create cgroup: %w", err)
		}
	}
	return nil
}

// pids lists every process in the cgroup's subtree, in any of its hierarchies.
func (c cgroup) pids() []int {
	seen := map[int]bool{}
	var out []int
	for _, d := range c.dirs() {
		_ = filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || e.Name() != "cgroup.procs" {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 && !seen[pid] {
					seen[pid] = true
					out = append(out, pid)
				}
			}
			return nil
		})
	}
	return out
}

// kill SIGKILLs every process in the subtree until none is left, then removes the
// directories deepest first.
func (c cgroup) destroy(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if c.roots.v2 != "" { // atomic kill of the whole subtree (Linux >= 5.14)
			_ = os.WriteFile(filepath.Join(c.roots.v2, c.rel, "cgroup.kill"), []byte("1"), 0)
		}
		pids := c.pids()
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: processes %v survive SIGKILL", c.rel, pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var errs []error
	for _, d := range c.dirs() {
		if err := rmdirTree(d, deadline); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// rmdirTree removes an empty cgroup directory tree deepest first (cgroup dirs hold
// only pseudo files, which rmdir ignores). EBUSY right after the last process died
// is retried until the deadline.
func rmdirTree(dir string, deadline time.Time) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if e.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		for {
			err := syscall.Rmdir(d)
			if err == nil || errors.Is(err, syscall.ENOENT) {
				break
			}
			if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
				return fmt.Errorf("remove cgroup %s: %w", d, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}
