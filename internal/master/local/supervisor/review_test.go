package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

// TestFlushThenReloadIsHeld: a reload (SIGHUP, which every provider update sends) right
// after a FLUSHALL republishes the record with the server's fields: the republish must not
// bring back a record the flush took, and the master is killed and held as after a crash.
func TestFlushThenReloadIsHeld(t *testing.T) {
	t.Parallel()
	m := newMaster(t, 2*time.Second)
	pid := m.spawn()
	st := m.waitReady(pid)
	if err := m.admin().FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	held := m.waitState("the flushed master held", func(s State) bool { return s.RedisPID != st.RedisPID || s.Status != StatusRunning })
	if !strings.Contains(held.LastError+logTail(m.dir, 4000), "is gone") {
		t.Fatalf("held for another reason: %+v\n%s", held, logTail(m.dir, 3000))
	}
}

// TestAddressHoldLongerThanOwnDelayKeepsTheStateReadable: a master held for another data
// dir's master on its address, whose locks outlive this master's own delay, keeps a state
// that reads (the provider's Inspect, Stop) while it holds.
func TestAddressHoldLongerThanOwnDelayKeepsTheStateReadable(t *testing.T) {
	t.Parallel()
	a := newMaster(t, time.Hour)
	a.crashThenStop()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	b := newMasterAt(t, t.TempDir(), a.cfg.Addr, a.cfg.AddressRecords, 2*time.Second)
	pidB := b.spawn()
	held := b.waitState("B held for the address", func(s State) bool { return s.SupervisorPID == pidB && s.Status == StatusHolding })
	if time.Until(held.RestartAt) < 30*time.Minute {
		t.Fatalf("B holds until %v, not for A's hour", held.RestartAt)
	}
	if _, err := Inspect(b.dir); err != nil {
		t.Fatalf("B's state while it holds: %v", err)
	}
	if err := Stop(ctx, b.dir); err != nil {
		t.Fatalf("Stop B while it holds: %v", err)
	}
}

// TestNeverServedStateKeepsTheBootRule: a data dir whose state never saw a server (its start
// was held for the address, then stopped) is a first start after a reboot like an empty one:
// held until restart_delay after the address records began.
func TestNeverServedStateKeepsTheBootRule(t *testing.T) {
	t.Parallel()
	const delay = time.Hour
	a := newMaster(t, delay)
	a.crashThenStop()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	b := newMasterAt(t, t.TempDir(), a.cfg.Addr, a.cfg.AddressRecords, delay)
	pidB := b.spawn()
	b.waitState("B held for the address", func(s State) bool { return s.SupervisorPID == pidB && s.Status == StatusHolding })
	if err := Stop(ctx, b.dir); err != nil {
		t.Fatal(err)
	}
	// A reboot: the records begin anew now, and B's state is of another boot.
	records := filepath.Join(t.TempDir(), "addresses")
	if err := os.MkdirAll(records, 0o700); err != nil {
		t.Fatal(err)
	}
	clock, err := readClockPair()
	if err != nil {
		t.Fatal(err)
	}
	since := []byte(bootID() + " " + strconv.FormatInt(clock.nowMS(), 10) + "\n")
	if err := os.WriteFile(filepath.Join(records, AddressRecordsFile), since, 0o600); err != nil {
		t.Fatal(err)
	}
	b.cfg.AddressRecords = records
	if err := WriteConfig(b.dir, b.cfg); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(b.dir, StateFileName))
	if err != nil {
		t.Fatal(err)
	}
	other := strings.ReplaceAll(string(raw), bootID(), "00000000-0000-0000-0000-000000000000")
	if err := os.WriteFile(filepath.Join(b.dir, StateFileName), []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, hold, why := HoldReason(b.dir, delay); !hold {
		t.Fatalf("B (a state, never served) after a reboot: not held (%s)", why)
	}
	pidB2 := b.spawn()
	if st, _ := b.settle(pidB2); st.Status != StatusHolding {
		t.Fatalf("B after a reboot: status %s, want holding\n%s", st.Status, logTail(b.dir, 3000))
	}
}

// TestFlushWhileSupervisorDeadIsNoCleanStop: a server whose supervisor died, flushed while
// nobody watched it, is not stopped "cleanly" by the next supervisor: no marker vouches for
// its emptied dataset, and the start is held.
func TestFlushWhileSupervisorDeadIsNoCleanStop(t *testing.T) {
	t.Parallel()
	m := newMaster(t, time.Hour)
	pid := m.spawn()
	st := m.waitReady(pid)
	m.killSupervisor(pid)
	if err := m.admin().FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	pid2 := m.spawn()
	got, _ := m.settle(pid2)
	if got.Status != StatusHolding || CleanStop(m.dir) {
		t.Fatalf("orphan %d flushed, then a new supervisor: status %s, clean marker %v; want held, none\n%s",
			st.RedisPID, got.Status, CleanStop(m.dir), logTail(m.dir, 3000))
	}
	if !strings.Contains(logTail(m.dir, 6000), hold.DeploymentKey+" is gone") {
		t.Errorf("the log does not say why:\n%s", logTail(m.dir, 3000))
	}
}
