//go:build linux

package hostlab

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// mount is one line of /proc/self/mountinfo: what the lab needs of it.
type mount struct {
	point     string // the mount point, unescaped
	fsType    string // e.g. "cgroup2", "overlay"
	superOpts string // the superblock options, comma-separated
}

// readMounts reads /proc/self/mountinfo, the one reader of it here: the lab's own mounts,
// a dead lab's stale ones and the cgroup hierarchies are all found in it.
func readMounts() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// "<id> <parent> <major:minor> <root> <mount point> <options> [<optional>...] -
		// <fs type> <source> <super options>"
		pre, post, _ := strings.Cut(sc.Text(), " - ")
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 {
			continue
		}
		m := mount{point: unescapeMount(pf[4])}
		if len(qf) >= 3 {
			m.fsType, m.superOpts = qf[0], qf[2]
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, ...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
