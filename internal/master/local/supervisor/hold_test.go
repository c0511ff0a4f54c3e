package supervisor

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

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// Holds must cover every lock the master may have granted: these tests break the master in
// the ways the first version of the policy missed.

// A data dir whose AOF is gone (deleted, lost with a disk) after a master ran there is exactly
// what the restart delay is for: the locks it granted are forgotten.
func TestLostAOFIsHeld(t *testing.T) {
	t.Parallel()
	const delay = 2 * time.Second
	m := newMaster(t, delay)
	pid := m.spawn()
	st := m.waitReady(pid)
	m.set("acknowledged", "1")
	m.killSupervisor(pid)
	m.killRedis(st.RedisPID)
	if err := os.RemoveAll(filepath.Join(m.dir, "appendonlydir")); err != nil {
		t.Fatal(err)
	}
	if _, hold := HoldUntil(m.dir, delay); !hold {
		t.Fatal("HoldUntil says no wait for a master that ran here and lost its AOF")
	}
	spawnedAt := time.Now()
	pid2 := m.spawn()
	held := m.waitState("the new supervisor holding", func(s State) bool {
		return s.SupervisorPID == pid2 && s.Status == StatusHolding
	})
	if held.RestartAt.Before(spawnedAt.Add(delay)) {
		t.Fatalf("RestartAt %v: the master died at an unknown moment before %v, so the hold must last until at least %v",
			held.RestartAt, spawnedAt, spawnedAt.Add(delay))
	}
	if _, refused := m.probeHold(held.RestartAt); refused == 0 {
		t.Fatal("no probe completed during the hold")
	}
	m.waitReady(pid2)
}

// A lower restart delay (SIGHUP) must not shorten a hold in progress: the locks the crashed
// master granted were bounded by the old, larger delay.
func TestShorterDelayNeverShortensAHold(t *testing.T) {
	t.Parallel()
	const delay = 3 * time.Second
	m := newMaster(t, delay)
	pid := m.spawn()
	st := m.waitReady(pid)
	m.killRedis(st.RedisPID)
	held := m.waitState("holding", func(s State) bool { return s.Status == StatusHolding })

	m.cfg.RestartDelay = 500 * time.Millisecond
	if err := WriteConfig(m.dir, m.cfg); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reload in the log", func() bool { return strings.Contains(logTail(m.dir, 4000), "config reloaded") })
	// Wall instants (Round(0)): each read of the state gives its instants the monotonic
	// reading of that read's clock pair, so one instant read twice can differ by nanoseconds.
	if now := m.state(); now.Status == StatusHolding && now.RestartAt.Round(0).Before(held.RestartAt.Round(0)) {
		t.Fatalf("RestartAt moved from %v to %v after the delay was lowered", held.RestartAt, now.RestartAt)
	}
	if _, refused := m.probeHold(held.RestartAt); refused == 0 {
		t.Fatal("no probe completed during the hold")
	}
	m.waitReady(pid)
}

// A lower restart delay applies once the master has run long enough under it that every lock
// granted under the old one has expired; a crash before that is held for the old delay.
func TestShorterDelayAppliesOnceOldLocksExpired(t *testing.T) {
	t.Parallel()
	const oldDelay, newDelay = 3 * time.Second, 1500 * time.Millisecond
	m := newMaster(t, oldDelay)
	pid := m.spawn()
	st := m.waitReady(pid)
	beforeReload := m.state() // LastAlive no later than the last moment under the old delay

	m.cfg.RestartDelay = newDelay
	if err := WriteConfig(m.dir, m.cfg); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reload in the log", func() bool { return strings.Contains(logTail(m.dir, 4000), "config reloaded") })
	reloaded := time.Now()

	t.Run("a crash right after the change is held for the old delay", func(t *testing.T) {
		m.killRedis(st.RedisPID)
		held := m.waitState("holding", func(s State) bool { return s.Status == StatusHolding })
		if want := beforeReload.LastAlive.Add(oldDelay); held.RestartAt.Round(0).Before(want.Round(0)) {
			t.Fatalf("RestartAt %v, but the master was alive at %v under the old delay %v: want at least %v",
				held.RestartAt, beforeReload.LastAlive, oldDelay, want)
		}
		st = m.waitReady(pid)
	})
	t.Run("once the old locks expired the new delay applies", func(t *testing.T) {
		// Every lock granted under the old delay expired by reloaded+oldDelay; run past it.
		m.waitState("running past the old locks", func(s State) bool {
			return s.Status == StatusRunning && s.LastAlive.After(reloaded.Add(oldDelay))
		})
		m.killRedis(st.RedisPID)
		held := m.waitState("holding", func(s State) bool { return s.Status == StatusHolding && s.Restarts == 1 })
		if !held.RestartAt.Equal(held.LastAlive.Add(newDelay)) {
			t.Fatalf("RestartAt %v, want LastAlive %v + the new delay %v", held.RestartAt, held.LastAlive, newDelay)
		}
		m.waitReady(pid)
	})
}

// A supervisor started with a lower delay (the provider recreated the master with a new
// configuration after its supervisor and master died together) still holds for the delay
// the dead master ran under.
func TestNewSupervisorKeepsTheLongerDelay(t *testing.T) {
	t.Parallel()
	const oldDelay = 3 * time.Second
	m := newMaster(t, oldDelay)
	pid := m.spawn()
	st := m.waitReady(pid)
	m.waitState("a state written while running", func(s State) bool { return s.UpdatedAt.After(st.UpdatedAt) })
	m.killSupervisor(pid)
	m.killRedis(st.RedisPID)

	m.cfg.RestartDelay = 500 * time.Millisecond
	if err := WriteConfig(m.dir, m.cfg); err != nil {
		t.Fatal(err)
	}
	if until, hold := HoldUntil(m.dir, m.cfg.RestartDelay); !hold || until.Before(time.Now().Add(oldDelay-time.Second)) {
		t.Fatalf("HoldUntil with the lower delay = %v, %v: want the old delay %v from now", until, hold, oldDelay)
	}
	spawnedAt := time.Now()
	pid2 := m.spawn()
	held := m.waitState("the new supervisor holding", func(s State) bool {
		return s.SupervisorPID == pid2 && s.Status == StatusHolding
	})
	if held.RestartAt.Before(spawnedAt.Add(oldDelay)) {
		t.Fatalf("RestartAt %v: the master died at an unknown moment under the delay %v; want at least %v",
			held.RestartAt, oldDelay, spawnedAt.Add(oldDelay))
	}
	m.probeHold(held.RestartAt)
	m.waitReady(pid2)
}

// A master the health check cannot get an answer from (overloaded, or the check cannot
// reach it) may still serve clients: as long as its process runs, it counts as alive.
func TestRunningMasterCountsAsAliveWithoutAnswers(t *testing.T) {
	t.Parallel()
	m := newMaster(t, 2*time.Second)
	// The health check PINGs a port nobody listens on; redis-server serves on its own.
	host := redistest.Loopback(t) // nobody else listens there, for the whole test
	closed, err := redistest.FreePort(host)
	if err != nil {
		t.Fatal(err)
	}
	realAddr := m.cfg.Addr
	m.cfg.Addr = net.JoinHostPort(host, strconv.Itoa(closed))
	if err := WriteConfig(m.dir, m.cfg); err != nil {
		t.Fatal(err)
	}
	m.cfg.Addr = realAddr // for the test's own clients
	pid := m.spawn()
	started := m.waitState("redis-server started", func(s State) bool { return s.SupervisorPID == pid && s.RedisPID != 0 })
	m.set("served", "yes") // it serves, although the supervisor never hears from it
	seen := m.waitState("LastAlive advancing without answers", func(s State) bool {
		return s.LastAlive.After(started.LastAlive.Add(time.Second))
	})
	if seen.Status != StatusStarting {
		t.Fatalf("status %q without a PONG, want %q", seen.Status, StatusStarting)
	}
	m.killRedis(started.RedisPID)
	held := m.waitState("holding", func(s State) bool { return s.Status == StatusHolding })
	if held.LastAlive.Before(seen.LastAlive) || !held.RestartAt.Equal(held.LastAlive.Add(2*time.Second)) {
		t.Fatalf("holding state %+v: want LastAlive at or after %v and RestartAt = LastAlive + delay", held, seen.LastAlive)
	}
}

// The supervisor outlives terraform, so it must not keep terraform's environment (TF_VAR_*,
// cloud credentials): it, redis-server and the hooks get PATH, HOME, LANG, LC_ALL, TZ, and
// the hooks the REDLOCK_* variables.
func TestMinimalEnvironment(t *testing.T) {
	t.Setenv("TF_VAR_admin_password", "leaked-admin-password")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "leaked-cloud-key")
	m := newMaster(t, time.Second)
	envFile := filepath.Join(m.dir, "hook.env")
	m.cfg.Hooks.OnCrash = []string{"/bin/sh", "-c", `env > "$0"`, envFile}
	if err := WriteConfig(m.dir, m.cfg); err != nil {
		t.Fatal(err)
	}
	pid := m.spawn()
	st := m.waitReady(pid)
	environ := func(pid int) string {
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(string(raw), "\x00", "\n")
	}
	check := func(who, env string, extra ...string) {
		t.Helper()
		for _, leak := range []string{"leaked-admin-password", "leaked-cloud-key"} {
			if strings.Contains(env, leak) {
				t.Errorf("%s inherited %q:\n%s", who, leak, env)
			}
		}
		for _, want := range append([]string{"PATH="}, extra...) {
			if !strings.Contains(env, want) {
				t.Errorf("%s lacks %s:\n%s", who, want, env)
			}
		}
	}
	check("the supervisor", environ(pid))
	// redis-server's environment is not checked here: it overwrites that memory with its
	// process title, so /proc shows neither what it got nor what it lacks.
	m.killRedis(st.RedisPID)
	waitFor(t, "the on_crash hook", func() bool {
		raw, err := os.ReadFile(envFile)
		return err == nil && strings.Contains(string(raw), "REDLOCK_RESTART_AT=")
	})
	raw, _ := os.ReadFile(envFile)
	check("the hook", string(raw), "REDLOCK_EVENT=crash", "REDLOCK_DATA_DIR="+m.dir)
	m.waitReady(pid)
}

// The supervisor is redis-server's parent: it sees the exit itself, so the hold counts from
// the exit, not from the last health-check tick before it (which ended the hold up to a
// tick early). Measured from outside, as a client sees it: from just before the kill -9 to
// the first connection accepted again, the master is down at least restart_delay. Several
// kills, each at another point of the tick.
func TestCrashDowntimeFromOutsideIsAtLeastTheDelay(t *testing.T) {
	t.Parallel()
	const delay = time.Second
	m := newMaster(t, delay)
	// No hooks: the restart follows the end of the hold as closely as it can.
	m.cfg.Hooks = Hooks{}
	if err := WriteConfig(m.dir, m.cfg); err != nil {
		t.Fatal(err)
	}
	pid := m.spawn()
	st := m.waitReady(pid)
	for i := 0; i < 4; i++ {
		// Kill at a different point of the 100ms tick each time.
		time.Sleep(time.Duration(i) * 23 * time.Millisecond)
		if !isRedisProcess(st.RedisPID, m.cfg) {
			t.Fatalf("pid %d is not the master's redis-server", st.RedisPID)
		}
		beforeKill := time.Now()
		if err := syscall.Kill(st.RedisPID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// SIGKILL is asynchronous: the dying process may still accept for a moment. The
		// first accept that counts is the first one after a refusal.
		var firstAccept time.Time
		refused := false
		for deadline := time.Now().Add(waitLimit); firstAccept.IsZero(); {
			conn, err := net.DialTimeout("tcp", m.cfg.Addr, 200*time.Millisecond)
			if err == nil {
				_ = conn.Close()
				if refused {
					firstAccept = time.Now()
					break
				}
			} else {
				refused = true
			}
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: the master never accepted a connection again; log: %s", i, logTail(m.dir, 3000))
			}
			time.Sleep(2 * time.Millisecond)
		}
		if down := firstAccept.Sub(beforeKill); down < delay {
			t.Fatalf("kill %d: down for %v from the kill to the first accepted connection, less than restart_delay %v",
				i, down, delay)
		}
		st = m.waitState("the master back", func(s State) bool {
			return s.Status == StatusRunning && s.Restarts == i+1 && s.RedisPID != 0
		})
		m.pids[st.RedisPID] = true
	}
}

// An exit 0 that proves no durable shutdown (the AOF turned off, then SHUTDOWN) is an
// unclean stop: the state must keep the delay the master ran under from its exit, so that a
// next start under a lowered delay still holds that long. (The floor used to stop at the
// last health-check tick before the exit.)
func TestUnprovenCleanExitKeepsTheFloorFromTheExit(t *testing.T) {
	t.Parallel()
	const delay = 30 * time.Minute
	m := newMaster(t, delay)
	pid := m.spawn()
	m.waitReady(pid)
	m.adminDo("config", "set", "appendonly", "no")
	m.set("acknowledged", "1")
	_ = m.admin().Shutdown(context.Background()).Err()
	waitFor(t, "the supervisor to exit", func() bool { return !isSupervisorProcess(pid, m.dir) })
	st := m.state()
	if st.Status != StatusStopped || CleanStop(m.dir) {
		t.Fatalf("status %s, clean %v: want an unclean stop", st.Status, CleanStop(m.dir))
	}
	if st.HoldFloor.Before(st.LastAlive.Add(delay)) {
		t.Fatalf("hold_floor %s is before last_alive %s + %s: a lower delay at the next start would hold less than the locks need",
			st.HoldFloor.Format(time.RFC3339Nano), st.LastAlive.Format(time.RFC3339Nano), delay)
	}
	// The next start under a lowered delay holds the old one from the exit.
	m.cfg.RestartDelay = time.Minute
	if err := WriteConfig(m.dir, m.cfg); err != nil {
		t.Fatal(err)
	}
	// Wall instants (Round(0)): a time read back from the state carries no monotonic reading.
	if until, hold := HoldUntil(m.dir, m.cfg.RestartDelay); !hold || until.Round(0).Before(st.LastAlive.Add(delay).Round(0)) {
		t.Fatalf("HoldUntil %s (hold %v) under a lowered delay, want no earlier than %s", until.Format(time.RFC3339Nano), hold,
			st.LastAlive.Add(delay).Format(time.RFC3339Nano))
	}
}
