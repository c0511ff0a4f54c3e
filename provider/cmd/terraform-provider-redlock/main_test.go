package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// The test binary is the provider binary here: "supervise <dir>" makes it a supervisor.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "supervise" {
		os.Exit(supervisor.Main(os.Args[2]))
	}
	os.Exit(m.Run())
}

// startMaster writes a master's files in a fresh data dir, spawns its supervisor and waits
// until it serves. Whatever still runs at the end is stopped, by pid, in t.Cleanup.
func startMaster(t *testing.T, restartDelay time.Duration) (dir string, st supervisor.State) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "m")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	host := redistest.Loopback(t) // restarts keep the port: no other test's process may take it
	port, err := redistest.FreePort(host)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := redisconf.Config{Bind: host, Port: port, DataDir: dir, AdminPassword: redistest.AdminPassword,
		LockPassword: redistest.LockPassword, LogFile: filepath.Join(dir, "redis.log")}.Render()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "redis.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	err = supervisor.WriteConfig(dir, supervisor.Config{Name: "m", ServerBinary: "redis-server",
		ConfigFile: filepath.Join(dir, "redis.conf"), DataDir: dir, Addr: net.JoinHostPort(host, strconv.Itoa(port)),
		AdminPassword: redistest.AdminPassword, RestartDelay: restartDelay})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pid, err := supervisor.Spawn(exe, []string{"supervise", dir}, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = supervisor.Stop(ctx, dir)
		for _, pid := range supervisor.Running(dir) {
			t.Errorf("cleanup: pid %d still runs in %s: killing it", pid, dir)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if st, err = supervisor.WaitReady(ctx, dir, pid); err != nil {
		t.Fatal(err)
	}
	return dir, st
}

func kill(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
			return
		}
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if strings.Contains(string(stat), ") Z") || time.Now().After(deadline) {
			return
		}
	}
}

func TestStopMode(t *testing.T) {
	stop := func(t *testing.T, args ...string) (code int, out string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code = stopCommand(context.Background(), args, &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	t.Run("a running master is stopped cleanly", func(t *testing.T) {
		dir, st := startMaster(t, time.Hour)
		code, out := stop(t, dir)
		if code != 0 || len(supervisor.Running(dir)) != 0 || !supervisor.CleanStop(dir) {
			t.Fatalf("stop = %d (%s); still running %v, clean marker %v", code, out, supervisor.Running(dir), supervisor.CleanStop(dir))
		}
		if !strings.Contains(out, strconv.Itoa(st.RedisPID)) {
			t.Errorf("output %q does not name the stopped redis-server pid %d", out, st.RedisPID)
		}
	})
	t.Run("an unsupervised redis-server is stopped cleanly", func(t *testing.T) {
		dir, st := startMaster(t, time.Hour)
		kill(t, st.SupervisorPID)
		code, out := stop(t, dir)
		if code != 0 || len(supervisor.Running(dir)) != 0 || !supervisor.CleanStop(dir) {
			t.Fatalf("stop = %d (%s); still running %v, clean marker %v", code, out, supervisor.Running(dir), supervisor.CleanStop(dir))
		}
	})
	t.Run("a held master is stopped and keeps its hold", func(t *testing.T) {
		dir, st := startMaster(t, time.Hour)
		kill(t, st.RedisPID)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if now, err := supervisor.ReadState(dir); err == nil && now.Status == supervisor.StatusHolding {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the supervisor never reported holding")
			}
		}
		code, out := stop(t, dir)
		if code != 0 || len(supervisor.Running(dir)) != 0 {
			t.Fatalf("stop = %d (%s); still running %v", code, out, supervisor.Running(dir))
		}
		if _, hold := supervisor.HoldUntil(dir, time.Hour); !hold || supervisor.CleanStop(dir) {
			t.Fatal("stopping a held master cleared its hold")
		}
	})
	t.Run("nothing running is success", func(t *testing.T) {
		if code, out := stop(t, filepath.Join(t.TempDir(), "never-used")); code != 0 {
			t.Fatalf("stop = %d (%s), want 0", code, out)
		}
	})
	t.Run("usage errors", func(t *testing.T) {
		for _, args := range [][]string{nil, {"a", "b"}, {"relative/dir"}, {"-timeout", "soon", "/x"}} {
			if code, out := stop(t, args...); code != 2 || !strings.Contains(out, "usage: terraform-provider-redlock stop") {
				t.Errorf("stop %q = %d (%s), want 2 and the usage", args, code, out)
			}
		}
	})
}

func TestCrashMode(t *testing.T) {
	crash := func(t *testing.T, args ...string) (code int, out string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code = crashCommand(args, &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	waitStatus := func(t *testing.T, dir, status string) supervisor.State {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if st, err := supervisor.ReadState(dir); err == nil && st.Status == status {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("the supervisor never reported %s", status)
			}
		}
	}
	t.Run("kills the live redis-server, which is held and restarted", func(t *testing.T) {
		const delay = time.Second
		dir, st := startMaster(t, delay)
		beforeCrash := time.Now()
		code, out := crash(t, dir)
		if code != 0 || !strings.Contains(out, "pid "+strconv.Itoa(st.RedisPID)) {
			t.Fatalf("crash = %d (%s); want 0 and the killed pid %d", code, out, st.RedisPID)
		}
		held := waitStatus(t, dir, supervisor.StatusHolding)
		if held.RestartAt.Before(beforeCrash.Add(delay)) || !strings.Contains(held.LastError, "signal 9") {
			t.Fatalf("state after crash %+v: want a SIGKILL and a hold until at least %v", held, beforeCrash.Add(delay))
		}
		t.Run("refused while held down", func(t *testing.T) {
			if code, out := crash(t, dir); code != 1 || !strings.Contains(out, "down already") {
				t.Fatalf("crash of a held master = %d (%s), want 1", code, out)
			}
		})
		back := waitStatus(t, dir, supervisor.StatusRunning)
		if back.RedisPID == st.RedisPID || back.Restarts != 1 {
			t.Fatalf("state after the restart %+v: want a new redis-server and 1 restart", back)
		}
		// The new pid is read from the state, not remembered.
		if code, out := crash(t, dir); code != 0 || !strings.Contains(out, "pid "+strconv.Itoa(back.RedisPID)) {
			t.Fatalf("second crash = %d (%s); want the new pid %d", code, out, back.RedisPID)
		}
	})
	t.Run("a pid that is not the master's server is never signalled", func(t *testing.T) {
		dir, st := startMaster(t, time.Hour)
		// The state names a process that is not this master's redis-server: what a recycled
		// pid looks like.
		other := exec.Command("sleep", "60")
		if err := other.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
		if err := supervisor.Stop(context.Background(), dir); err != nil {
			t.Fatal(err)
		}
		// A process whose command line reads "supervise <dir>" stands in for a live
		// supervisor, so that the state (which the real one would rewrite) stays as written.
		fakeSup := exec.Command("/bin/sh", "-c", "sleep 60; :", "supervise", dir)
		if err := fakeSup.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = fakeSup.Process.Kill(); _ = fakeSup.Wait() })
		fake := supervisor.State{SupervisorPID: fakeSup.Process.Pid, RedisPID: other.Process.Pid, Status: supervisor.StatusRunning,
			LastAlive: time.Now()}
		raw, err := json.Marshal(fake)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, supervisor.StateFileName), raw, 0o600); err != nil {
			t.Fatal(err)
		}
		if live, err := supervisor.Inspect(dir); err != nil || !live.SupervisorAlive || live.RedisPID != other.Process.Pid {
			t.Fatalf("Inspect = %+v, %v: the fake state is not in place", live, err)
		}
		if code, out := crash(t, dir); code != 1 || strings.Contains(out, "killed") {
			t.Fatalf("crash with a foreign pid in the state = %d (%s), want 1 and nothing killed", code, out)
		}
		if st.RedisPID == other.Process.Pid {
			t.Fatal("the pid was recycled within the test: rerun")
		}
		if err := other.Process.Signal(syscall.Signal(0)); err != nil {
			t.Fatalf("the unrelated process %d was signalled: %v", other.Process.Pid, err)
		}
	})
	t.Run("nothing running and usage errors", func(t *testing.T) {
		if code, out := crash(t, filepath.Join(t.TempDir(), "never-used")); code != 1 {
			t.Fatalf("crash of nothing = %d (%s), want 1", code, out)
		}
		for _, args := range [][]string{nil, {"a", "b"}, {"relative/dir"}} {
			if code, out := crash(t, args...); code != 2 || !strings.Contains(out, "usage: terraform-provider-redlock crash") {
				t.Errorf("crash %q = %d (%s), want 2 and the usage", args, code, out)
			}
		}
	})
}
