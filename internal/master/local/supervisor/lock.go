package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// lockDataDir takes the data dir's supervisor lock (flock on supervisor.lock) and writes the
// caller's pid into the file. The kernel drops the lock when the process dies, however it
// dies, so a stale lock can never keep a new supervisor out. The descriptor is close-on-exec:
// redis-server and hooks do not inherit it (or the lock would outlive the supervisor).
// When another process holds the lock, holder is its pid (0 when it could not be read).
func lockDataDir(dataDir string) (lock *os.File, holder int, err error) {
	path := filepath.Join(dataDir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("supervisor: open lock: %w", err)
	}
	// A holder that was killed a moment ago may still hold the lock: its main thread shows
	// as a zombie (not alive, for processAlive) while its other threads are still exiting,
	// and the descriptor table (with the lock) goes only with the last of them. Wait for
	// that (bounded) rather than refuse, as if another supervisor were running.
	for attempt := 0; ; attempt++ {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil || !errors.Is(err, syscall.EWOULDBLOCK) || attempt == 100 {
			break
		}
		if holder := lockHolder(dataDir); holder == 0 || processAlive(holder) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, 0, fmt.Errorf("supervisor: lock %s: %w", path, err)
		}
		// The holder writes its pid right after locking; give it a moment.
		for i := 0; i < 50; i++ {
			if holder = lockHolder(dataDir); holder != 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		return nil, holder, errLocked
	}
	// A failed write must fail the lock: a stale pid left in the file would name the wrong
	// holder (lockHolder) to Stop, Inspect and the refusal of a second supervisor.
	if err = f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("supervisor: write lock %s: %w", path, err)
	}
	return f, 0, nil
}

var errLocked = errors.New("data dir is locked by another supervisor")

// lockHolder returns the pid written in the lock file, 0 when there is none.
func lockHolder(dataDir string) int {
	data, err := os.ReadFile(filepath.Join(dataDir, LockFileName))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0
	}
	return pid
}
