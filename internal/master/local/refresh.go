package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// Observed is what Refresh or Update found.
type Observed struct {
	// Gone: no data dir, or neither supervisor nor redis-server runs. The master no longer
	// exists and should be created again (after its restart delay, if it stopped uncleanly).
	Gone bool
	// DataDirRemoved: the data dir, or the supervisor's files in it, was removed while the
	// supervisor runs. The master must be replaced (Destroy stops it by pid), not started a
	// second time beside it. Nothing else was looked at.
	DataDirRemoved bool
	Status         string // a Status* value
	Processes      Processes
	// Live is what the server reported; nil when it was not asked or did not answer.
	Live *Live
}

// Refresh reports what runs of the master s describes and what its server says. pids are
// the processes last recorded for it, used only when its data dir (or the supervisor's files
// in it) is gone.
func Refresh(ctx context.Context, s master.Spec, pids Processes) (Observed, []Warning) {
	dir, name := s.DataDir, s.Name
	if !exists(dir) {
		if pid := runningByPID(dir, pids); pid != 0 {
			return Observed{DataDirRemoved: true}, []Warning{{"data_dir removed while the master runs",
				fmt.Sprintf("redlock_master %q: data_dir %s was removed, but its process (pid %d) still runs. "+
					"The next apply stops it and creates the master again.", name, dir, pid)}}
		}
		return Observed{Gone: true}, []Warning{{"Master is gone",
			fmt.Sprintf("redlock_master %q: data_dir %s no longer exists; the next apply creates the master again.", name, dir)}}
	}
	st, err := supervisor.Inspect(dir)
	if err == nil {
		_, err = supervisor.LoadConfig(dir)
	}
	if pid := runningByPID(dir, pids); err != nil && pid != 0 {
		// Part of data_dir was removed (the supervisor's files) while the master runs: the
		// same as the whole dir, except the dir is still there.
		return Observed{DataDirRemoved: true}, []Warning{{"data_dir damaged while the master runs",
			fmt.Sprintf("redlock_master %q: the supervisor's files in data_dir %s cannot be read (%v), but the master's "+
				"process (pid %d) still runs. The next apply stops it and creates the master again.", name, dir, err, pid)}}
	}
	if err == nil && !st.SupervisorAlive && !st.RedisAlive {
		if until, ok := destroyPending(dir); ok {
			// Forgetting the master now would let its replacement be created (say at the same
			// address in another data_dir) while those locks are valid.
			return Observed{Status: StatusDestroying}, []Warning{{"Destroy not finished",
				fmt.Sprintf("redlock_master %q: a destroy ended before the locks it granted had expired; they may be valid "+
					"until %s. The next apply or destroy waits until then (set timeouts { delete } long enough) and then "+
					"removes %s.", name, until.Format(time.RFC3339), dir)}}
		}
	}
	if err != nil || !st.SupervisorAlive && !st.RedisAlive {
		return Observed{Gone: true}, []Warning{{"Master is not running",
			fmt.Sprintf("redlock_master %q in %s: neither its supervisor nor redis-server runs; the next apply starts it "+
				"again (after restart_delay if it did not stop cleanly).", name, dir)}}
	}
	if !st.SupervisorAlive {
		// redis-server serves on without supervision (own process group: killing the
		// supervisor does not reach it). Forgetting it would leave it granting locks after a
		// destroy; keep it, with the pid /proc proved, and let the caller replace it.
		obs := Observed{Status: StatusUnsupervised, Processes: Processes{Redis: st.RedisPID}}
		if live, err := readLive(ctx, s.Addr(), s.AdminPassword, s.ClientTLS()); err == nil {
			obs.Live = &live
		}
		return obs, []Warning{{"Master is not supervised",
			fmt.Sprintf("redlock_master %q: redis-server pid %d still serves from %s, but its supervisor (pid %d) is gone, so a "+
				"crash would not be held back. The next apply replaces the master: it stops that redis-server cleanly "+
				"(its AOF stays complete) and starts it again under a new supervisor.", name, st.RedisPID, dir, st.SupervisorPID)}}
	}
	obs := Observed{Status: st.Status, Processes: Processes{Supervisor: st.SupervisorPID}}
	if st.RedisAlive {
		obs.Processes.Redis = st.RedisPID
	}
	if st.Status != supervisor.StatusRunning {
		return obs, nil
	}
	live, err := readLive(ctx, s.Addr(), s.AdminPassword, s.ClientTLS())
	if err != nil {
		return obs, []Warning{{"Cannot query the master",
			fmt.Sprintf("redlock_master %q at %s: %v. Its settings could not be checked for drift.", name, s.Addr(), err)}}
	}
	obs.Live = &live
	obs.Processes.Redis = live.PID
	return obs, nil
}

// destroyPending reports whether dir holds only what a destroy cut short left (a recorded
// hold, no supervisor.json) and that hold has not ended, and until when it lasts.
func destroyPending(dir string) (time.Time, bool) {
	if _, err := supervisor.LoadConfig(dir); !errors.Is(err, os.ErrNotExist) {
		return time.Time{}, false
	}
	if _, err := supervisor.ReadState(dir); err != nil {
		return time.Time{}, false
	}
	return supervisor.HoldUntil(dir, 0)
}

// runningByPID returns the first of the recorded pids that still runs as part of the master
// in dir, or 0.
func runningByPID(dir string, pids Processes) int {
	for _, pid := range []int{pids.Supervisor, pids.Redis} {
		if ownedBy(pid, dir) {
			return pid
		}
	}
	return 0
}
