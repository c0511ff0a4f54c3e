//go:build linux

package hostlab

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Every name a lab creates starts with hostlab-<pid>-<n> (pid of the process that
// created it). A process that died without Close (a test binary killed by its
// timeout, say) leaves containers, mounts, cgroups and namespaces behind; the next
// New removes exactly those whose creating process no longer exists. Names of live
// processes, and anything not named this way, are never touched.

var staleRE = regexp.MustCompile(`^hostlab-([0-9]+)-([0-9]+)(-|/|$)`)

var reapMu sync.Mutex

func ownerDead(name string) (string, bool) {
	m := staleRE.FindStringSubmatch(name)
	if m == nil {
		return "", false
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil || pid == os.Getpid() {
		return "", false
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		return "", false
	}
	return "hostlab-" + m[1] + "-" + m[2], true
}

// reapStale removes what dead labs left behind. Errors are logged, not returned.
func reapStale(log io.Writer) {
	reapMu.Lock()
	defer reapMu.Unlock()
	if log == nil {
		log = io.Discard
	}
	logf := func(format string, args ...any) { fmt.Fprintf(log, "hostlab: "+format+"\n", args...) }
	roots, _ := detectCgroups()

	// 1. Processes: every process in a dead lab's cgroups.
	for _, root := range []string{roots.v1, roots.v2} {
		if root == "" {
			continue
		}
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if _, dead := ownerDead(e.Name()); !dead || !e.IsDir() {
				continue
			}
			cg := cgroup{roots: roots, rel: e.Name()}
			if err := cg.destroy(15 * time.Second); err != nil {
				logf("stale lab: %v", err)
			} else {
				logf("removed stale cgroup %s and its processes", e.Name())
			}
		}
	}
	// 2. Mounts under a dead lab's work dir (its overlays), deepest first.
	mounts, staleDirs := staleMounts()
	for _, mp := range mounts {
		// The killed nspawn's global lock is named after the root it booted.
		var st unix.Stat_t
		if unix.Stat(mp, &st) == nil {
			_ = os.Remove(fmt.Sprintf("/run/systemd/nspawn/locks/inode-%d:%d", st.Dev, st.Ino))
		}
		if err := unmount(mp); err != nil {
			logf("stale lab: %v", err)
		} else {
			logf("unmounted stale %s", mp)
		}
	}
	// The dead labs' work dirs (their overlays' upper layers), now unmounted.
	for _, d := range staleDirs {
		if err := removeTree(d); err != nil {
			logf("stale lab: %v", err)
		}
	}
	// 3. Network namespaces (veths and bridges go with them).
	entries, _ := os.ReadDir("/run/netns")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, e := range entries {
		if _, dead := ownerDead(e.Name()); dead {
			if err := run(ctx, "", "ip", "netns", "del", e.Name()); err != nil {
				logf("stale lab: %v", err)
			} else {
				logf("removed stale network namespace %s", e.Name())
			}
		}
	}
	// 4. nspawn's propagation dirs.
	entries, _ = os.ReadDir("/run/systemd/nspawn/propagate")
	for _, e := range entries {
		if _, dead := ownerDead(e.Name()); dead {
			_ = os.Remove(filepath.Join("/run/systemd/nspawn/propagate", e.Name()))
		}
	}
}

// staleMounts returns the mount points under dead labs' work dirs, deepest first,
// and those work dirs.
func staleMounts() (mounts, dirs []string) {
	all, err := readMounts()
	if err != nil {
		return nil, nil
	}
	seen := map[string]bool{}
	for _, m := range all {
		mp := m.point
		parts := strings.Split(mp, "/")
		for i, part := range parts {
			// A component exactly hostlab-<pid>-<n> with <pid> dead, and a host's
			// root below it: <work dir>/<host>/root.
			if _, dead := ownerDead(part); dead && staleRE.FindStringSubmatch(part)[3] == "" &&
				len(parts) == i+3 && parts[i+2] == "root" {
				mounts = append(mounts, mp)
				if d := strings.Join(parts[:i+1], "/"); !seen[d] {
					seen[d] = true
					dirs = append(dirs, d)
				}
				break
			}
		}
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
	return mounts, dirs
}
