//go:build linux

package supervisor

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Crash kills the redis-server of the master in dataDir with SIGKILL, the way a crash would,
// for fault drills: its supervisor then holds it down for the restart delay and restarts it.
//
// It signals only the pid the data dir's state names now, after proving from /proc that it
// is a redis-server of that data dir (working dir and binary), through a pidfd opened before
// the proof, so a pid recycled for another process in between is never signalled. A pid
// copied from an older `terraform output` is never used: after a supervised restart the
// master has a new one. It refuses when no supervisor runs for the data dir (nothing would
// restart the master) or when no redis-server of it runs (held down already). It returns
// what it found, with RedisPID the server it killed.
func Crash(dataDir string) (Live, error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return Live{}, fmt.Errorf("supervisor: data dir %q: %w", dataDir, err)
	}
	live, err := Inspect(dir)
	if err != nil {
		return live, fmt.Errorf("supervisor: no master in %s: %w", dir, err)
	}
	if !live.SupervisorAlive {
		return live, fmt.Errorf("supervisor: no supervisor runs for %s: a killed master would not be restarted", dir)
	}
	if live.Status == StatusHolding || !live.RedisAlive {
		return live, fmt.Errorf("supervisor: no redis-server of %s runs (status %q): the master is down already", dir, live.Status)
	}
	c, err := LoadConfig(dir)
	if err != nil {
		return live, err
	}
	fd, err := unix.PidfdOpen(live.RedisPID, 0)
	if err != nil {
		return live, fmt.Errorf("supervisor: redis-server pid %d of %s: %w", live.RedisPID, dir, err)
	}
	defer unix.Close(fd)
	// The pidfd refers to the process that had the pid when it was opened: proven now, it
	// is signalled below even if the pid is reused meanwhile (then the signal fails instead).
	if !isRedisProcess(live.RedisPID, c) {
		return live, fmt.Errorf("supervisor: pid %d is no longer a redis-server of %s: not signalled", live.RedisPID, dir)
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return live, fmt.Errorf("supervisor: redis-server pid %d of %s exited before the signal", live.RedisPID, dir)
		}
		return live, fmt.Errorf("supervisor: SIGKILL to redis-server pid %d: %w", live.RedisPID, err)
	}
	return live, nil
}
