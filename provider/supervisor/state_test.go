package supervisor

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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
		if err := writeCleanMarker(dir, 1); err != nil {
			t.Fatal(err)
		}
	}
	deadPid := exitedPid(t)
	tests := []struct {
		name  string
		setup []func(*testing.T, string)
		hold  bool
		from  string // "last_alive" or "now"
	}{
		{name: "fresh dir: first start", setup: nil, hold: false},
		{name: "config but no data yet", setup: []func(*testing.T, string){state(State{Status: StatusRunning, LastAlive: lastAlive})}, hold: false},
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
			}
		})
	}
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
