package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// The local supervisor against the policy's scenario table (internal/master/hold): real
// supervisors and redis-servers; the records are made by the supervisor itself (a clean
// stop, a crash) and then changed as the scenario says. Delays are long (the test never
// waits a hold out): what is checked is the RestartAt the supervisor holds until.
func TestHoldScenarios(t *testing.T) {
	const delay = 30 * time.Minute
	for _, sc := range hold.Scenarios {
		if !sc.For(hold.Local) {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			got := runLocalScenario(t, sc, delay)
			t.Logf("RESULT %s | issue %d | want %s | got %s", sc.Name, sc.Issue, sc.Want, got)
			if got != string(sc.Want) {
				t.Errorf("scenario %q (issue %d): got %s, want %s", sc.Name, sc.Issue, got, sc.Want)
			}
		})
	}
}

func runLocalScenario(t *testing.T, sc hold.Scenario, delay time.Duration) string {
	startDelay := delay
	if sc.LastRunDelayMS != 0 {
		startDelay = time.Duration(sc.LastRunDelayMS) * time.Millisecond
	}
	m := newMaster(t, startDelay)
	want := startDelay // the hold counted from a moment
	if !sc.Ran {
		// A first start in an empty data dir: what the address records say decides.
		switch sc.Address {
		case hold.AddressOtherDirCrashed:
			recorded := m.otherDirCrashed()
			return m.outcomeUntil(m.spawn(), recorded)
		case hold.AddressRecordsBegan:
			clock, err := readClockPair()
			if err != nil {
				t.Fatal(err)
			}
			since := clock.nowMS() - (delay - time.Duration(sc.HoldLeftMS)*time.Millisecond).Milliseconds()
			path := filepath.Join(m.cfg.AddressRecords, AddressRecordsFile)
			if err := os.WriteFile(path, fmt.Appendf(nil, "%s %d\n", bootID(), since), 0o600); err != nil {
				t.Fatal(err)
			}
			return m.outcomeUntil(m.spawn(), clock.timeAtOrAfter(since).Add(delay))
		}
		spawnedAt := time.Now()
		return m.outcome(sc, m.spawn(), spawnedAt, want)
	}
	// Every other scenario starts from a master that ran in the dir: its AOF is real.
	pid := m.spawn()
	st := m.waitReady(pid)
	var exitBefore time.Time // the last run's exit came after this
	stopNow := func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := Stop(ctx, m.dir); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	}
	if sc.LastRunDelayMS != 0 {
		// The supervisor applies a new delay at the reload: the larger one covers the
		// locks granted until then.
		exitBefore = time.Now()
		m.cfg.RestartDelay = delay
		if err := WriteConfig(m.dir, m.cfg); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the reload", func() bool { return strings.Contains(logTail(m.dir, 4000), "config reloaded") })
	}
	ctx := context.Background()
	switch sc.Exit {
	case hold.ExitKilled:
		if exitBefore.IsZero() {
			exitBefore = time.Now()
		}
		if sc.DelayOnDisk != "" || sc.Floor != hold.FloorAsWritten {
			// What a new supervisor reads from disk: both processes die (a reboot, an OOM
			// kill of both), the files are changed, and a new supervisor starts.
			m.killSupervisor(pid)
			m.killRedis(st.RedisPID)
			break
		}
		if sc.RecordsStuck {
			// The supervisor sees the crash with records it cannot replace.
			m.makeStuck(StateFileName)
		}
		m.killRedis(st.RedisPID)
		waitFor(t, "the supervisor to see the crash", func() bool {
			s := m.state()
			return s.Status != StatusRunning || !isSupervisorProcess(pid, m.dir)
		})
		return m.outcome(sc, pid, exitBefore, want)
	case hold.ExitReplaced:
		exitBefore = time.Now()
		m.replicateAnother(st.RedisPID)
		return m.outcome(sc, pid, exitBefore, want)
	case hold.ExitFlushed:
		exitBefore = time.Now()
		if err := m.admin().FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		m.waitState("the flushed master killed", func(s State) bool { return s.RedisPID != st.RedisPID || s.Status != StatusRunning })
		return m.outcome(sc, pid, exitBefore, want)
	case hold.ExitAdminShutdownAOFOff:
		m.adminDo("config", "set", "appendonly", "no")
		m.set("acknowledged", "1")
		exitBefore = time.Now()
		_ = m.admin().Shutdown(ctx).Err()
		waitFor(t, "the supervisor to exit", func() bool { return !isSupervisorProcess(pid, m.dir) })
	case hold.ExitStopAOFOff:
		m.adminDo("config", "set", "appendonly", "no")
		exitBefore = time.Now()
		stopNow()
	case hold.ExitDurableStop, hold.ExitNone:
		exitBefore = time.Now()
		stopNow()
	case hold.ExitOrphanKilledDuringStop:
		m.killSupervisor(pid)
		// A script that never ends keeps the server from shutting down (no supervisor
		// kills it now): SHUTDOWN is refused, SIGTERM waits for it.
		busy := m.admin()
		go func() { _ = busy.Eval(context.Background(), "while true do end", nil).Err() }()
		probe := m.admin()
		waitFor(t, "the server to be busy", func() bool {
			err := probe.Ping(context.Background()).Err()
			return err != nil && strings.Contains(err.Error(), "BUSY")
		})
		stopped := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			stopped <- Stop(ctx, m.dir)
		}()
		waitFor(t, "the server to get SIGTERM", func() bool {
			b, _ := os.ReadFile(filepath.Join(m.dir, "redis.log"))
			return strings.Contains(string(b), fmt.Sprintf("%d:signal-handler", st.RedisPID)) &&
				strings.Contains(string(b), "Received SIGTERM")
		})
		exitBefore = time.Now()
		m.killRedis(st.RedisPID)
		t.Logf("Stop: %v", <-stopped)
	}

	// The records, as the scenario has them.
	bootID, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	machineID := readMachineIDForTest()
	marker := filepath.Join(m.dir, CleanMarkerName)
	writeMarker := func(machine, boot, dir string) {
		body := fmt.Sprintf("v3 %s %s %d %s %s\n", machine, boot, st.RedisPID, aofDigest(m.dir), dir)
		if err := os.WriteFile(marker, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	boot := strings.TrimSpace(string(bootID))
	switch sc.Marker {
	case hold.MarkerOtherMachine:
		writeMarker("0123456789abcdef0123456789abcdef", boot, m.dir)
	case hold.MarkerOtherDir:
		writeMarker(machineID, boot, "/var/lib/other")
	case hold.MarkerOtherBoot:
		writeMarker(machineID, "00000000-0000-0000-0000-000000000000", m.dir)
	case hold.MarkerAOFGone:
		if err := os.RemoveAll(filepath.Join(m.dir, "appendonlydir")); err != nil {
			t.Fatal(err)
		}
	case hold.MarkerAOFReplaced:
		// An older copy of an AOF file restored under the clean stop's marker.
		entries, err := os.ReadDir(filepath.Join(m.dir, "appendonlydir"))
		if err != nil || len(entries) == 0 {
			t.Fatalf("no AOF files after the clean stop: %v", err)
		}
		path := filepath.Join(m.dir, "appendonlydir", entries[len(entries)-1].Name())
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, old, 0o600); err != nil {
			t.Fatal(err)
		}
	case hold.MarkerRolledBack:
		m.rollBack()
	case hold.MarkerNoIdentity:
		if err := os.WriteFile(marker, []byte("redis-server pid 1 stopped cleanly\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if sc.StartedByHand {
		m.runByHand()
	}
	if sc.Emptied {
		m.empty()
	}
	var recorded time.Time
	switch sc.Address {
	case hold.AddressOtherDirCrashed:
		// The master's data dir is kept, its address given up (a destroy with
		// keep_data_on_destroy measured no lock left), and another data dir's master takes it.
		if err := ReleaseAddress(m.dir, m.cfg.Addr, time.Now()); err != nil {
			t.Fatal(err)
		}
		recorded = m.otherDirCrashed()
	case hold.AddressRecordUnreadable:
		path := filepath.Join(m.cfg.AddressRecords, addressFileName(m.cfg.Addr))
		if err := os.WriteFile(path, []byte("garbage\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	switch sc.Hold {
	case hold.HoldThisBoot:
		left := time.Duration(sc.HoldLeftMS) * time.Millisecond
		if sc.ServerDuringHold {
			left = delay // the server must start while the hold lasts, however slow the machine
		}
		last := time.Now().Add(-delay + left)
		recorded = last.Add(delay)
		if sc.Marker == hold.NoMarker {
			_ = os.Remove(marker)
		}
		m.writeRecord(State{Status: StatusHolding, LastAlive: last, RestartAt: recorded, HoldFloor: recorded})
	case hold.HoldUnreadable:
		_ = os.Remove(marker)
		if err := os.WriteFile(filepath.Join(m.dir, StateFileName), []byte("garbage\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if sc.Exit == hold.ExitNone && sc.Marker == hold.NoMarker && sc.Hold == hold.NoHold {
		// A reboot or a power loss: the state says running, nothing runs, no marker.
		_ = os.Remove(marker)
		prev := m.state()
		prev.Status, prev.SupervisorPID, prev.RedisPID = StatusRunning, 0, 0
		m.writeRecord(prev)
	}
	if sc.Floor != hold.FloorAsWritten || sc.DelayOnDisk != "" {
		// Runs before the master's cleanup: Stop reads these files, and needs them readable.
		t.Cleanup(func() {
			_ = os.Remove(filepath.Join(m.dir, StateFileName))
			if err := WriteConfig(m.dir, m.cfg); err != nil {
				t.Error(err)
			}
		})
	}
	switch sc.Floor {
	case hold.FloorUnreadable:
		if err := os.WriteFile(filepath.Join(m.dir, StateFileName), []byte("garbage\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	case hold.FloorFarAhead:
		prev := m.state()
		prev.HoldFloor = time.Now().Add(10 * 365 * 24 * time.Hour)
		m.writeRecord(prev)
	case hold.FloorWeekAhead:
		clock, err := readClockPair()
		if err != nil {
			t.Fatal(err)
		}
		now := clock.nowMS()
		m.setStateFields(map[string]any{"last_alive_boot_ms": now, "hold_floor_boot_ms": now + 7*24*3600*1000, "restart_at_boot_ms": now + 7*24*3600*1000})
	case hold.FloorOverflow:
		m.setStateFields(map[string]any{"last_alive_boot_ms": int64(-9223372036854775807),
			"hold_floor_boot_ms": int64(9223372036854775807), "restart_at_boot_ms": int64(9223372036854775807)})
	case hold.FloorNegative:
		m.setStateFields(map[string]any{"last_alive_boot_ms": int64(-5000000000), "hold_floor_boot_ms": int64(-4999969000)})
	}
	if sc.WallClockStepMS != 0 {
		m.stepWallClock(time.Duration(sc.WallClockStepMS) * time.Millisecond)
	}
	if sc.DelayOnDisk != "" {
		m.setDelayText(sc.DelayOnDisk)
	}
	if sc.RecordsStuck {
		m.makeStuck(CleanMarkerName, StateFileName)
	}
	var srv *exec.Cmd
	if sc.ServerOnAddress {
		srv = m.startForeignServer()
		if sc.ServerPaused {
			if err := srv.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
		}
	}
	spawnedAt := time.Now()
	pid2 := m.spawn()
	if srv != nil && sc.StopWhileWaiting {
		// Stopped while it waits; the server serves on, then stops; then a new start.
		waitFor(t, "the supervisor waiting for the server", func() bool {
			return strings.Contains(m.state().LastError, "waiting until it stops")
		})
		stopNow()
		_ = srv.Process.Kill()
		_ = srv.Wait()
		spawnedAt = time.Now()
		return m.outcome(sc, m.spawn(), spawnedAt, want)
	}
	if srv != nil {
		// Wait until the supervisor reacted (it holds, or its start failed), then stop the
		// server no record names.
		m.waitState("the new supervisor to react", func(s State) bool {
			return s.SupervisorPID == pid2 && s.Status == StatusHolding
		})
		exitBefore = time.Now()
		_ = srv.Process.Kill()
		_ = srv.Wait()
		waitFor(t, "a hold from after the server stopped, or none", func() bool {
			s := m.state()
			return !s.RestartAt.Before(exitBefore.Add(want)) || time.Since(exitBefore) > 10*time.Second
		})
		return m.outcome(sc, pid2, exitBefore, want)
	}
	if sc.ServerDuringHold {
		m.waitState("the new supervisor holding", func(s State) bool {
			return s.SupervisorPID == pid2 && s.Status == StatusHolding
		})
		srv := m.startForeignServer()
		deadline := time.Now().Add(waitLimit)
		for !strings.Contains(m.state().LastError, "waiting until it stops") {
			if time.Now().After(deadline) {
				_ = srv.Process.Kill()
				_ = srv.Wait()
				return "never saw the server that served during the hold (restart_at " + m.state().RestartAt.Format(time.RFC3339Nano) + ")"
			}
			time.Sleep(pollInterval)
		}
		exitBefore = time.Now()
		_ = srv.Process.Kill()
		_ = srv.Wait()
		waitFor(t, "a hold from after the server stopped", func() bool {
			return m.state().LastError == ""
		})
		return m.outcome(sc, pid2, exitBefore, want)
	}
	switch sc.Want {
	case hold.Refuse:
		got := m.outcome(sc, pid2, exitBefore, want)
		file := ""
		switch {
		case sc.DelayOnDisk != "":
			file = ConfigFileName
		case sc.Floor != hold.FloorAsWritten:
			file = StateFileName
		}
		if log := logTail(m.dir, 3000); got == string(hold.Refuse) && file != "" && !strings.Contains(log, file) {
			return "refused without naming " + file + ":\n" + log
		}
		return got
	case hold.HoldFromNow:
		return m.outcome(sc, pid2, spawnedAt, want)
	case hold.HoldRecorded:
		return m.outcomeUntil(pid2, recorded)
	}
	return m.outcome(sc, pid2, exitBefore, want)
}

// outcome waits for what supervisor pid does and names it in the table's words: a hold is
// "from" the moment when it ends no earlier than from + want, and no later than now + want.
func (m *testMaster) outcome(sc hold.Scenario, pid int, from time.Time, want time.Duration) string {
	st, exited := m.settle(pid)
	switch {
	case exited:
		return string(hold.Refuse)
	case st.Status == StatusRunning:
		return string(hold.StartNow)
	case st.Status != StatusHolding:
		return st.Status
	case st.RestartAt.Before(from.Add(want)):
		return fmt.Sprintf("hold until %s, before %s + %s", st.RestartAt.Format(time.RFC3339Nano), from.Format(time.RFC3339Nano), want)
	case st.RestartAt.After(time.Now().Add(want)):
		return fmt.Sprintf("hold until %s, longer than %s from now", st.RestartAt.Format(time.RFC3339Nano), want)
	}
	if sc.Want == hold.HoldFromExit || sc.Want == hold.HoldFromGone || sc.Want == hold.HoldFromNow {
		return string(sc.Want)
	}
	return "hold of restart_delay"
}

func (m *testMaster) outcomeUntil(pid int, recorded time.Time) string {
	st, exited := m.settle(pid)
	switch {
	case exited:
		return string(hold.Refuse)
	case st.Status == StatusRunning:
		return string(hold.StartNow)
	// The record is whole ms of the boot clock, rounded up, and rebuilding an instant from it
	// reads two clocks: within 2 ms.
	case st.RestartAt.Sub(recorded).Abs() > 2*time.Millisecond:
		return fmt.Sprintf("hold until %s, not the recorded %s", st.RestartAt.Format(time.RFC3339Nano), recorded.Format(time.RFC3339Nano))
	}
	return string(hold.HoldRecorded)
}

// settle waits until supervisor pid runs its master, holds it, or exits; exited is true when
// it exited (or holds with a state it could not write: then the state is not its own).
func (m *testMaster) settle(pid int) (State, bool) {
	m.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if !isSupervisorProcess(pid, m.dir) {
			st, _ := ReadState(m.dir)
			return st, true
		}
		st, err := ReadState(m.dir)
		mine := err == nil && st.SupervisorPID == pid
		if mine && (st.Status == StatusRunning || st.Status == StatusHolding) {
			return st, false
		}
		if time.Now().After(deadline) {
			m.t.Logf("supervisor %d neither ran, held (by its record) nor exited; state %+v\n%s", pid, st, logTail(m.dir, 3000))
			return State{Status: "neither ran, held by its record nor exited"}, false
		}
		time.Sleep(pollInterval)
	}
}

func (m *testMaster) writeRecord(st State) {
	m.t.Helper()
	data, err := json.Marshal(st)
	if err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.dir, StateFileName), data, 0o600); err != nil {
		m.t.Fatal(err)
	}
}

// makeStuck makes the named files (those that exist) impossible to remove or replace, as
// an I/O error would (root only: chattr +i).
func (m *testMaster) makeStuck(names ...string) {
	m.t.Helper()
	for _, name := range names {
		path := filepath.Join(m.dir, name)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
			m.t.Skipf("cannot make %s immutable (needs root on ext4/xfs): %v %s", name, err, out)
		}
		m.t.Cleanup(func() { _ = exec.Command("chattr", "-i", path).Run() })
	}
}

// startForeignServer starts a redis-server on the master's address from another dir: no
// record of the master names it. It is killed at cleanup.
func (m *testMaster) startForeignServer() *exec.Cmd {
	m.t.Helper()
	host, port, _ := strings.Cut(m.cfg.Addr, ":")
	cmd := exec.Command(m.cfg.ServerBinary, "--bind", host, "--port", port, "--dir", m.t.TempDir(),
		"--requirepass", redistest.AdminPassword, "--save", "")
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(m.t, "the foreign server to answer", func() bool { return m.admin().Ping(context.Background()).Err() == nil })
	return cmd
}

func readMachineIDForTest() string {
	b, err := os.ReadFile("/etc/machine-id")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// stepWallClock plays a wall-clock step of d after the state was written: every wall time
// in it moves by -d (as seen from the stepped clock, the record is that much older).
func (m *testMaster) stepWallClock(d time.Duration) {
	m.t.Helper()
	path := filepath.Join(m.dir, StateFileName)
	data, err := os.ReadFile(path)
	if err != nil {
		m.t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		m.t.Fatal(err)
	}
	for _, key := range []string{"last_alive", "restart_at", "hold_floor", "last_exit", "updated_at"} {
		text, ok := fields[key].(string)
		if !ok {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, text)
		if err != nil {
			m.t.Fatal(err)
		}
		fields[key] = at.Add(-d).Format(time.RFC3339Nano)
	}
	if data, err = json.Marshal(fields); err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		m.t.Fatal(err)
	}
}

// setStateFields replaces fields of supervisor.json as a corrupt or hand-edited record
// would, with the state's boot id (so that they are read as this boot's).
func (m *testMaster) setStateFields(set map[string]any) {
	m.t.Helper()
	path := filepath.Join(m.dir, StateFileName)
	data, err := os.ReadFile(path)
	if err != nil {
		m.t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		m.t.Fatal(err)
	}
	fields["boot_id"] = bootID()
	for k, v := range set {
		fields[k] = v
	}
	if data, err = json.Marshal(fields); err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		m.t.Fatal(err)
	}
}

// setDelayText writes restart_delay_ms in supervisor.json as a hand edit would: "”" is
// null (JSON's empty), anything else a string.
func (m *testMaster) setDelayText(text string) {
	m.t.Helper()
	path := filepath.Join(m.dir, ConfigFileName)
	data, err := os.ReadFile(path)
	if err != nil {
		m.t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal(data, &fields); err != nil {
		m.t.Fatal(err)
	}
	fields[hold.FieldRestartDelayMS] = text
	if text == "''" {
		fields[hold.FieldRestartDelayMS] = nil
	}
	if data, err = json.Marshal(fields); err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		m.t.Fatal(err)
	}
}

// otherDirCrashed runs a master of another data dir on m's address (and m's address records)
// until it crashes, stops it while it is held, and returns until when it was held.
func (m *testMaster) otherDirCrashed() time.Time {
	m.t.Helper()
	other := newMasterAt(m.t, m.t.TempDir(), m.cfg.Addr, m.cfg.AddressRecords, m.cfg.RestartDelay)
	return other.crashThenStop().RestartAt
}

// crashThenStop runs the master until it granted a lock, kills its server, and stops its
// supervisor while it holds; it returns the state it held with.
func (m *testMaster) crashThenStop() State {
	m.t.Helper()
	st := m.waitReady(m.spawn())
	m.set("lock", "granted before the crash")
	m.killRedis(st.RedisPID)
	held := m.waitState("held after the crash", func(s State) bool { return s.Status == StatusHolding })
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := Stop(ctx, m.dir); err != nil {
		m.t.Fatalf("Stop while it holds: %v", err)
	}
	return held
}

// runByHand starts a server as an operator would, with the master's config file (its dir
// and logfile) but --appendonly no, makes it take a write, and kills it.
func (m *testMaster) runByHand() {
	m.t.Helper()
	cmd := exec.Command(m.cfg.ServerBinary, m.cfg.ConfigFile, "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(m.t, "the server run by hand to answer", func() bool { return m.admin().Ping(context.Background()).Err() == nil })
	m.set("lock", "granted by the server run by hand")
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// empty removes every file of the data dir but the two the provider writes again (the
// supervisor's config and redis.conf): a data dir wiped and made again.
func (m *testMaster) empty() {
	m.t.Helper()
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		m.t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == ConfigFileName || e.Name() == "redis.conf" {
			continue
		}
		if err := os.RemoveAll(filepath.Join(m.dir, e.Name())); err != nil {
			m.t.Fatal(err)
		}
	}
}

// rollBack moves the data dir aside (inodes and mtimes kept, as a snapshot keeps them), lets
// a copy of it start once more (what every start does first: removeCleanMarker; the copy's
// run, served and stopped, is what the rollback forgets), and moves the original back.
func (m *testMaster) rollBack() {
	m.t.Helper()
	snap := m.dir + ".snap"
	if err := os.Rename(m.dir, snap); err != nil {
		m.t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", snap, m.dir).CombinedOutput(); err != nil {
		m.t.Fatalf("cp -a: %v\n%s", err, out)
	}
	if err := removeCleanMarker(m.dir); err != nil {
		m.t.Fatal(err)
	}
	if err := os.RemoveAll(m.dir); err != nil {
		m.t.Fatal(err)
	}
	if err := os.Rename(snap, m.dir); err != nil {
		m.t.Fatal(err)
	}
}
