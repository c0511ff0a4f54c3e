package supervisor

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// writeFileAtomic replaces path with data so that a reader sees the old or the new content,
// never a torn one, and so that the new content survives a power loss once this returns:
// write a temp file in the same dir, fsync it, rename it over path, fsync the dir.
func writeFileAtomic(path string, data []byte) error {
	return replaceFile(path, data, 0o600, true)
}

// replaceFile writes data to a temp file in path's dir with mode and renames it over path, so
// that a reader sees the old or the new content, never a torn one. durable also fsyncs the
// file before the rename and the dir after it (writeFileAtomic); without it the new content
// may be lost in a power loss (fine for what is rewritten every second anyway, the metrics).
func replaceFile(path string, data []byte, mode os.FileMode, durable bool) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if durable {
		if err := tmp.Sync(); err != nil {
			tmp.Close()
			return err
		}
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if !durable {
		return nil
	}
	return syncDir(dir)
}

// syncDir makes a create, rename or remove in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// writeCleanMarker records that the master stopped cleanly (its AOF is fsynced), durably:
// a marker that could vanish in a power loss would only cost a needless hold, but one that
// appears without a clean stop would skip a needed one, so it is written only after the
// server's exit proved a durable shutdown (durableExit). It names the machine, boot, AOF
// files, server log and data dir that wrote it ("v4 <machine-id> <boot-id> <pid> <AOF
// digest> <log identity> <data dir>"): a marker copied with an image, a snapshot or a dir
// counts nowhere else, nor over AOF files restored from a backup or replaced since, nor after
// a server started with the master's config since (by hand, with --appendonly no or another
// dir: it logs to the config's logfile as it starts, see logIdentity).
//
// It also names a random nonce, kept outside the data dir too, in the address records' dir
// (on /run: this boot only; cleanNoncePath), which the next start removes: a data dir rolled
// back to a snapshot taken after an earlier clean stop (a volume snapshot restored, the dir
// moved aside and back) brings back that stop's marker with its files, inodes and mtimes
// as they were, but not its nonce.
func writeCleanMarker(dataDir string, pid int) error {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return err
	}
	nonce := hex.EncodeToString(b[:])
	path, err := cleanNoncePath(dataDir)
	if err == nil {
		err = replaceFile(path, []byte(nonce+"\n"), 0o600, false)
	}
	if err != nil {
		return fmt.Errorf("supervisor: write the clean stop's nonce: %w", err)
	}
	body := fmt.Sprintf("v4 %s %s %d %s %s %s %s\n", machineID(), bootID(), pid, aofDigest(dataDir), logIdentity(dataDir), nonce, dataDir)
	if err := writeFileAtomic(filepath.Join(dataDir, CleanMarkerName), []byte(body)); err != nil {
		return fmt.Errorf("supervisor: write clean marker: %w", err)
	}
	return nil
}

// cleanNoncePath is where the clean stop of the master in dataDir keeps its nonce: in its
// address records' dir (created if need be), named by the data dir's path (a snapshot rolled
// back, or a dir moved aside and back, keeps it).
func cleanNoncePath(dataDir string) (string, error) {
	c, err := LoadConfig(dataDir)
	if err != nil {
		return "", err
	}
	clock, err := readClockPair()
	if err != nil {
		return "", err
	}
	dir := addressRecordsDir(c)
	if _, err := ensureAddressRecords(dir, clock); err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(filepath.Clean(c.DataDir)))
	return filepath.Join(dir, ".clean-"+hex.EncodeToString(sum[:8])), nil
}

// logIdentity identifies the server's log file as it is now, "<inode>:<size>" ("-": the
// master's config names no logfile, or there is no config). Every start of a server with
// the master's config appends to it before it serves ("Redis is starting"), whatever else
// the command line changes, unless it also changes the logfile.
func logIdentity(dataDir string) string {
	c, err := LoadConfig(dataDir)
	if err != nil || !configNamesLogFile(c) {
		return "-"
	}
	fi, err := os.Stat(serverLogPath(c))
	if err != nil {
		return "none"
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%d:%d", ino, fi.Size())
}

// machineID is this machine's /etc/machine-id ("unknown" when it has none).
func machineID() string {
	for _, path := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id"} {
		if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			return strings.TrimSpace(string(b))
		}
	}
	return "unknown"
}

// bootID is the kernel's id of this boot.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// markerCounts reports whether the clean marker in dataDir was written on this machine, in
// this boot, for this data dir; why says what is wrong with one that does not count.
func markerCounts(dataDir string) (ok bool, why string) {
	b, err := os.ReadFile(filepath.Join(dataDir, CleanMarkerName))
	if err != nil {
		return false, "no clean marker"
	}
	// "v4 machine boot pid aof log nonce dir"; v3, an earlier version's, has no log identity
	// and no nonce.
	line := strings.TrimSuffix(string(b), "\n")
	f, logID, nonce := strings.SplitN(line, " ", 8), "", ""
	switch {
	case len(f) == 8 && f[0] == "v4":
		logID, nonce, f = f[5], f[6], append(f[:5:5], f[7])
	case strings.HasPrefix(line, "v3 "):
		f = strings.SplitN(line, " ", 6)
	default:
		f = nil
	}
	if len(f) != 6 {
		return false, "the clean marker does not name the machine, boot, AOF and data dir that wrote it"
	}
	switch {
	case f[1] != machineID():
		return false, "the clean marker was written on another machine (a disk image or snapshot)"
	case f[2] != bootID():
		return false, "the clean marker was written in an earlier boot"
	case !samePath(f[5], dataDir):
		return false, "the clean marker was written for another data dir (" + f[5] + ")"
	case f[4] != aofDigest(dataDir):
		return false, "the AOF files changed since the clean stop (a restored backup, a replaced or removed file)"
	case logID != "" && logID != logIdentity(dataDir):
		return false, "a server was started with the master's config since the clean stop (its log changed: " +
			"run by hand, say): it may have granted locks that are not in this data dir"
	case nonce != "" && nonce != cleanNonce(dataDir):
		return false, "the clean marker is not the last clean stop's (the data dir was rolled back to a snapshot, " +
			"or a start since did not remove the marker): the locks granted since that stop are not in these files"
	}
	return true, ""
}

// cleanNonce is the nonce the last clean stop of the master in dataDir kept outside it ("":
// none, or it cannot be read).
func cleanNonce(dataDir string) string {
	path, err := cleanNoncePath(dataDir)
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// aofDigest identifies the AOF files in dataDir as they are now: sha256 of a "name size
// mtime inode" line for each, by name. A clean marker vouches for these files only.
func aofDigest(dataDir string) string {
	dir := filepath.Join(dataDir, "appendonlydir")
	entries, _ := os.ReadDir(dir) // none: the digest of no files (and hasData says no data)
	h := sha256.New()
	for _, e := range entries {
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			fmt.Fprintf(h, "%s unreadable %v\n", e.Name(), err)
			continue
		}
		var ino uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		fmt.Fprintf(h, "%s %d %d %d\n", e.Name(), fi.Size(), fi.ModTime().UnixNano(), ino)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// removeCleanMarker is called right before redis-server starts: from then on the data may
// change, and only a new clean stop may vouch for it. The removal is made durable, or a
// power loss could resurrect the old marker and skip the hold.
func removeCleanMarker(dataDir string) error {
	// The nonce first: a marker that survives without it counts nowhere.
	if path, err := cleanNoncePath(dataDir); err == nil {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("supervisor: remove the clean stop's nonce: %w", err)
		}
	}
	err := os.Remove(filepath.Join(dataDir, CleanMarkerName))
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("supervisor: remove clean marker: %w", err)
	}
	if err := syncDir(dataDir); err != nil {
		return fmt.Errorf("supervisor: sync data dir: %w", err)
	}
	return nil
}

// CleanStop reports whether the master in dataDir was last stopped cleanly (a clean marker
// written on this machine, in this boot, for this dir), so that it may start without a delay.
func CleanStop(dataDir string) bool {
	ok, _ := markerCounts(dataDir)
	return ok
}

// HasData reports whether a redis-server left data (AOF or RDB) in dataDir. redis-server
// opens its AOF before it accepts any client, so a dir without data never served one.
func HasData(dataDir string) bool { return hasData(dataDir) }

// hasData reports whether dataDir holds Redis data that a master would load: then an unclean
// stop must be waited out. A fresh dir (first start) holds none.
func hasData(dataDir string) bool {
	if entries, err := os.ReadDir(filepath.Join(dataDir, "appendonlydir")); err == nil && len(entries) > 0 {
		return true
	}
	for _, name := range []string{"appendonly.aof", "dump.rdb"} {
		if _, err := os.Stat(filepath.Join(dataDir, name)); err == nil {
			return true
		}
	}
	return false
}
