package supervisor

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Status values of State.Status.
const (
	StatusStarting = "starting" // redis-server started, not yet answering PING
	StatusRunning  = "running"  // answering PING
	StatusHolding  = "holding"  // crashed (or found unclean): waiting until RestartAt
	StatusStopping = "stopping" // clean stop requested
	StatusStopped  = "stopped"  // supervisor exited (see CleanStop for how)
)

// State is what a supervisor reports about its master, in <data_dir>/supervisor.state. It is
// replaced atomically on every status change and at least every second while the master
// runs, so readers never see a torn file.
type State struct {
	SupervisorPID int    `json:"supervisor_pid"`
	RedisPID      int    `json:"redis_pid"` // 0 when no redis-server runs
	Status        string `json:"status"`
	// LastAlive is the last moment the master may have served clients: its last answered
	// PING, or the moment it was started. The restart delay is counted from here.
	LastAlive time.Time `json:"last_alive,omitzero"`
	// RestartAt is when a held master starts again (LastAlive + RestartDelay); it keeps the
	// last planned restart after the master is back.
	RestartAt time.Time `json:"restart_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	Restarts  int       `json:"restarts"` // restarts after a crash or an unclean stop, over the dir's life
	LastError string    `json:"last_error,omitempty"`
}

// ReadState returns the state a supervisor last wrote in dataDir. The error wraps
// os.ErrNotExist when no supervisor ever ran there.
func ReadState(dataDir string) (State, error) {
	path := filepath.Join(dataDir, StateFileName)
	data, err := os.ReadFile(path)
	if err != nil {
		return State{}, fmt.Errorf("supervisor: read state: %w", err)
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return State{}, fmt.Errorf("supervisor: %s: %w", path, err)
	}
	return st, nil
}

func writeState(dataDir string, st State) error {
	st.UpdatedAt = time.Now()
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dataDir, StateFileName), append(data, '\n')); err != nil {
		return fmt.Errorf("supervisor: write state: %w", err)
	}
	return nil
}

// HoldUntil tells when a master whose data lives in dataDir may start: when the dir holds
// data and no clean marker, it must stay down until restartDelay after it was last seen
// alive (LastAlive from the state; now when that is unknown, e.g. its supervisor died while
// it ran). The bool is false when no wait is needed: no data, a clean stop, a supervisor
// running it right now, or a hold that is already over.
func HoldUntil(dataDir string, restartDelay time.Duration) (time.Time, bool) {
	now := time.Now()
	base, hold, _ := holdBase(dataDir, now, false)
	if !hold {
		return time.Time{}, false
	}
	until := base.Add(restartDelay)
	return until, now.Before(until)
}

// holdBase decides whether a master starting now must be held back, from when the delay is
// counted, and why (for the log). self is true inside the supervisor that holds the data
// dir's lock: the supervisor recorded in the state is then known to be dead.
func holdBase(dataDir string, now time.Time, self bool) (base time.Time, hold bool, why string) {
	if !hasData(dataDir) {
		return time.Time{}, false, "the data dir holds no data yet"
	}
	if CleanStop(dataDir) {
		return time.Time{}, false, "the master was stopped cleanly"
	}
	st, err := ReadState(dataDir)
	if err != nil {
		return now, true, "data but no clean marker and no readable state: when the master last ran is unknown"
	}
	orDefault := func(t time.Time) time.Time {
		if t.IsZero() {
			return now
		}
		return t
	}
	switch st.Status {
	case StatusHolding:
		return orDefault(st.LastAlive), true, "the master crashed and is being held back"
	case StatusStopped:
		return orDefault(st.LastAlive), true, "the master stopped without a clean shutdown"
	}
	// The state says the master was running (or starting or stopping).
	if !self && st.SupervisorPID != os.Getpid() && isSupervisorProcess(st.SupervisorPID, dataDir) {
		return time.Time{}, false, "a supervisor is running the master"
	}
	if c, err := LoadConfig(dataDir); err == nil && isRedisProcess(st.RedisPID, c) {
		// Its supervisor is gone but the master still runs: a new supervisor stops it
		// cleanly first, so no hold is needed.
		return time.Time{}, false, "the master still runs; it will be stopped cleanly"
	}
	return now, true, "the supervisor died while the master ran: when the master stopped is unknown"
}
