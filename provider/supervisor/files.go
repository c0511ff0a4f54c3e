package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
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
// server exited 0.
func writeCleanMarker(dataDir string, pid int) error {
	body := fmt.Sprintf("redis-server pid %d stopped cleanly at %s\n", pid, time.Now().UTC().Format(time.RFC3339Nano))
	if err := writeFileAtomic(filepath.Join(dataDir, CleanMarkerName), []byte(body)); err != nil {
		return fmt.Errorf("supervisor: write clean marker: %w", err)
	}
	return nil
}

// removeCleanMarker is called right before redis-server starts: from then on the data may
// change, and only a new clean stop may vouch for it. The removal is made durable, or a
// power loss could resurrect the old marker and skip the hold.
func removeCleanMarker(dataDir string) error {
	err := os.Remove(filepath.Join(dataDir, CleanMarkerName))
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("supervisor: remove clean marker: %w", err)
	}
	if err := syncDir(dataDir); err != nil {
		return fmt.Errorf("supervisor: sync data dir: %w", err)
	}
	return nil
}

// CleanStop reports whether the master in dataDir was last stopped cleanly (the clean marker
// is present), so that it may start without a delay.
func CleanStop(dataDir string) bool {
	_, err := os.Stat(filepath.Join(dataDir, CleanMarkerName))
	return err == nil
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
