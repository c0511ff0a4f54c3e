package local

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/master"

	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// Destroy stops the master cleanly (AOF fsynced), makes sure no process is left and the port
// is free, and removes the data dir unless m.KeepDataOnDestroy. Removing the data makes the
// master forget the locks it granted, so Destroy then waits until they have expired (kept,
// it waits too: a replacement at the address from another data_dir knows none), with a
// hold recorded in the data dir for as long as the wait is not over; ctx (the delete
// timeout) cutting the wait short is an error. pids are the processes last recorded for the
// master, used only when its data dir is gone.
func Destroy(ctx context.Context, m Master, pids Processes) (warnings []Warning, err error) {
	s := m.Spec
	dir, addr, name, delay := s.DataDir, s.Addr(), s.Name, s.RestartDelay
	// How long the locks this master granted may still be held elsewhere: measured just
	// before the shutdown, after the lock clients were shut out (so none is granted after the
	// measurement), so the wait below is as short as safety allows. A master that cannot be
	// asked (crashed, holding, paused) gets the whole hold. The supervisor's HoldFloor is
	// read first: locks granted under a larger restart_delay than the current one (lowered
	// by an update) may outlive the current delay.
	// The wait is the same when the data dir is kept: the kept AOF keeps the locks for a
	// master started in that dir, but a replacement at the same address from another
	// data_dir (a new dir, empty) would not know them.
	var lockWait time.Duration
	pending := false // an earlier destroy was cut short: its hold is recorded already
	var until time.Time
	if until, pending = destroyPending(dir); pending && !m.KeepDataOnDestroy {
		// An earlier destroy was cut short: nothing ran since, only its hold is left.
		lockWait = time.Until(until)
	} else {
		pending = false
		var floor time.Time
		if st, err := supervisor.ReadState(dir); err == nil {
			floor = st.HoldFloor
		}
		ttl, err := lastLocks(ctx, addr, s.AdminPassword, s.Users(), s.ClientTLS())
		lockWait = destroyLockWait(time.Now(), delay, floor, ttl, s.ClockDriftMargin, err == nil)
	}
	if exists(dir) {
		if err := supervisor.Stop(ctx, dir); err != nil {
			// The supervisor's files may be gone (data_dir removed in part while it ran):
			// the pids recorded for the master are then the only way to reach it.
			byPID := stopByPIDs(ctx, dir, pids.Supervisor, pids.Redis)
			killed := KillLeftovers(dir)
			detail := fmt.Sprintf("Stopping redlock_master %q cleanly failed (%v); killed pids %v.", name, err, killed)
			if byPID != nil {
				detail += fmt.Sprintf(" Stopping it by its recorded pids: %v.", byPID)
			}
			warnings = append(warnings, Warning{"Master did not stop cleanly", detail + " Its AOF may lack the last " +
				"writes: if data_dir is kept, the next start waits out restart_delay."})
		}
	} else if err := stopByPIDs(ctx, dir, pids.Supervisor, pids.Redis); err != nil {
		warnings = append(warnings, Warning{"Master did not stop cleanly", fmt.Sprintf("redlock_master %q: %v.", name, err)})
	}
	if err := waitPortFree(ctx, addr); err != nil {
		return warnings, &Error{Summary: "Port still in use after stopping the master", Detail: fmt.Sprintf("%s: %v.", addr, err)}
	}
	stopped := time.Now()
	validUntil := stopped.Add(lockWait)
	// The supervisor's address record says restart_delay from when the master was last
	// seen; the measurement is shorter: a master of another data_dir at this address (a
	// replacement) then waits only for the locks that may really be held.
	if err := supervisor.ReleaseAddress(dir, addr, validUntil); err != nil {
		warnings = append(warnings, Warning{"Address record not updated", fmt.Sprintf("redlock_master %q: %v. A master "+
			"created at %s from another data_dir waits restart_delay from when this one was last seen.", name, err, addr)})
	}
	if m.KeepDataOnDestroy {
		// The data dir keeps the AOF (and the clean marker): a master started there knows
		// the locks. Another at this address does not: wait until they have expired.
		select {
		case <-time.After(time.Until(validUntil)):
			return warnings, nil
		case <-ctx.Done():
			return warnings, &Error{Summary: "Destroy cut short: the master's locks have not expired",
				Detail: fmt.Sprintf("The delete timeout ended before the locks redlock_master %q granted had expired. The master is "+
					"stopped and data_dir %s is kept; those locks may be valid until %s. Do not start any master at %s from another "+
					"data_dir before that time. Re-run terraform apply or destroy to finish the destroy.",
					name, dir, validUntil.Format(time.RFC3339), addr)}
		}
	}
	if lockWait > 0 {
		// The master forgets every lock it granted. Until they have expired, keep a state in
		// data_dir that makes a master created there wait (supervisor.RecordHold), so that a
		// wait cut short below (delete timeout, terraform killed) is still honoured.
		if !pending {
			if err := forgetData(dir, stopped, validUntil); err != nil {
				return warnings, fieldError("data_dir", "Cannot remove the master's data", fmt.Sprintf("%s: %v.", dir, err))
			}
		}
		// Wait until they have all expired, so that a master started at the same address right
		// after (a replacement) cannot grant them again.
		select {
		case <-time.After(time.Until(validUntil)):
		case <-ctx.Done():
			// An error, not a warning: the caller must keep the master (status "destroying"),
			// so that no replacement is created, which could serve at the same address from
			// another data_dir while these locks are valid.
			return warnings, &Error{Summary: "Destroy cut short: the master's locks have not expired",
				Detail: fmt.Sprintf("The delete timeout ended before the locks redlock_master %q granted had expired. The master is "+
					"stopped and its data removed, but those locks may be valid until %s. data_dir %s is kept with only a %s "+
					"that makes a master created there wait until then; do not start any other master at %s before that time. "+
					"Re-run terraform apply or destroy: it waits until %s (the delete timeout must cover the rest) and finishes "+
					"the destroy.", name, validUntil.Format(time.RFC3339), dir, supervisor.StateFileName, addr,
					validUntil.Format(time.RFC3339))}
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return warnings, fieldError("data_dir", "Cannot remove data_dir", fmt.Sprintf("%s: %v.", dir, err))
	}
	return warnings, nil
}

// destroyLockWait returns how long a destroyed master's locks may still be valid elsewhere,
// counted from now. The cap is the larger of the current restart_delay and what is left of
// the supervisor's HoldFloor (the delay may have been lowered while locks granted under the
// old one are still valid). A measured largest TTL (measured true) lowers it to ttl+margin,
// and to 0 when the master holds no lock at all; an unmeasured one leaves the cap.
func destroyLockWait(now time.Time, delay time.Duration, floor time.Time, ttl, margin time.Duration, measured bool) time.Duration {
	limit := delay
	if !floor.IsZero() {
		limit = max(limit, floor.Sub(now))
	}
	if !measured {
		return limit
	}
	if ttl <= 0 {
		return 0
	}
	return min(limit, ttl+margin)
}

// forgetData removes the master's data from dir but leaves a supervisor.state that holds a
// master started there until validUntil. The hold is recorded before anything is removed.
func forgetData(dir string, stopped, validUntil time.Time) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	why := fmt.Sprintf("destroyed by terraform at %s; locks it granted may be valid until %s",
		stopped.UTC().Format(time.RFC3339Nano), validUntil.UTC().Format(time.RFC3339Nano))
	if err := supervisor.RecordHold(dir, stopped, validUntil, why); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != supervisor.StateFileName {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// lastLocks shuts the lock clients out of the master at addr and then returns the largest
// remaining TTL among its keys (0 when none has one): the longest any lock it granted stays
// valid. Shutting out first (the lock user is disabled and its connections closed) means no
// lock is granted after the measurement, before the shutdown. Keys without a TTL, such as
// fence registers, are not locks and need no wait. Any error means "unknown", and the
// caller waits the whole restart_delay.
func lastLocks(ctx context.Context, addr, password string, users []master.LockUser, tlsConf *tls.Config) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := adminClient(addr, password, tlsConf)
	defer c.Close()
	// "off" refuses new authentications only; CLIENT KILL USER ends the open ones.
	for _, u := range users {
		if err := c.Do(ctx, "ACL", "SETUSER", u.Name, "off").Err(); err != nil {
			return 0, fmt.Errorf("ACL SETUSER %s off: %w", u.Name, err)
		}
	}
	for _, u := range users {
		if err := c.Do(ctx, "CLIENT", "KILL", "USER", u.Name).Err(); err != nil {
			return 0, fmt.Errorf("CLIENT KILL USER %s: %w", u.Name, err)
		}
	}
	var longest time.Duration
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range batch {
				p.PTTL(ctx, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, cmd := range cmds {
			longest = max(longest, cmd.(*redis.DurationCmd).Val())
		}
		batch = batch[:0]
		return nil
	}
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 1000 {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return 0, err
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return longest, nil
}

// stopByPIDs stops a master whose data dir (or the supervisor's files in it) was removed
// under it, by the pids recorded for it: SIGTERM to the supervisor (it shuts redis-server
// down), or to redis-server itself when its supervisor is gone (a clean shutdown too), and
// SIGKILL for whatever is left after a grace period. Only pids that ownedBy proves to be the
// master's are signalled, so a recycled pid is left alone.
func stopByPIDs(ctx context.Context, dir string, supPID, redisPID int) error {
	first := redisPID
	if ownedBy(supPID, dir) {
		first = supPID
	}
	if ownedBy(first, dir) {
		_ = syscall.Kill(first, syscall.SIGTERM)
		_ = syscall.Kill(first, syscall.SIGCONT) // a paused process must wake up to act on it
	}
	grace, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for ownedBy(supPID, dir) || ownedBy(redisPID, dir) {
		select {
		case <-grace.Done():
			var killed []int
			for _, pid := range []int{supPID, redisPID} {
				if ownedBy(pid, dir) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					killed = append(killed, pid)
				}
			}
			return fmt.Errorf("pids %v did not stop on SIGTERM: killed them", killed)
		case <-time.After(pollInterval):
		}
	}
	return nil
}

// ownedBy reports whether pid is alive and belongs to the master in dir: its command line
// names dir (the supervisor) or it runs in dir, removed or not (redis-server).
func ownedBy(pid int, dir string) bool {
	if !ProcessAlive(pid) {
		return false
	}
	if CmdlineHas(pid, dir) {
		return true
	}
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	return err == nil && (cwd == dir || cwd == dir+" (deleted)")
}
