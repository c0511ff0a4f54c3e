package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

const pollInterval = 20 * time.Millisecond

// Stop stops the master in dataDir cleanly and waits until its supervisor and redis-server
// are gone (or ctx is done).
//
// With a live supervisor (pid from the state or the lock file, proven by /proc to be
// "supervise <dataDir>", so a recycled pid is never signalled) it sends SIGTERM: the
// supervisor stops redis-server cleanly, writes the clean marker and exits. When only
// redis-server is left (its supervisor was killed) Stop shuts it down itself (SHUTDOWN as
// admin, else SIGTERM to the proven redis pid) and writes the marker. With nothing running
// it does nothing: in particular it never writes a marker for a master that crashed.
//
// Call it after the supervisor wrote its first state (WaitReady), or use StopSupervisor
// with the pid from Spawn: a supervisor spawned a few milliseconds ago may not be visible yet.
func Stop(ctx context.Context, dataDir string) error {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return fmt.Errorf("supervisor: data dir %q: %w", dataDir, err)
	}
	st, err := ReadState(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return stop(ctx, dir, []int{st.SupervisorPID, lockHolder(dir)}, 0)
}

// StopSupervisor stops the supervisor with the given pid (from Spawn) like Stop does, even
// before it has written a state or taken the lock, when the data dir's files may still name
// a dead predecessor. Its redis-server is stopped too if the supervisor leaves it behind.
func StopSupervisor(ctx context.Context, dataDir string, pid int) error {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return fmt.Errorf("supervisor: data dir %q: %w", dataDir, err)
	}
	return stop(ctx, dir, []int{pid}, pid)
}

// stop SIGTERMs the first of candidates that is a live supervisor of dir and waits for it,
// then stops a redis-server the state still names (an orphan). only, when not 0, limits
// that to a state written by that supervisor.
func stop(ctx context.Context, dir string, candidates []int, only int) error {
	for _, pid := range candidates {
		if pid == os.Getpid() || !isSupervisorProcess(pid, dir) {
			continue
		}
		// SIGCONT: a paused supervisor must wake up to act on SIGTERM.
		if err := signalPid(pid, syscall.SIGTERM); err != nil {
			return err
		}
		_ = signalPid(pid, syscall.SIGCONT)
		if err := waitGone(ctx, func() bool { return isSupervisorProcess(pid, dir) }); err != nil {
			return fmt.Errorf("supervisor: supervisor pid %d for %s did not stop: %w (see %s)",
				pid, dir, err, filepath.Join(dir, LogFileName))
		}
		break
	}
	st, err := ReadState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.RedisPID == 0 || (only != 0 && st.SupervisorPID != only) {
		return nil
	}
	c, err := LoadConfig(dir)
	if err != nil {
		return err
	}
	if !isRedisProcess(st.RedisPID, c) {
		return nil // crashed with its supervisor: nothing runs, and nothing may claim a clean stop
	}
	log, closeLog := stopLog(dir)
	stopErr := stopOrphan(ctx, c, st.RedisPID, !stopUnderway(st), log)
	closeLog()
	// It may have served until now, stopped cleanly or not; if the stop failed, the next
	// start holds from now, and a pid that still runs stays recorded so that it is found.
	st.LastAlive, st.HoldFloor = orphanStopped(st, c.RestartDelay)
	st.Status = StatusStopped
	if stopErr == nil || !isRedisProcess(st.RedisPID, c) {
		st.RedisPID = 0
	}
	if err := writeState(dir, st); err != nil {
		return errors.Join(stopErr, err)
	}
	return stopErr
}

// Running returns the pids of whatever of the master in dataDir still runs: its supervisor
// (from the state or the lock file) and its redis-server, each proven by /proc. Empty means
// nothing of that master runs.
func Running(dataDir string) []int {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil
	}
	st, _ := ReadState(dir)
	pids := supervisorPIDs(dir, st)
	if c, err := LoadConfig(dir); err == nil && isRedisProcess(st.RedisPID, c) {
		pids = append(pids, st.RedisPID)
	}
	return pids
}

// supervisorPIDs returns the supervisors of the master in the absolute dir that run, from
// its state st or the lock file, each proven by /proc.
func supervisorPIDs(dir string, st State) []int {
	var pids []int
	for _, pid := range []int{st.SupervisorPID, lockHolder(dir)} {
		if pid != 0 && !slices.Contains(pids, pid) && isSupervisorProcess(pid, dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stopOrphan stops a redis-server that has no supervisor (so it is not our child and its
// exit code cannot be read) and writes the clean marker only when the stop proved durable:
// the AOF on with appendfsync always when the shutdown was asked, and the server's log says
// it fsynced the AOF and is ready to exit. The process being gone proves nothing: it may
// have been killed meanwhile. With rewrite, the AOF is
// rewritten first (compactAOF), so that the restart does not bring released keys back.
func stopOrphan(ctx context.Context, c Config, pid int, rewrite bool, log *slog.Logger) error {
	if err := ctx.Err(); err != nil {
		// No time left: signalling now could end the server a moment later, or at once, and
		// a stop that was given no time must not be able to report success. It is left
		// running, recorded alive until now.
		return fmt.Errorf("redis-server pid %d not stopped: %w", pid, err)
	}
	_ = signalPid(pid, syscall.SIGCONT) // a paused server could answer neither the rewrite nor SHUTDOWN
	// No supervisor watched it: its dataset may have been replaced meanwhile (a flush, a
	// REPLICAOF), which its clean stop would then vouch for.
	replaced := orphanReplaced(ctx, c)
	if rewrite {
		compactAOF(ctx, c, log)
	} else {
		log.Warn("AOF not rewritten before the clean stop: a stop was asked of this redis-server already, and should it exit during the rewrite, nothing would prove a clean stop",
			"redis_pid", pid)
	}
	// Read as the shutdown is asked for: what it will persist.
	confCtx, cancelConf := context.WithTimeout(ctx, 5*time.Second)
	notDurable := readDurableConfig(confCtx, c)
	cancelConf()
	client := adminClient(c)
	shutdownCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err := client.Shutdown(shutdownCtx).Err() // go-redis reports the expected EOF as success
	cancel()
	client.Close()
	if err != nil {
		// Not reachable or not accepted (password changed, paused, a refused SHUTDOWN): SIGTERM
		// runs the same shutdown. Unless the process is gone already: then nothing proves
		// that it went cleanly, and no marker is written.
		if !isRedisProcess(pid, c) {
			return fmt.Errorf("redis-server pid %d exited while SHUTDOWN failed (%v): not known to be a clean stop", pid, err)
		}
		if err := signalPid(pid, syscall.SIGTERM); err != nil {
			return err
		}
	}
	if werr := waitGone(ctx, func() bool { return isRedisProcess(pid, c) }); werr != nil {
		if err != nil {
			return fmt.Errorf("redis-server pid %d did not stop: %w (SHUTDOWN: %v; see its log)", pid, werr, err)
		}
		return fmt.Errorf("redis-server pid %d did not stop: %w (see its log)", pid, werr)
	}
	// It is gone, but not our child: only its log and the settings read before the
	// shutdown can tell a clean, durable stop from a kill.
	if notDurable == "" {
		notDurable = durableExit(c, pid)
	}
	if notDurable == "" && replaced != "" {
		notDurable = "its dataset was replaced while no supervisor watched it: " + replaced
	}
	if notDurable != "" {
		log.Warn("redis-server stopped, but not provably durably: no clean marker, the next start holds", "redis_pid", pid, "why", notDurable)
		return nil
	}
	return writeCleanMarker(c.DataDir, pid)
}

// orphanReplaced says why the dataset of a server that ran without its supervisor is not
// the one its deployment record vouched for ("": it is, or that cannot be told: then its
// log decides as before). A server the supervisor starts has no master_replid2; one that
// replicated another server since keeps that server's id there, and a flush takes the record.
func orphanReplaced(ctx context.Context, c Config) string {
	client := adminClient(c)
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, err := client.Exists(ctx, hold.DeploymentKey).Result()
	if err != nil {
		return ""
	}
	if n == 0 {
		return recordGone
	}
	repl, err := readRepl(ctx, client)
	if err != nil {
		return ""
	}
	return replacedSince(replState{Role: "master"}, repl)
}

// stopUnderway reports whether st records a stop already asked of its redis-server (a
// supervisor that died while stopping it, a Stop cut short): it may be shutting down now.
func stopUnderway(st State) bool { return st.Status == StatusStopping || st.Status == StatusStopped }

// stopLog returns a logger that appends to the master's supervisor.log, where Stop, acting
// for a supervisor that is gone, records what it did; it discards when the log cannot be
// opened (logging is no reason to fail a stop).
func stopLog(dir string) (log *slog.Logger, closeLog func()) {
	f, err := os.OpenFile(filepath.Join(dir, LogFileName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return slog.New(slog.DiscardHandler), func() {}
	}
	return slog.New(slog.NewTextHandler(f, nil)).With("stopper_pid", os.Getpid()), func() { f.Close() }
}

func signalPid(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(pid, sig); err != nil && err != syscall.ESRCH {
		return fmt.Errorf("supervisor: signal %v to pid %d: %w", sig, pid, err)
	}
	return nil
}

// waitGone polls until running reports false or ctx is done.
func waitGone(ctx context.Context, running func() bool) error {
	for running() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollInterval):
		}
	}
	return nil
}

// WaitReady waits until the supervisor in dataDir reports its master running (answering
// PING) and returns that state. supervisorPID (from Spawn; 0 = any) makes it fail fast, with
// the end of supervisor.log, when that supervisor exits instead. A held master (restart
// delay) is waited for: bound ctx accordingly.
func WaitReady(ctx context.Context, dataDir string, supervisorPID int) (State, error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return State{}, fmt.Errorf("supervisor: data dir %q: %w", dataDir, err)
	}
	for {
		st, err := ReadState(dir)
		mine := err == nil && (supervisorPID == 0 || st.SupervisorPID == supervisorPID)
		if mine && st.Status == StatusRunning && isSupervisorProcess(st.SupervisorPID, dir) {
			return st, nil
		}
		if supervisorPID != 0 && !isSupervisorProcess(supervisorPID, dir) {
			return st, fmt.Errorf("supervisor pid %d for %s exited before its master was running: %s",
				supervisorPID, dir, logTail(dir, 2000))
		}
		if supervisorPID == 0 && err == nil && st.Status == StatusStopped {
			return st, fmt.Errorf("supervisor for %s stopped: %s", dir, st.LastError)
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("supervisor for %s: master not running (status %q): %w", dir, st.Status, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

func logTail(dir string, n int) string {
	data, err := os.ReadFile(filepath.Join(dir, LogFileName))
	if err != nil {
		return "(no " + LogFileName + ")"
	}
	if len(data) > n {
		data = data[len(data)-n:]
	}
	return strings.TrimSpace(string(data))
}
