package faults_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/faults"
)

// The test binary is the supervisor of the masters it starts, as the provider binary is.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "supervise" {
		os.Exit(supervisor.Main(os.Args[2]))
	}
	os.Exit(m.Run())
}

// TestCrashMaster crashes a supervised master by its data dir: the live redis-server is
// killed, the supervisor holds the master down and restarts it with a new pid; a second
// crash while it is held down signals nothing, and a data dir with no master is an error.
func TestCrashMaster(t *testing.T) {
	const delay = time.Second
	dir, st := startMaster(t, delay)
	crashed, err := faults.CrashMaster(dir)
	if err != nil {
		t.Fatal(err)
	}
	if crashed.RedisPID != st.RedisPID || crashed.SupervisorPID != st.SupervisorPID || crashed.RestartDelay != delay {
		t.Fatalf("CrashMaster = %+v, want redis pid %d, supervisor pid %d, delay %v", crashed, st.RedisPID, st.SupervisorPID, delay)
	}
	held := waitStatus(t, dir, supervisor.StatusHolding)
	if !strings.Contains(held.LastError, "signal 9") {
		t.Fatalf("the supervisor did not see a SIGKILL: %+v", held)
	}
	if _, err := faults.CrashMaster(dir); err == nil || !strings.Contains(err.Error(), "down already") {
		t.Fatalf("crash while held down: %v, want an error saying the master is down already", err)
	}
	back := waitStatus(t, dir, supervisor.StatusRunning)
	if back.RedisPID == st.RedisPID {
		t.Fatalf("restarted with the same pid %d", back.RedisPID)
	}
	if _, err := faults.CrashMaster(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("crash of a data dir with no master succeeded")
	}
}

func waitStatus(t *testing.T, dir, status string) supervisor.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		if st, err := supervisor.ReadState(dir); err == nil && st.Status == status {
			return st
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the supervisor never reported %s", status)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startMaster writes a master's files, spawns its supervisor (this test binary) and waits
// until it serves; whatever still runs at the end is stopped by pid.
func startMaster(t *testing.T, restartDelay time.Duration) (string, supervisor.State) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "m")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	host := redistest.Loopback(t)
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
	if err := supervisor.WriteConfig(dir, supervisor.Config{Name: "m", ServerBinary: "redis-server",
		ConfigFile: filepath.Join(dir, "redis.conf"), DataDir: dir, Addr: net.JoinHostPort(host, strconv.Itoa(port)),
		AdminPassword: redistest.AdminPassword, RestartDelay: restartDelay}); err != nil {
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
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := supervisor.WaitReady(ctx, dir, pid)
	if err != nil {
		t.Fatal(err)
	}
	return dir, st
}
