package supervisor

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func statMode(path string) (os.FileMode, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Mode().Perm(), nil
}

func TestReadStateMissingIsNotExist(t *testing.T) {
	if _, err := ReadState(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ReadState on an empty dir = %v, want an os.ErrNotExist error", err)
	}
}

// HoldUntil decides from files alone; these cases need no process.
func TestHoldUntil(t *testing.T) {
	const delay = time.Hour
	lastAlive := time.Now().Add(-10 * time.Minute).Round(0)
	withData := func(t *testing.T, dir string) {
		if err := os.MkdirAll(filepath.Join(dir, "appendonlydir"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "appendonlydir", "appendonly.aof.1.incr.aof"), []byte("*1\r\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	state := func(st State) func(*testing.T, string) {
		return func(t *testing.T, dir string) {
			if err := writeState(dir, st); err != nil {
				t.Fatal(err)
			}
		}
	}
	marker := func(t *testing.T, dir string) {
		// A clean stop keeps its nonce in the address records' dir its config names.
		if err := WriteConfig(dir, Config{Name: "m", ServerBinary: "redis-server", ConfigFile: filepath.Join(dir, "redis.conf"),
			Addr: "127.0.0.1:1", AdminPassword: "x", RestartDelay: delay, AddressRecords: testAddressRecords(t)}); err != nil {
			t.Fatal(err)
		}
		if err := writeCleanMarker(dir, 1); err != nil {
			t.Fatal(err)
		}
	}
	deadPid := exitedPid(t)
	tests := []struct {
		name  string
		setup []func(*testing.T, string)
		hold  bool
		from  string // "last_alive", "now", "floor" or "now_plus_floor_delay"
	}{
		{name: "fresh dir: first start", setup: nil, hold: false},
		{name: "state written before any start", setup: []func(*testing.T, string){state(State{Status: StatusStopped})}, hold: false},
		{name: "a master ran but its AOF is gone: from now", setup: []func(*testing.T, string){
			state(State{Status: StatusRunning, SupervisorPID: deadPid, RedisPID: deadPid, LastAlive: lastAlive})}, hold: true, from: "now"},
		{name: "crashed, AOF gone: from last alive", setup: []func(*testing.T, string){
			state(State{Status: StatusHolding, SupervisorPID: deadPid, LastAlive: lastAlive})}, hold: true, from: "last_alive"},
		{name: "a larger delay in effect earlier: its floor", setup: []func(*testing.T, string){withData,
			state(State{Status: StatusHolding, SupervisorPID: deadPid, LastAlive: lastAlive, HoldFloor: lastAlive.Add(3 * delay)})},
			hold: true, from: "floor"},
		{name: "supervisor died under a larger delay: now plus that delay", setup: []func(*testing.T, string){withData,
			state(State{Status: StatusRunning, SupervisorPID: deadPid, RedisPID: deadPid, LastAlive: lastAlive,
				HoldFloor: lastAlive.Add(2 * delay)})}, hold: true, from: "now_plus_floor_delay"},
		{name: "data and clean marker", setup: []func(*testing.T, string){withData, marker, state(State{Status: StatusStopped, LastAlive: lastAlive})}, hold: false},
		{name: "data, no marker, no state", setup: []func(*testing.T, string){withData}, hold: true, from: "now"},
		{name: "crashed and held: from last alive", setup: []func(*testing.T, string){withData,
			state(State{Status: StatusHolding, SupervisorPID: deadPid, LastAlive: lastAlive})}, hold: true, from: "last_alive"},
		{name: "stopped uncleanly: from last alive", setup: []func(*testing.T, string){withData,
			state(State{Status: StatusStopped, LastAlive: lastAlive})}, hold: true, from: "last_alive"},
		{name: "supervisor died while running: from now", setup: []func(*testing.T, string){withData,
			state(State{Status: StatusRunning, SupervisorPID: deadPid, RedisPID: deadPid, LastAlive: lastAlive})}, hold: true, from: "now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tt.setup {
				f(t, dir)
			}
			before := time.Now()
			until, hold := HoldUntil(dir, delay)
			after := time.Now()
			if hold != tt.hold {
				t.Fatalf("HoldUntil hold = %v, want %v (until %v)", hold, tt.hold, until)
			}
			switch tt.from {
			case "last_alive":
				if !until.Equal(lastAlive.Add(delay)) {
					t.Fatalf("until = %v, want last alive + delay = %v", until, lastAlive.Add(delay))
				}
			case "now":
				if until.Before(before.Add(delay)) || until.After(after.Add(delay)) {
					t.Fatalf("until = %v, want now + delay (between %v and %v)", until, before.Add(delay), after.Add(delay))
				}
			case "floor":
				if !until.Equal(lastAlive.Add(3 * delay)) {
					t.Fatalf("until = %v, want the hold floor %v", until, lastAlive.Add(3*delay))
				}
			case "now_plus_floor_delay":
				if until.Before(before.Add(2*delay)) || until.After(after.Add(2*delay)) {
					t.Fatalf("until = %v, want now + the delay the master ran under (%v)", until, 2*delay)
				}
			}
		})
	}
	t.Run("a recorded hold on a dir without data", func(t *testing.T) {
		dir := t.TempDir()
		validUntil := time.Now().Add(delay + time.Minute).Round(0)
		if err := RecordHold(dir, time.Now().Add(-time.Minute), validUntil, "destroyed"); err != nil {
			t.Fatal(err)
		}
		if until, hold := HoldUntil(dir, time.Second); !hold || !until.Equal(validUntil) {
			t.Fatalf("HoldUntil = %v, %v; want the recorded %v", until, hold, validUntil)
		}
	})
	t.Run("hold already over", func(t *testing.T) {
		dir := t.TempDir()
		withData(t, dir)
		state(State{Status: StatusHolding, LastAlive: time.Now().Add(-2 * delay)})(t, dir)
		if until, hold := HoldUntil(dir, delay); hold {
			t.Fatalf("HoldUntil = %v, true; the hold ended at %v", until, until)
		}
	})
}

// exitedPid returns the pid of a process that has exited and been reaped.
func exitedPid(t *testing.T) int {
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(cmd.Process.Pid, 0); err == nil {
		t.Skipf("pid %d was reused already", cmd.Process.Pid)
	}
	return cmd.Process.Pid
}

// TestRecordHoldNeverLowersTheFloor: a destroy that measured short-lived locks records a
// hold, but a floor the supervisor recorded for locks granted under a larger delay stays.
func TestRecordHoldNeverLowersTheFloor(t *testing.T) {
	now := time.Now().Round(0)
	tests := []struct {
		name      string
		prevFloor time.Time // zero: no previous state
		until     time.Time
		want      time.Time
	}{
		{name: "no previous state", until: now.Add(10 * time.Second), want: now.Add(10 * time.Second)},
		{name: "previous floor later is kept", prevFloor: now.Add(50 * time.Second), until: now.Add(10 * time.Second),
			want: now.Add(50 * time.Second)},
		{name: "later hold raises the floor", prevFloor: now.Add(5 * time.Second), until: now.Add(20 * time.Second),
			want: now.Add(20 * time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if !tt.prevFloor.IsZero() {
				if err := writeState(dir, State{Status: StatusStopped, LastAlive: now, HoldFloor: tt.prevFloor}); err != nil {
					t.Fatal(err)
				}
			}
			if err := RecordHold(dir, now, tt.until, "destroyed"); err != nil {
				t.Fatal(err)
			}
			st, err := ReadState(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !st.HoldFloor.Equal(tt.want) {
				t.Fatalf("HoldFloor = %v, want %v", st.HoldFloor, tt.want)
			}
			if until, hold := HoldUntil(dir, 0); !hold || !until.Equal(tt.want) {
				t.Fatalf("HoldUntil = %v, %v; want %v, true", until, hold, tt.want)
			}
		})
	}
}

// A lock whose pid cannot be written must fail: the file would keep the pid of a previous
// holder, and lockHolder would name a stale (maybe recycled) pid. /dev/full cannot be
// truncated or written.
func TestLockFailsWhenThePidCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("/dev/full", filepath.Join(dir, LockFileName)); err != nil {
		t.Fatal(err)
	}
	lock, _, err := lockDataDir(dir)
	if err == nil {
		lock.Close()
		t.Fatal("lockDataDir succeeded although its pid could not be written to the lock file")
	}
}

// A killed supervisor can still hold the lock for a moment after /proc shows its main thread
// as a zombie (its other threads are still exiting): a new supervisor waits for that instead
// of refusing as if another one ran. A live holder is refused at once.
func TestLockWaitsForADyingHolder(t *testing.T) {
	dir := t.TempDir()
	hold := func(pid int) *os.File {
		f, err := os.OpenFile(filepath.Join(dir, LockFileName), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(strconv.Itoa(pid) + "\n"); err != nil {
			t.Fatal(err)
		}
		return f
	}
	t.Run("a dead holder's lock is waited for", func(t *testing.T) {
		f := hold(exitedPid(t))
		go func() { time.Sleep(150 * time.Millisecond); f.Close() }()
		lock, _, err := lockDataDir(dir)
		if err != nil {
			t.Fatalf("lockDataDir = %v; want the lock once the dead holder's descriptor is gone", err)
		}
		lock.Close()
	})
	t.Run("a live holder is refused", func(t *testing.T) {
		f := hold(os.Getpid())
		defer f.Close()
		if lock, holder, err := lockDataDir(dir); !errors.Is(err, errLocked) || holder != os.Getpid() {
			if lock != nil {
				lock.Close()
			}
			t.Fatalf("lockDataDir = %v, holder %d; want errLocked naming pid %d", err, holder, os.Getpid())
		}
	})
}
