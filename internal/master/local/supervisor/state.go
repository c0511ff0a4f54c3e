package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
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
	// LastAlive is the last moment the master may have served clients: the moment the
	// supervisor observed its exit (wait status) when it did, else the last health-check tick
	// at which its process was running (not stopped), or the moment it was started. The
	// restart delay is counted from here.
	LastAlive time.Time `json:"last_alive,omitzero"`
	// RestartAt is when a held master starts again (LastAlive + RestartDelay, or HoldFloor
	// when that is later); it keeps the last planned restart after the master is back.
	RestartAt time.Time `json:"restart_at,omitzero"`
	// HoldFloor is the earliest moment a hold may end: the latest LastAlive + RestartDelay
	// ever recorded for this dir, so every lock the master granted under the delay (max lock
	// TTL) in effect at the time has expired by then. Lowering the delay therefore never
	// shortens a hold: it takes effect once the master has run under the new delay for the
	// difference. HoldFloor - LastAlive is the delay in effect when the state was written.
	HoldFloor time.Time `json:"hold_floor,omitzero"`
	// LargestDelay is the largest restart delay any supervisor ever ran this dir with (on
	// disk as largest_delay_ms): a floor or restart time read back beyond now + the larger
	// of it and the configured delay is unreadable.
	LargestDelay time.Duration `json:"-"`
	UpdatedAt    time.Time     `json:"updated_at,omitzero"`
	Restarts     int           `json:"restarts"` // restarts after a crash or an unclean stop, over the dir's life
	// Crashes counts crashes (redis-server exited uncleanly, or failed to start) and unclean
	// stops found when a supervisor started, over the dir's life (metrics.prom).
	Crashes int `json:"crashes,omitempty"`
	// LastExit is when the supervisor last saw redis-server exit (for an unclean stop found
	// at start: the last moment the master was seen alive).
	LastExit  time.Time `json:"last_exit,omitzero"`
	LastError string    `json:"last_error,omitempty"`
	// UnnamedServer is what a supervisor found serving on the master's address or data dir
	// that no record names, while it waits for it to stop ("" when none): should it stop
	// waiting (a stop), that server may serve on unseen, and the next start holds
	// restart_delay from when it starts.
	UnnamedServer string `json:"unnamed_server,omitempty"`
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
	// No floor or restart time lies beyond now + the largest delay ever configured (the
	// state's record of it, or the one supervisor.json configures now); one that does is a
	// corrupt record, not a hold to honour for a week.
	largest := st.LargestDelay
	var c Config
	if cfg, err := os.ReadFile(filepath.Join(dataDir, ConfigFileName)); err == nil && json.Unmarshal(cfg, &c) == nil {
		largest = max(largest, c.RestartDelay)
	}
	bound := time.Now().Add(largest + time.Millisecond) // + the ms an instant is rounded up by
	for _, f := range []struct {
		name string
		at   time.Time
	}{{"restart_at", st.RestartAt}, {"hold_floor", st.HoldFloor}} {
		if f.at.After(bound) {
			return State{}, fmt.Errorf("supervisor: %s: %s is %s from now, beyond the largest restart delay ever configured (%s): unreadable",
				path, f.name, time.Until(f.at).Round(time.Millisecond), largest)
		}
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

// HoldUntil tells when a master whose data lives in dataDir may start. It must stay down
// when a master ran there and did not stop cleanly (no clean marker), whether or not its
// AOF is still there: until restartDelay after it was last seen alive (LastAlive from the
// state; when that is unknown because its supervisor died while it ran, from now, with the
// larger of restartDelay and the delay the dead master ran under), and never before the
// state's HoldFloor. The bool is false when no wait is needed: nothing ever ran there, a
// clean stop, a supervisor running it right now, or a hold that is already over.
func HoldUntil(dataDir string, restartDelay time.Duration) (time.Time, bool) {
	until, hold, _ := HoldReason(dataDir, restartDelay)
	return until, hold
}

// HoldReason is HoldUntil with the reason for the hold.
func HoldReason(dataDir string, restartDelay time.Duration) (time.Time, bool, string) {
	now := time.Now()
	until, hold, why := holdUntil(dataDir, now, false, restartDelay)
	if !hold {
		return time.Time{}, false, ""
	}
	return until, now.Before(until), why
}

// holdUntil decides whether a master starting now must be held back, until when, and why
// (for the log). hold is true for any unclean stop, even when until has passed (the
// supervisor then runs the crash hooks and restarts at once). self is true inside the
// supervisor that holds the data dir's lock: the supervisor recorded in the state is then
// known to be dead.
//
// The address records count too (addressHold): masters of other data dirs that served on the
// master's address, and, when this data dir keeps no records, its own master that served
// there.
func holdUntil(dataDir string, now time.Time, self bool, delay time.Duration) (until time.Time, hold bool, why string) {
	until, hold, why = ownHoldUntil(dataDir, now, self, delay)
	c, err := LoadConfig(dataDir)
	if err != nil {
		return until, hold, why
	}
	c.RestartDelay = delay
	// A state that never saw a server (a start held for its address, then stopped) says
	// nothing of this dir's past on the address.
	st, stErr := ReadState(dataDir)
	ownRecords := hasData(dataDir) || stErr != nil && !errors.Is(stErr, os.ErrNotExist) ||
		stErr == nil && (st.RedisPID != 0 || !st.LastAlive.IsZero())
	if u, h, w := addressHold(c, dataDir, now, ownRecords); h && (!hold || u.After(until)) {
		return u, true, w
	}
	return until, hold, why
}

// ownHoldUntil is holdUntil by the data dir's own records.
func ownHoldUntil(dataDir string, now time.Time, self bool, delay time.Duration) (until time.Time, hold bool, why string) {
	st, err := ReadState(dataDir)
	if err == nil && st.UnnamedServer != "" {
		return later(now.Add(delay), st.HoldFloor), true, st.UnnamedServer +
			" when the last supervisor stopped waiting for it: when it stopped is unknown"
	}
	// A hold in progress beats a marker (a power loss during a hold left both).
	counts, markerWhy := markerCounts(dataDir)
	if counts && !hasData(dataDir) {
		// The AOF the clean stop fsynced is gone: the locks it held are forgotten.
		counts, markerWhy = false, "the clean marker's AOF is gone"
	}
	if counts && (err != nil || st.Status != StatusHolding) {
		return time.Time{}, false, "the master was stopped cleanly"
	}
	ran := hasData(dataDir) || err == nil && (st.RedisPID != 0 || !st.LastAlive.IsZero()) ||
		err != nil && !errors.Is(err, os.ErrNotExist)
	if !ran {
		return time.Time{}, false, "no master ran in this data dir yet"
	}
	if err != nil {
		return now.Add(delay), true, markerWhy + " and no readable state: when the master last ran is unknown"
	}
	// A lost AOF is the case the delay exists for: the master forgot the locks it granted.
	lost := ""
	if !hasData(dataDir) {
		lost = " (and its AOF is gone)"
	}
	after := func(base time.Time, d time.Duration) time.Time {
		if base.IsZero() {
			base = now
		}
		return later(base.Add(d), st.HoldFloor)
	}
	switch st.Status {
	case StatusHolding:
		return after(st.LastAlive, delay), true, "the master crashed and is being held back" + lost
	case StatusStopped:
		if _, e := os.Stat(filepath.Join(dataDir, CleanMarkerName)); e == nil {
			// A clean stop elsewhere (another machine, boot or dir): when it last served
			// here is unknown.
			return after(now, delay), true, markerWhy + lost
		}
		return after(st.LastAlive, delay), true, "the master stopped without a clean shutdown" + lost
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
	// It may have served until a moment ago, under the delay in effect when its supervisor
	// last wrote the state (a new configuration may have lowered it since).
	ranUnder := delay
	if !st.LastAlive.IsZero() {
		ranUnder = max(delay, st.HoldFloor.Sub(st.LastAlive))
	}
	return after(now, ranUnder), true, "the supervisor died while the master ran: when the master stopped is unknown" + lost
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// RecordHold leaves a state in dataDir saying that a master ran there until lastAlive and
// that locks it granted may be valid until validUntil, and removes the clean marker: a
// master started in dataDir later is held until then at least. The provider calls it when
// it destroys a master's data, so that a destroy interrupted before those locks expired
// cannot let a new master at the same data dir grant them again. It never lowers a HoldFloor
// already recorded there (by the supervisor, or an earlier RecordHold): that floor covers
// locks granted under a restart delay larger than the caller may know about.
func RecordHold(dataDir string, lastAlive, validUntil time.Time, why string) error {
	if err := removeCleanMarker(dataDir); err != nil {
		return err
	}
	// An unreadable state has no floor to keep: validUntil is all that is known.
	floor := validUntil
	largest := max(validUntil.Sub(lastAlive), 0)
	if prev, err := ReadState(dataDir); err == nil {
		floor = later(floor, prev.HoldFloor)
		largest = max(largest, prev.LargestDelay)
	}
	return writeState(dataDir, State{Status: StatusStopped, LastAlive: lastAlive, HoldFloor: floor, LastError: why,
		LargestDelay: min(largest, hold.MaxRestartDelay)})
}
