package hold

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

const overlayMagic = 0x794c7630

// DataFS is the type of the filesystem dir is on, as FieldDataFS publishes it. An overlay
// is named by its upper dir, where its writes go (an overlay over tmpfs keeps nothing
// through a reboot either): "overlayfs" only when that cannot be read.
func DataFS(dir string) (string, error) {
	magic, err := fsMagic(dir)
	if err != nil {
		return "", err
	}
	if magic == overlayMagic {
		if upper := overlayUpper(dir); upper != "" {
			if m, err := fsMagic(upper); err == nil && m != overlayMagic {
				magic = m
			}
		}
	}
	if name, ok := fsNames[magic]; ok {
		return name, nil
	}
	return fmt.Sprintf("0x%x", magic), nil
}

func fsMagic(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s (the storage the data dir is on): %w", dir, err)
	}
	return int64(uint32(st.Type)), nil
}

// overlayUpper is the upperdir of the overlay mount dir is on (/proc/self/mountinfo: the
// longest mount point that holds dir), or "".
func overlayUpper(dir string) string {
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	best, upper := "", ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(tail) < 3 || tail[0] != "overlay" {
			continue
		}
		mp := unescapeMount(fields[4])
		if (dir == mp || strings.HasPrefix(dir, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > len(best) {
			best, upper = mp, ""
			for _, o := range strings.Split(tail[2], ",") {
				if v, ok := strings.CutPrefix(o, "upperdir="); ok {
					upper = unescapeMount(v)
				}
			}
		}
	}
	return upper
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
