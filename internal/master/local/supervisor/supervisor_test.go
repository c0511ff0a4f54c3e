package supervisor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// testMaster is one master dir with a rendered redis.conf and supervisor.json. Every
// supervisor and redis-server pid it sees is stopped by pid in t.Cleanup.
type testMaster struct {
	t        *testing.T
	dir      string
	cfg      Config
	hookFile string
	pids     map[int]bool // supervisor and redis-server pids seen
}

const waitLimit = 30 * time.Second // bound on waiting for something that must happen

func newMaster(t *testing.T, restartDelay time.Duration) *testMaster {
	t.Helper()
	return newMasterIn(t, t.TempDir(), restartDelay)
}

// newMasterIn is newMaster with its data dir at dir.
func newMasterIn(t *testing.T, dir string, restartDelay time.Duration) *testMaster {
	t.Helper()
	// The supervisor restarts the master on this port after each crash: an address of the
	// test's own keeps other tests' processes off it meanwhile.
	host := redistest.Loopback(t)
	port, err := redistest.FreePort(host)
	if err != nil {
		t.Fatal(err)
	}
	return newMasterAt(t, dir, net.JoinHostPort(host, strconv.Itoa(port)), testAddressRecords(t), restartDelay)
}

// testAddressRecords makes an address records dir of the test's own, complete since a year
// before the boot: the test's address is its own (redistest.Loopback), and nothing served
// there that the test did not start. The machine's records (/run) would hold a first start
// on a machine booted less than restart_delay ago (an hour, in some tests), and remember
// earlier tests' masters on a loopback address that a later test claims again.
func testAddressRecords(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "addresses")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	since := fmt.Sprintf("%s %d\n", bootID(), -365*24*time.Hour.Milliseconds())
	if err := os.WriteFile(filepath.Join(dir, AddressRecordsFile), []byte(since), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newMasterAt is a master on addr (host:port) whose supervisor keeps its address records in
// records.
func newMasterAt(t *testing.T, dir, addr, records string, restartDelay time.Duration) *testMaster {
	t.Helper()
	host, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	conf, err := redisconf.Config{Bind: host, Port: port, DataDir: dir,
		AdminPassword: redistest.AdminPassword, LockPassword: redistest.LockPassword,
		LogFile: filepath.Join(dir, "redis.log")}.Render()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "redis.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	server, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not on PATH: run `make deps`")
	}
	m := &testMaster{t: t, dir: dir, hookFile: filepath.Join(dir, "hooks.out"), pids: map[int]bool{}}
	// The hook appends one line per event: what the supervisor told it, then when it ran.
	hook := []string{"/bin/sh", "-c", `echo "$REDLOCK_EVENT|$REDLOCK_MASTER_NAME|$REDLOCK_MASTER_ADDR|$REDLOCK_DATA_DIR|` +
		`$REDLOCK_REDIS_PID|$REDLOCK_RESTART_DELAY_MS|$REDLOCK_RESTART_AT|$(date +%s%N)" >> "$0"`, m.hookFile}
	m.cfg = Config{Name: "m-" + strconv.Itoa(port), ServerBinary: server, ConfigFile: filepath.Join(dir, "redis.conf"),
		DataDir: dir, Addr: net.JoinHostPort(host, strconv.Itoa(port)), AdminPassword: redistest.AdminPassword,
		RestartDelay: restartDelay, Hooks: Hooks{OnCrash: hook, BeforeRestart: hook, AfterRestart: hook},
		AddressRecords: records}
	if err := WriteConfig(dir, m.cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.cleanup)
	return m
}

// cleanup stops everything cleanly if it can, then SIGKILLs by pid whatever this test
// started that is still there (proven by /proc to be ours).
func (m *testMaster) cleanup() {
	if m.t.Failed() {
		m.t.Logf("%s:\n%s", LogFileName, logTail(m.dir, 6000))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := Stop(ctx, m.dir); err != nil {
		m.t.Errorf("cleanup: Stop: %v", err)
	}
	m.state()
	for pid := range m.pids {
		if isSupervisorProcess(pid, m.dir) || isRedisProcess(pid, m.cfg) {
			m.t.Errorf("cleanup: pid %d still running after Stop: killing it", pid)
			_ = syscall.Kill(pid, syscall.SIGCONT)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func (m *testMaster) spawn() int {
	m.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		m.t.Fatal(err)
	}
	pid, err := Spawn(exe, []string{"supervise", m.dir}, m.dir)
	if err != nil {
		m.t.Fatal(err)
	}
	m.pids[pid] = true
	return pid
}

func (m *testMaster) state() State {
	st, err := ReadState(m.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		m.t.Fatal(err)
	}
	if st.RedisPID != 0 {
		m.pids[st.RedisPID] = true
	}
	return st
}

func (m *testMaster) waitReady(supervisorPID int) State {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	st, err := WaitReady(ctx, m.dir, supervisorPID)
	if err != nil {
		m.t.Fatal(err)
	}
	m.pids[st.RedisPID] = true
	if !isRedisProcess(st.RedisPID, m.cfg) {
		m.t.Fatalf("state says redis-server pid %d runs, but /proc disagrees", st.RedisPID)
	}
	return st
}

// waitState polls the state until cond holds.
func (m *testMaster) waitState(what string, cond func(State) bool) State {
	m.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		st := m.state()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("waited for %s; state is %+v\nlog: %s", what, st, logTail(m.dir, 3000))
		}
		time.Sleep(pollInterval)
	}
}

func (m *testMaster) admin() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: m.cfg.Addr, Password: redistest.AdminPassword,
		ContextTimeoutEnabled: true, MaxRetries: -1, DialTimeout: time.Second})
	m.t.Cleanup(func() { _ = c.Close() })
	return c
}

// accepts reports whether anything accepts TCP connections on the master's port.
func (m *testMaster) accepts() bool {
	conn, err := net.DialTimeout("tcp", m.cfg.Addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// portFree reports whether the master's port can be bound again.
func (m *testMaster) portFree() bool {
	l, err := net.Listen("tcp", m.cfg.Addr)
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

func (m *testMaster) killPid(pid int, isOurs func(int) bool) {
	m.t.Helper()
	m.kill(pid, isOurs, false)
}

// kill SIGKILLs pid, which isOurs must recognise, and waits until it is gone. orGone: a
// pid that is not ours any more (or no longer exists) is gone already, killed by someone
// else first; otherwise that fails the test (the pid may have been reused).
func (m *testMaster) kill(pid int, isOurs func(int) bool, orGone bool) {
	m.t.Helper()
	if !isOurs(pid) {
		if !orGone {
			m.t.Fatalf("pid %d is not the process the test means", pid)
		}
	} else if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !(orGone && errors.Is(err, syscall.ESRCH)) {
		m.t.Fatal(err)
	}
	waitFor(m.t, "pid "+strconv.Itoa(pid)+" to be gone", func() bool { return !processAlive(pid) })
}

func (m *testMaster) killRedis(pid int) {
	m.killPid(pid, func(p int) bool { return isRedisProcess(p, m.cfg) })
}

// killRedisOrGone is killRedis for a server the supervisor may kill first (its own tick).
func (m *testMaster) killRedisOrGone(pid int) {
	m.t.Helper()
	m.kill(pid, func(p int) bool { return isRedisProcess(p, m.cfg) }, true)
}

func (m *testMaster) killSupervisor(pid int) {
	m.killPid(pid, func(p int) bool { return isSupervisorProcess(p, m.dir) })
}

func (m *testMaster) set(key, value string) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.admin().Set(ctx, key, value, 0).Err(); err != nil {
		m.t.Fatalf("SET %s: %v", key, err)
	}
}

func (m *testMaster) wantKey(key, value string) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := m.admin().Get(ctx, key).Result()
	if err != nil || got != value {
		m.t.Fatalf("GET %s = %q, %v; want %q: an acknowledged key was lost", key, got, err, value)
	}
}

// gone reports whether pid has left the process table entirely (exited and reaped).
func gone(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return errors.Is(err, os.ErrNotExist)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited for %s", what)
		}
		time.Sleep(pollInterval)
	}
}

// probeHold checks the port until it accepts connections again and returns the moment of
// the first successful connection. Every probe that completed before restartAt must have
// been refused. It sleeps close to restartAt so that the probes right before it count.
func (m *testMaster) probeHold(restartAt time.Time) (firstAccept time.Time, refusedBefore int) {
	m.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		ok := m.accepts()
		done := time.Now()
		if ok {
			if done.Before(restartAt) {
				m.t.Fatalf("port %s accepted a connection at %v, before the restart time %v", m.cfg.Addr,
					done.Format(time.RFC3339Nano), restartAt.Format(time.RFC3339Nano))
			}
			return done, refusedBefore
		}
		if done.Before(restartAt) {
			refusedBefore++
		}
		time.Sleep(pollInterval)
	}
	m.t.Fatalf("port %s never accepted a connection again; log: %s", m.cfg.Addr, logTail(m.dir, 3000))
	return time.Time{}, 0
}

type hookEvent struct {
	event, name, addr, dataDir string
	redisPID                   int
	delayMS                    int64
	restartAt, ranAt           time.Time
}

func (m *testMaster) hookEvents(want int) []hookEvent {
	m.t.Helper()
	var events []hookEvent
	waitFor(m.t, strconv.Itoa(want)+" hook events", func() bool {
		events = readHookEvents(m.t, m.hookFile)
		return len(events) >= want
	})
	return events
}

func readHookEvents(t *testing.T, path string) []hookEvent {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []hookEvent
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Split(sc.Text(), "|")
		if len(p) != 8 {
			t.Fatalf("hook line %q: want 8 fields", sc.Text())
		}
		e := hookEvent{event: p[0], name: p[1], addr: p[2], dataDir: p[3]}
		e.redisPID, _ = strconv.Atoi(p[4])
		e.delayMS, _ = strconv.ParseInt(p[5], 10, 64)
		if p[6] != "" {
			if e.restartAt, err = time.Parse(time.RFC3339Nano, p[6]); err != nil {
				t.Fatalf("REDLOCK_RESTART_AT %q: %v", p[6], err)
			}
		}
		ns, _ := strconv.ParseInt(p[7], 10, 64)
		e.ranAt = time.Unix(0, ns)
		events = append(events, e)
	}
	return events
}

func TestSpawnDetaches(t *testing.T) {
	t.Parallel()
	m := newMaster(t, 2*time.Second)
	pid := m.spawn()
	st := m.waitReady(pid)

	t.Run("Inspect sees both processes", func(t *testing.T) {
		live, err := Inspect(m.dir)
		if err != nil || !live.SupervisorAlive || !live.RedisAlive || live.SupervisorPID != pid {
			t.Fatalf("Inspect = %+v, %v", live, err)
		}
	})
	t.Run("own session", func(t *testing.T) {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		if sid, _ := strconv.Atoi(fields[3]); sid != pid {
			t.Fatalf("supervisor session id = %d, want its own pid %d (setsid)", sid, pid)
		}
	})
	t.Run("stdin is /dev/null, stdout and stderr the log", func(t *testing.T) {
		want := map[int]string{0: os.DevNull, 1: filepath.Join(m.dir, LogFileName), 2: filepath.Join(m.dir, LogFileName)}
		for fd, path := range want {
			got, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(fd))
			if err != nil || got != path {
				t.Errorf("fd %d -> %q (%v), want %s", fd, got, err, path)
			}
		}
	})
	t.Run("redis-server does not inherit the lock", func(t *testing.T) {
		fds, err := os.ReadDir("/proc/" + strconv.Itoa(st.RedisPID) + "/fd")
		if err != nil {
			t.Fatal(err)
		}
		for _, fd := range fds {
			target, _ := os.Readlink("/proc/" + strconv.Itoa(st.RedisPID) + "/fd/" + fd.Name())
			if strings.HasSuffix(target, LockFileName) || strings.HasSuffix(target, StateFileName) {
				t.Errorf("redis-server holds fd %s -> %s", fd.Name(), target)
			}
		}
	})
}

func TestSupervisorOutlivesTheProcessThatSpawnedIt(t *testing.T) {
	t.Parallel()
	m := newMaster(t, 2*time.Second)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(exe, "spawn-then-exit", m.dir).Output()
	if err != nil {
		t.Fatalf("spawn-then-exit: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("spawn-then-exit printed %q", out)
	}
	m.pids[pid] = true
	st := m.waitReady(pid)
	if st.SupervisorPID != pid {
		t.Fatalf("state names supervisor %d, want %d", st.SupervisorPID, pid)
	}
	m.set("k", "v")
}

func TestCleanStop(t *testing.T) {
	t.Parallel()
	// A delay no test waits out: any hold would show as a WaitReady timeout.
	m := newMaster(t, time.Hour)
	pid := m.spawn()
	st := m.waitReady(pid)
	if st.Restarts != 0 || st.LastAlive.IsZero() {
		t.Fatalf("fresh master state %+v: want no restarts and a LastAlive", st)
	}
	m.set("k", "v1")

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := Stop(ctx, m.dir); err != nil {
		t.Fatal(err)
	}
	t.Run("marker written", func(t *testing.T) {
		if !CleanStop(m.dir) {
			t.Fatal("no clean marker after Stop")
		}
		if until, hold := HoldUntil(m.dir, m.cfg.RestartDelay); hold {
			t.Fatalf("HoldUntil = %v after a clean stop, want no hold", until)
		}
	})
	t.Run("state stopped", func(t *testing.T) {
		got := m.state()
		if got.Status != StatusStopped || got.RedisPID != 0 || got.LastError != "" {
			t.Fatalf("state after Stop: %+v", got)
		}
	})
	t.Run("no process left", func(t *testing.T) {
		waitFor(t, "supervisor and redis-server reaped", func() bool { return gone(pid) && gone(st.RedisPID) })
	})
	t.Run("port free", func(t *testing.T) {
		if !m.portFree() {
			t.Fatalf("port of %s still bound", m.cfg.Addr)
		}
	})
	t.Run("restart needs no delay and keeps the data", func(t *testing.T) {
		pid2 := m.spawn()
		st2 := m.waitReady(pid2)
		if st2.Restarts != 0 || !st2.RestartAt.IsZero() {
			t.Fatalf("state after a start from a clean stop: %+v; want no hold and no restart counted", st2)
		}
		if CleanStop(m.dir) {
			t.Fatal("clean marker still present while redis-server runs")
		}
		m.wantKey("k", "v1")
	})
	t.Run("Stop with nothing running is a no-op", func(t *testing.T) {
		if err := Stop(ctx, m.dir); err != nil {
			t.Fatal(err)
		}
		if err := Stop(ctx, m.dir); err != nil {
			t.Fatalf("second Stop: %v", err)
		}
	})
}

func TestCrashIsHeldForTheRestartDelay(t *testing.T) {
	t.Parallel()
	const delay = 2 * time.Second
	m := newMaster(t, delay)
	pid := m.spawn()
	st := m.waitReady(pid)
	m.set("acknowledged", "before-the-crash")

	beforeKill := time.Now()
	m.killRedis(st.RedisPID)
	held := m.waitState("status holding", func(s State) bool { return s.Status == StatusHolding })

	t.Run("restart time is the observed exit plus delay", func(t *testing.T) {
		if !held.RestartAt.Equal(held.LastAlive.Add(delay)) {
			t.Fatalf("RestartAt %v, want LastAlive %v + %v", held.RestartAt, held.LastAlive, delay)
		}
		// The supervisor saw the exit (it is the parent): the hold counts from then, which is
		// after the kill was sent, not from the last health-check tick before it.
		if held.LastAlive.Before(beforeKill) {
			t.Fatalf("LastAlive %v: want the observed exit, after the kill was sent (%v)", held.LastAlive, beforeKill)
		}
		if held.RedisPID != 0 || !strings.Contains(held.LastError, "signal") {
			t.Fatalf("holding state %+v: want no redis pid and the signal in LastError", held)
		}
	})
	firstAccept, refused := m.probeHold(held.RestartAt)
	t.Run("port refused while holding", func(t *testing.T) {
		if refused == 0 {
			t.Fatal("no probe completed during the hold")
		}
	})
	after := m.waitReady(pid)
	t.Run("restarted under the same supervisor", func(t *testing.T) {
		if after.SupervisorPID != pid || after.RedisPID == st.RedisPID || after.Restarts != 1 {
			t.Fatalf("state after restart %+v; want supervisor %d, a new redis pid, 1 restart", after, pid)
		}
		if firstAccept.Before(held.RestartAt) {
			t.Fatalf("first accept %v before RestartAt %v", firstAccept, held.RestartAt)
		}
	})
	t.Run("acknowledged keys survive", func(t *testing.T) {
		m.wantKey("acknowledged", "before-the-crash")
	})
	t.Run("hooks ran in order with the right env", func(t *testing.T) {
		events := m.hookEvents(3)
		if len(events) != 3 {
			t.Fatalf("hook events %+v, want exactly crash, before_restart, after_restart", events)
		}
		wantPID := []int{st.RedisPID, st.RedisPID, after.RedisPID}
		for i, want := range []string{"crash", "before_restart", "after_restart"} {
			e := events[i]
			if e.event != want || e.name != m.cfg.Name || e.addr != m.cfg.Addr || e.dataDir != m.dir ||
				e.redisPID != wantPID[i] || e.delayMS != delay.Milliseconds() || !e.restartAt.Equal(held.RestartAt) {
				t.Errorf("hook event %d = %+v; want %s for redis pid %d, restart at %v", i, e, want, wantPID[i], held.RestartAt)
			}
		}
		if events[1].ranAt.Before(held.RestartAt) {
			t.Errorf("before_restart ran at %v, before RestartAt %v", events[1].ranAt, held.RestartAt)
		}
	})
}

func TestSecondSupervisorRefuses(t *testing.T) {
	t.Parallel()
	m := newMaster(t, 2*time.Second)
	pid := m.spawn()
	st := m.waitReady(pid)

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	second := exec.CommandContext(ctx, exe, "supervise", m.dir)
	out, err := second.CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != ExitLocked {
		t.Fatalf("second supervisor: %v, want exit code %d; output %s", err, ExitLocked, out)
	}
	if !strings.Contains(string(out), "pid "+strconv.Itoa(pid)) {
		t.Fatalf("refusal %q does not name the running supervisor pid %d", out, pid)
	}
	if now := m.state(); now.SupervisorPID != pid || now.RedisPID != st.RedisPID || now.Status != StatusRunning {
		t.Fatalf("state after the refused start %+v: the first supervisor must be untouched", now)
	}
}

func TestSupervisorAndMasterKilledTogetherHoldOnNextStart(t *testing.T) {
	t.Parallel()
	const delay = 2 * time.Second
	m := newMaster(t, delay)
	pid := m.spawn()
	st := m.waitReady(pid)
	m.set("acknowledged", "1")

	m.killSupervisor(pid)
	m.killRedis(st.RedisPID)

	until, hold := HoldUntil(m.dir, delay)
	if !hold {
		t.Fatal("HoldUntil says no wait for a master that died with its supervisor")
	}
	pid2 := m.spawn()
	held := m.waitState("the new supervisor holding", func(s State) bool {
		return s.SupervisorPID == pid2 && s.Status == StatusHolding
	})
	if held.RestartAt.Before(until) {
		t.Fatalf("new supervisor restarts at %v, before HoldUntil's %v", held.RestartAt, until)
	}
	firstAccept, refused := m.probeHold(held.RestartAt)
	if refused == 0 {
		t.Fatal("no probe completed during the hold")
	}
	after := m.waitReady(pid2)
	if firstAccept.Before(until) || after.Restarts != 1 {
		t.Fatalf("first accept %v (hold until %v), state %+v", firstAccept, until, after)
	}
	m.wantKey("acknowledged", "1")
	events := m.hookEvents(3)
	for i, want := range []string{"crash", "before_restart", "after_restart"} {
		if events[i].event != want || !events[i].restartAt.Equal(held.RestartAt) {
			t.Errorf("hook event %d = %+v, want %s with restart at %v", i, events[i], want, held.RestartAt)
		}
	}
}

func TestSupervisorKilledMasterSurvives(t *testing.T) {
	t.Parallel()
	t.Run("Stop shuts the orphan down cleanly", func(t *testing.T) {
		t.Parallel()
		m := newMaster(t, time.Hour)
		pid := m.spawn()
		st := m.waitReady(pid)
		m.set("k", "v")
		m.killSupervisor(pid)
		if live, err := Inspect(m.dir); err != nil || live.SupervisorAlive || !live.RedisAlive || live.RedisPID != st.RedisPID {
			t.Fatalf("Inspect = %+v, %v: want the supervisor dead and redis-server %d serving on", live, err, st.RedisPID)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := Stop(ctx, m.dir); err != nil {
			t.Fatal(err)
		}
		if processAlive(st.RedisPID) || !m.portFree() {
			t.Fatal("redis-server still runs after Stop")
		}
		if !CleanStop(m.dir) || m.state().Status != StatusStopped {
			t.Fatalf("after Stop of an orphan: marker %v, state %+v", CleanStop(m.dir), m.state())
		}
		pid2 := m.spawn()
		m.waitReady(pid2) // a delay of an hour: only a start without hold gets here
		m.wantKey("k", "v")
	})
	t.Run("Stop falls back to SIGTERM when SHUTDOWN is not accepted", func(t *testing.T) {
		t.Parallel()
		m := newMaster(t, time.Hour)
		pid := m.spawn()
		st := m.waitReady(pid)
		m.killSupervisor(pid)
		m.cfg.AdminPassword = "no-longer-the-password" // SHUTDOWN now gets WRONGPASS
		if err := WriteConfig(m.dir, m.cfg); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := Stop(ctx, m.dir); err != nil {
			t.Fatal(err)
		}
		if processAlive(st.RedisPID) || !CleanStop(m.dir) {
			t.Fatalf("after Stop: redis alive %v, clean marker %v", processAlive(st.RedisPID), CleanStop(m.dir))
		}
	})
	t.Run("a Stop cut short counts the orphan alive until now", func(t *testing.T) {
		t.Parallel()
		m := newMaster(t, time.Hour)
		pid := m.spawn()
		st := m.waitReady(pid)
		m.killSupervisor(pid)
		before := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // the stop cannot finish: whether the orphan stopped cleanly is unknown
		if err := Stop(ctx, m.dir); err == nil {
			t.Fatal("Stop with a cancelled context reported success")
		}
		after := m.state()
		if after.LastAlive.Before(before) || after.HoldFloor.Before(after.LastAlive.Add(time.Hour)) {
			t.Fatalf("state %+v: want LastAlive >= %v (the orphan may have served until the stop) and a floor an hour later",
				after, before)
		}
		// A Stop given no time signals nothing: the state still names that server.
		if after.RedisPID != st.RedisPID {
			t.Fatalf("state %+v names redis pid %d, want %d or 0", after, after.RedisPID, st.RedisPID)
		}
		if CleanStop(m.dir) {
			// Nothing proved a clean stop.
			t.Fatal("clean marker written after a stop cut short")
		}
		if until, hold := HoldUntil(m.dir, time.Second); !hold || until.Before(before.Add(time.Hour)) {
			t.Fatalf("HoldUntil = %v, %v; want a hold until at least %v", until, hold, before.Add(time.Hour))
		}
		// Stop again with time: it finds the orphan by the recorded pid. Should the server
		// end on its own between this Stop's process check and its SHUTDOWN, nothing proves
		// a clean stop (its exit code is not ours to read), and Stop must say so and write
		// no marker.
		ctx2, cancel2 := context.WithTimeout(context.Background(), waitLimit)
		defer cancel2()
		if err := Stop(ctx2, m.dir); err != nil {
			if !strings.Contains(err.Error(), "not known to be a clean stop") || isRedisProcess(st.RedisPID, m.cfg) {
				t.Fatal(err)
			}
			if CleanStop(m.dir) {
				t.Fatalf("Stop failed (%v) but wrote the clean marker", err)
			}
		}
		waitFor(t, "the orphan to exit", func() bool { return !isRedisProcess(st.RedisPID, m.cfg) })
	})
	t.Run("a new supervisor stops the orphan cleanly and starts without delay", func(t *testing.T) {
		t.Parallel()
		m := newMaster(t, time.Hour)
		pid := m.spawn()
		st := m.waitReady(pid)
		m.set("k", "v")
		m.killSupervisor(pid)
		if until, hold := HoldUntil(m.dir, time.Hour); hold {
			t.Fatalf("HoldUntil = %v while the orphan still runs; it will be stopped cleanly", until)
		}
		pid2 := m.spawn()
		after := m.waitReady(pid2)
		if after.RedisPID == st.RedisPID || processAlive(st.RedisPID) || after.Restarts != 0 {
			t.Fatalf("state %+v: want the orphan %d replaced, no restart counted", after, st.RedisPID)
		}
		m.wantKey("k", "v")
	})
}

func TestPausedMasterIsNotRestarted(t *testing.T) {
	t.Parallel()
	const delay = 1500 * time.Millisecond
	m := newMaster(t, delay)
	pid := m.spawn()
	st := m.waitReady(pid)
	if err := syscall.Kill(st.RedisPID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(st.RedisPID, syscall.SIGCONT) })
	pausedAt := time.Now()

	// Watch past the moment a crash would have been restarted.
	var frozen State
	for time.Since(pausedAt) < delay+2*stateInterval {
		frozen = m.state()
		if frozen.Status != StatusRunning || frozen.RedisPID != st.RedisPID || frozen.Restarts != 0 {
			t.Fatalf("paused master: state became %+v", frozen)
		}
		if !isRedisProcess(st.RedisPID, m.cfg) {
			t.Fatal("the paused redis-server was killed")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !frozen.LastAlive.Before(pausedAt.Add(pingTimeout + pingInterval)) {
		t.Fatalf("LastAlive %v kept advancing after the pause at %v", frozen.LastAlive, pausedAt)
	}
	if events := readHookEvents(t, m.hookFile); len(events) != 0 {
		t.Fatalf("hooks ran for a pause: %+v", events)
	}

	if err := syscall.Kill(st.RedisPID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumedAt := time.Now()
	back := m.waitState("LastAlive after the resume", func(s State) bool { return s.LastAlive.After(resumedAt) })
	if back.RedisPID != st.RedisPID || back.Status != StatusRunning || back.Restarts != 0 {
		t.Fatalf("resumed master state %+v", back)
	}

	t.Run("Stop of a paused master is clean", func(t *testing.T) {
		if err := syscall.Kill(st.RedisPID, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		defer cancel()
		if err := Stop(ctx, m.dir); err != nil {
			t.Fatal(err)
		}
		if processAlive(st.RedisPID) || !CleanStop(m.dir) {
			t.Fatalf("after Stop: redis alive %v, clean marker %v", processAlive(st.RedisPID), CleanStop(m.dir))
		}
	})
}

func TestMasterThatCannotStartIsHeldBetweenAttempts(t *testing.T) {
	t.Parallel()
	const delay = 1500 * time.Millisecond
	m := newMaster(t, delay)
	// A config redis-server refuses: it exits 1 at once. (A port something else holds is
	// not this case: the supervisor waits that server out, see TestHoldScenarios.)
	good, err := os.ReadFile(m.cfg.ConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.cfg.ConfigFile, append(append([]byte{}, good...), "no-such-directive yes\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	pid := m.spawn()
	held := m.waitState("holding after the failed start", func(s State) bool { return s.Status == StatusHolding })
	if !strings.Contains(held.LastError, "exited with code 1") || !held.RestartAt.Equal(held.LastAlive.Add(delay)) {
		t.Fatalf("state %+v: want the exit code in LastError and a full delay from the start attempt", held)
	}
	if err := os.WriteFile(m.cfg.ConfigFile, good, 0o600); err != nil {
		t.Fatal(err)
	}
	after := m.waitReady(pid)
	if after.Restarts < 1 {
		t.Fatalf("state %+v: want the successful start counted as a restart", after)
	}
}

func TestFailingHooksDoNotBlockTheRestart(t *testing.T) {
	t.Parallel()
	m := newMaster(t, 1500*time.Millisecond)
	m.cfg.Hooks = Hooks{OnCrash: []string{filepath.Join(m.dir, "no-such-hook")},
		BeforeRestart: []string{"/bin/sh", "-c", "exit 7"}, AfterRestart: m.cfg.Hooks.AfterRestart}
	if err := WriteConfig(m.dir, m.cfg); err != nil {
		t.Fatal(err)
	}
	pid := m.spawn()
	st := m.waitReady(pid)
	m.killRedis(st.RedisPID)
	after := m.waitState("running again", func(s State) bool { return s.Status == StatusRunning && s.RedisPID != st.RedisPID })
	if after.Restarts != 1 {
		t.Fatalf("state %+v", after)
	}
	if events := m.hookEvents(1); events[0].event != "after_restart" {
		t.Fatalf("hook events %+v: want after_restart to run after the failing hooks", events)
	}
	if log := logTail(m.dir, 6000); strings.Count(log, "hook failed") != 2 {
		t.Fatalf("want both failing hooks logged:\n%s", log)
	}
}

func TestAdminShutdownIsClean(t *testing.T) {
	t.Parallel()
	m := newMaster(t, time.Hour)
	pid := m.spawn()
	st := m.waitReady(pid)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.admin().Shutdown(ctx).Err(); err != nil {
		t.Fatalf("SHUTDOWN: %v", err)
	}
	waitFor(t, "the supervisor to exit", func() bool { return gone(pid) && gone(st.RedisPID) })
	if got := m.state(); !CleanStop(m.dir) || got.Status != StatusStopped || got.LastError != "" {
		t.Fatalf("after admin SHUTDOWN: marker %v, state %+v", CleanStop(m.dir), got)
	}
	if events := readHookEvents(t, m.hookFile); len(events) != 0 {
		t.Fatalf("hooks ran for a clean shutdown: %+v", events)
	}
}

// A longer delay loaded with SIGHUP applies at once (a shorter one: see hold_test.go).
func TestReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	m := newMaster(t, 500*time.Millisecond)
	pid := m.spawn()
	st := m.waitReady(pid)

	const newDelay = 2 * time.Second
	m.cfg.RestartDelay = newDelay
	if err := WriteConfig(m.dir, m.cfg); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reload in the log", func() bool { return strings.Contains(logTail(m.dir, 4000), "config reloaded") })
	m.killRedis(st.RedisPID)
	held := m.waitState("holding", func(s State) bool { return s.Status == StatusHolding })
	if !held.RestartAt.Equal(held.LastAlive.Add(newDelay)) {
		t.Fatalf("RestartAt %v, want LastAlive %v + the reloaded delay %v", held.RestartAt, held.LastAlive, newDelay)
	}
	m.probeHold(held.RestartAt)
	m.waitReady(pid)
}

func TestStopWhileHoldingLeavesNoMarker(t *testing.T) {
	t.Parallel()
	m := newMaster(t, time.Hour)
	pid := m.spawn()
	st := m.waitReady(pid)
	m.killRedis(st.RedisPID)
	held := m.waitState("holding", func(s State) bool { return s.Status == StatusHolding })
	// Two reads of one record: the same wall instant (each read gives it this process's
	// monotonic reading afresh, a few ns apart).
	if until, hold := HoldUntil(m.dir, time.Hour); !hold || !until.Round(0).Equal(held.RestartAt.Round(0)) {
		t.Fatalf("HoldUntil = %v, %v while the supervisor holds until %v: they must agree", until, hold, held.RestartAt)
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := Stop(ctx, m.dir); err != nil {
		t.Fatal(err)
	}
	if processAlive(pid) {
		t.Fatal("supervisor still runs after Stop")
	}
	if CleanStop(m.dir) {
		t.Fatal("Stop wrote a clean marker for a master that crashed")
	}
	until, hold := HoldUntil(m.dir, time.Hour)
	if !hold || !until.Round(0).Equal(held.RestartAt.Round(0)) {
		t.Fatalf("HoldUntil = %v, %v; want the crash's hold until %v", until, hold, held.RestartAt)
	}
}

func TestStopNeverSignalsAnUnrelatedPid(t *testing.T) {
	t.Parallel()
	m := newMaster(t, time.Hour)
	// A process that took over pids the state still names.
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = sleeper.Wait(); close(done) }()
	t.Cleanup(func() { _ = sleeper.Process.Kill(); <-done })
	pid := sleeper.Process.Pid
	if err := writeState(m.dir, State{SupervisorPID: pid, RedisPID: pid, Status: StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.dir, LockFileName), []byte(strconv.Itoa(pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if live, err := Inspect(m.dir); err != nil || live.SupervisorAlive || live.RedisAlive {
		t.Fatalf("Inspect = %+v, %v: pid %d (sleep) is neither supervisor nor redis-server", live, err, pid)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := Stop(ctx, m.dir); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("Stop signalled a pid that is not a supervisor or redis-server of this dir")
	case <-time.After(200 * time.Millisecond):
	}
	if CleanStop(m.dir) {
		t.Fatal("Stop wrote a clean marker without stopping anything")
	}
}

func TestAnyReplyCountsAsAliveAndReloadFixesThePassword(t *testing.T) {
	t.Parallel()
	m := newMaster(t, time.Hour)
	right := m.cfg.AdminPassword
	m.cfg.AdminPassword = "not-the-admin-password"
	if err := WriteConfig(m.dir, m.cfg); err != nil {
		t.Fatal(err)
	}
	pid := m.spawn()
	first := m.waitState("redis-server started", func(s State) bool { return s.SupervisorPID == pid && s.RedisPID != 0 })
	// WRONGPASS is an answer: the server is up and may serve others, so the hold must count
	// from it. But it is not ready as far as the supervisor can tell.
	later := m.waitState("LastAlive advancing on error replies", func(s State) bool { return s.LastAlive.After(first.LastAlive) })
	if later.Status != StatusStarting {
		t.Fatalf("status %q with a wrong admin password: want %q until a PONG", later.Status, StatusStarting)
	}
	m.cfg.AdminPassword = right
	if err := WriteConfig(m.dir, m.cfg); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if st := m.waitReady(pid); st.RedisPID != first.RedisPID {
		t.Fatalf("redis-server was restarted (%d -> %d) for a password reload", first.RedisPID, st.RedisPID)
	}
}

// A supervisor spawned a moment ago over a state that still names its dead predecessor is
// stopped by its own pid, whatever it has written yet; Running then reports nothing left.
func TestStopSupervisorByPid(t *testing.T) {
	t.Parallel()
	m := newMaster(t, time.Hour)
	pid := m.spawn()
	st := m.waitReady(pid)
	m.killRedis(st.RedisPID)
	m.waitState("holding", func(s State) bool { return s.Status == StatusHolding })
	m.killSupervisor(pid)

	pid2 := m.spawn() // holds for an hour: only a stop ends it
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := StopSupervisor(ctx, m.dir, pid2); err != nil {
		t.Fatal(err)
	}
	if isSupervisorProcess(pid2, m.dir) {
		t.Fatalf("supervisor %d still runs after StopSupervisor", pid2)
	}
	if left := Running(m.dir); len(left) != 0 {
		t.Fatalf("Running = %v after StopSupervisor, want nothing", left)
	}
	if CleanStop(m.dir) {
		t.Fatal("a clean marker for a master that crashed")
	}
}

func TestRunningReportsWhatRuns(t *testing.T) {
	t.Parallel()
	m := newMaster(t, time.Hour)
	if left := Running(m.dir); len(left) != 0 {
		t.Fatalf("Running = %v before anything started", left)
	}
	pid := m.spawn()
	st := m.waitReady(pid)
	if got := Running(m.dir); len(got) != 2 || got[0] != pid || got[1] != st.RedisPID {
		t.Fatalf("Running = %v, want supervisor %d and redis-server %d", got, pid, st.RedisPID)
	}
	m.killSupervisor(pid)
	if got := Running(m.dir); len(got) != 1 || got[0] != st.RedisPID {
		t.Fatalf("Running = %v after the supervisor was killed, want the orphan %d", got, st.RedisPID)
	}
}
