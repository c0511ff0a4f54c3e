package local

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// Started is a master Start left running.
type Started struct {
	Port          int // the port it listens on: the one picked when Spec.Port was 0
	SupervisorPID int
	Live          Live
}

// Start creates the data dir, writes the files, spawns the supervisor (supervisorExe, run as
// "supervise <data dir>": the provider binary) and waits until the master answers with the
// AOF on, or until ctx ends (the create timeout). A hold left by an unclean stop is waited
// out. On failure nothing it started is left running.
func Start(ctx context.Context, m Master, supervisorExe string) (started Started, warnings []Warning, err error) {
	s := m.Spec
	dir, bind := s.DataDir, s.Bind
	if err := LookPath(s.ServerBinary); err != nil {
		return started, nil, fieldError("server_binary", "Executable not found", fmt.Sprintf("server_binary: %s.", err))
	}
	// TLS material made in the same apply was unknown at plan time: check it before the
	// master starts, or a certificate for another address would show only as a start that
	// never answers.
	if err := s.CheckTLS(time.Now()); err != nil {
		return started, nil, err
	}
	if err := DirCreatable(dir); err != nil {
		return started, nil, fieldError("data_dir", "data_dir is not usable", fmt.Sprintf("data_dir: %s.", err))
	}
	release, err := claimDataDir(dir, s.Name)
	if err != nil {
		return started, nil, err
	}
	defer release()
	if err := CheckOrphanOwner(dir, s.Name); err != nil {
		return started, nil, err
	}
	if err := takeOverDataDir(ctx, dir); err != nil {
		return started, nil, err
	}
	if s.Port, err = pickPort(dir, bind, s.Port); err != nil {
		return started, nil, err
	}
	m.Spec = s
	addr := s.Addr()

	// From here on the create touches the disk: a failed create removes the data dir it
	// created (nothing runs then: see the spawn failure path). If a redis-server ran there
	// (it may have granted locks before the create gave up), its data goes like in a destroy
	// and a recorded hold stays, so that a master created there later waits for those locks.
	created := !exists(dir)
	defer func() {
		if err != nil && created {
			if w, ok := undoCreate(dir, s.RestartDelay, addr); ok {
				warnings = append(warnings, w)
			}
		}
	}()
	if err := prepareDataDir(dir); err != nil {
		return started, warnings, fieldError("data_dir", "data_dir is not usable", fmt.Sprintf("data_dir: %s.", err))
	}
	if err := writeFiles(m); err != nil {
		return started, warnings, err
	}
	delay := s.RestartDelay
	if until, hold, why := supervisor.HoldReason(dir, delay); hold {
		if deadline, ok := ctx.Deadline(); ok && until.After(deadline) {
			return started, warnings, fieldError("timeouts", "Create timeout shorter than the restart hold",
				fmt.Sprintf("The new master must stay down until %s (%s), after the create timeout: locks granted "+
					"at its address may still be valid on the other masters. Set timeouts { create = \"%s\" } or more.",
					until.Format(time.RFC3339), why, (time.Until(until)+time.Minute).Round(time.Minute)))
		}
		warnings = append(warnings, Warning{"Master held back before its start",
			fmt.Sprintf("redlock_master %q at %s stays down until %s: %s. Locks granted at its address may still be valid "+
				"on the other masters (restart_delay %s); create waited for that.", s.Name, addr, until.Format(time.RFC3339Nano), why, delay)})
	}

	supPID, err := supervisor.Spawn(supervisorExe, []string{"supervise", dir}, dir)
	if err != nil {
		return started, warnings, &Error{Summary: "Cannot start the supervisor", Detail: err.Error()}
	}
	live, err := waitRunning(ctx, dir, addr, s.AdminPassword, s.ClientTLS(), supPID)
	if err != nil {
		// Stop the supervisor spawned here, by its pid: the data dir's files may still name
		// a dead predecessor.
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stopErr := supervisor.StopSupervisor(stopCtx, dir, supPID)
		KillLeftovers(dir, supPID)
		msg := fmt.Sprintf("%v.\n\n%s", err, logTails(dir))
		if stopErr != nil {
			msg += fmt.Sprintf("\n\nStopping it again also failed: %v", stopErr)
		}
		return started, warnings, &Error{Summary: "Master did not start", Detail: msg}
	}
	return Started{Port: s.Port, SupervisorPID: supPID, Live: live}, warnings, nil
}

// takeOverDataDir makes a data dir that held a previous master usable: a previous master of
// the same resource (forgotten because its supervisor died) may have left it. A live
// supervisor means another master owns the dir; a redis-server left without its supervisor
// is stopped cleanly (its AOF is then complete: no hold).
func takeOverDataDir(ctx context.Context, dir string) error {
	if err := CheckDataDirFree(dir); err != nil {
		return err
	}
	st, err := supervisor.Inspect(dir)
	if err != nil {
		return nil
	}
	if st.SupervisorAlive {
		// One that started since the check.
		return fieldError("data_dir", "data_dir is in use",
			fmt.Sprintf("data_dir %s: a supervisor (pid %d) started there during the create: another master uses it.", dir, st.SupervisorPID))
	}
	if st.RedisAlive {
		if err := supervisor.Stop(ctx, dir); err != nil {
			return fieldError("data_dir", "Cannot stop the unsupervised master in data_dir",
				fmt.Sprintf("redis-server pid %d still runs from %s without its supervisor, and stopping it failed: %v. "+
					"Stop it (redis-cli -a <admin password> SHUTDOWN) and apply again.", st.RedisPID, dir, err))
		}
	}
	return nil
}

// pickPort returns the port to listen on: port when set (it must be free), else the port a
// previous master in dir used when it is free, so that clients' endpoint lists stay valid,
// else any free port.
func pickPort(dir, bind string, port int) (int, error) {
	if port != 0 {
		if err := CheckPortFree(bind, port); err != nil {
			return 0, err
		}
		return port, nil
	}
	if prev, err := supervisor.LoadConfig(dir); err == nil {
		if host, p := splitAddr(prev.Addr); host == bind && p > 0 && portFree(bind, p) == nil {
			return p, nil
		}
	}
	// A free port where another data dir's master served lately would hold the start until
	// its locks may have expired (the address records): pick another when there is one.
	var p int
	for range 20 {
		var err error
		if p, err = FreePort(bind); err != nil {
			return 0, fieldError("bind", "Cannot pick a free port", fmt.Sprintf("bind %s: %v.", bind, err))
		}
		if !supervisor.AddressPending(dir, net.JoinHostPort(bind, strconv.Itoa(p))) {
			break
		}
	}
	return p, nil
}

// undoCreate removes the data dir a failed Start created. A server that left no data never
// accepted a client (it opens its AOF first); one that did may have granted locks, so its
// data goes like in a destroy, with a hold recorded. The warning says what stays.
func undoCreate(dir string, delay time.Duration, addr string) (Warning, bool) {
	st, err := supervisor.ReadState(dir)
	if err != nil || st.RedisPID == 0 && st.LastAlive.IsZero() || !supervisor.HasData(dir) {
		_ = os.RemoveAll(dir)
		return Warning{}, false
	}
	now := time.Now()
	until := now.Add(destroyLockWait(now, delay, st.HoldFloor, 0, 0, false))
	if err := forgetData(dir, now, until); err != nil {
		return Warning{"data_dir kept", fmt.Sprintf("A redis-server ran in %s before the create failed, and its data "+
			"could not be removed with a hold recorded (%v): the directory is left as it is.", dir, err)}, true
	}
	return Warning{"data_dir kept with a restart hold",
		fmt.Sprintf("A redis-server ran in %s before the create failed and may have granted locks, valid until %s at "+
			"the latest. Its data is removed, but the directory keeps a %s that makes a master created there wait "+
			"until then; do not start another master at %s before that time.", dir, until.Format(time.RFC3339),
			supervisor.StateFileName, addr)}, true
}

// waitRunning waits until the supervisor supPID reports the master running and the master
// answers PING with the admin password with AOF enabled. A hold (unclean stop) is waited out
// here. Only a state written by supPID counts: until it writes one, the data dir may still
// hold the state of a dead predecessor (say "holding" after a crash), which says nothing
// about this start.
func waitRunning(ctx context.Context, dir, addr, password string, tlsConf *tls.Config, supPID int) (Live, error) {
	lastErr := errors.New("the supervisor has not reported yet")
	for {
		if !ProcessAlive(supPID) {
			return Live{}, fmt.Errorf("the supervisor (pid %d) exited", supPID)
		}
		st, err := supervisor.ReadState(dir)
		mine := err == nil && st.SupervisorPID == supPID
		switch {
		case mine && st.Status == supervisor.StatusRunning:
			live, err := readLive(ctx, addr, password, tlsConf)
			switch {
			case err != nil:
				lastErr = err
			case !live.AOFEnabled:
				lastErr = errors.New("the master answers but AOF is not enabled yet")
			default:
				return live, nil
			}
		case mine && st.Status == supervisor.StatusHolding && st.LastError != "":
			// The server this supervisor started died: it would only crash again after the delay.
			return Live{}, fmt.Errorf("redis-server exited right after it started (%s)", st.LastError)
		case mine && st.LastError != "":
			// Such as a function library that does not load: the master stays starting.
			lastErr = fmt.Errorf("supervisor status %q: %s", st.Status, st.LastError)
		case mine:
			lastErr = fmt.Errorf("supervisor status %q", st.Status)
		}
		select {
		case <-ctx.Done():
			return Live{}, fmt.Errorf("the master at %s was not ready before the create timeout (last: %v); "+
				"raise timeouts.create if the machine is slow", addr, lastErr)
		case <-time.After(pollInterval):
		}
	}
}
