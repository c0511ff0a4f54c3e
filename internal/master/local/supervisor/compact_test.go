package supervisor

import (
	"context"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// releaseUnlogged takes key as the lock user (PX 60000) and releases it the way the lock
// library does: applied in memory, not written to the AOF.
func (m *testMaster) releaseUnlogged(key string) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lock := redis.NewClient(&redis.Options{Addr: m.cfg.Addr, Username: redistest.LockUser,
		Password: redistest.LockPassword, ContextTimeoutEnabled: true, MaxRetries: -1, DialTimeout: time.Second})
	defer lock.Close()
	if err := lock.Set(ctx, key, "token", time.Minute).Err(); err != nil {
		m.t.Fatalf("SET %s PX 60000: %v", key, err)
	}
	// The kit's release function (the supervisor loaded the library at the start): args
	// token, release channel ("" = none), message.
	n, err := lock.FCall(ctx, redlock.FunctionLibrary().Function("release"), []string{key}, "token", "", "token").Int()
	if err != nil || n != 1 {
		m.t.Fatalf("unlogged DEL %s = %d, %v; want 1", key, n, err)
	}
}

func (m *testMaster) wantNoKey(key string) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := m.admin().Exists(ctx, key).Result()
	if err != nil || n != 0 {
		m.t.Fatalf("EXISTS %s = %d, %v after a clean restart; want 0: a released key came back from the AOF", key, n, err)
	}
}

func (m *testMaster) adminDo(args ...any) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.admin().Do(ctx, args...).Err(); err != nil {
		m.t.Fatalf("%v: %v", args, err)
	}
}

func (m *testMaster) stopWithin(limit time.Duration) {
	m.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	started := time.Now()
	if err := Stop(ctx, m.dir); err != nil {
		m.t.Fatal(err)
	}
	if took := time.Since(started); took > limit {
		m.t.Fatalf("Stop took %v, want at most %v", took, limit)
	}
	if !CleanStop(m.dir) {
		m.t.Fatalf("no clean marker after Stop; log:\n%s", logTail(m.dir, 3000))
	}
}

// A clean stop followed by an immediate start must not bring back a key whose release was
// not logged to the AOF, on every path that stops a master cleanly.
func TestCleanStopDropsUnloggedReleases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// orphan: the supervisor is killed first; newSupervisor: the next supervisor, not
		// Stop, stops the orphan.
		orphan, newSupervisor bool
		// rewriteRunning: a rewrite forked before the release is still running at the stop;
		// its result would keep the key.
		rewriteRunning bool
	}{
		{name: "Stop of the supervisor"},
		{name: "Stop of an orphan", orphan: true},
		{name: "a new supervisor stops the orphan", orphan: true, newSupervisor: true},
		{name: "a rewrite started before the release is not enough", rewriteRunning: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMaster(t, time.Hour) // a delay no test waits out: only a start without hold is ready in time
			pid := m.spawn()
			m.waitReady(pid)
			m.set("kept", "v")
			if tc.rewriteRunning {
				// 0.4 s per key saved: the rewrite forked now is still running at the stop.
				m.adminDo("config", "set", "rdb-key-save-delay", "400000")
				m.adminDo("set", "lock", "token", "px", "60000")
				m.adminDo("bgrewriteaof")
			}
			m.releaseUnlogged("lock")
			if tc.orphan {
				m.killSupervisor(pid)
			}
			if tc.newSupervisor {
				m.waitReady(m.spawn())
			} else {
				m.stopWithin(compactTimeout + 3*time.Second)
				m.waitReady(m.spawn())
			}
			m.wantKey("kept", "v")
			m.wantNoKey("lock")
			if log := logTail(m.dir, 6000); !strings.Contains(log, "AOF rewritten before the clean stop") {
				t.Fatalf("no rewrite logged:\n%s", log)
			}
		})
	}
}

// blackHole accepts connections on loopback and never answers.
func blackHole(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

// When the rewrite cannot be done, the clean stop goes on as without it, within the bound.
func TestStopCompletesWhenTheRewriteCannot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		orphan bool
		// breakIt makes the rewrite fail or hang; the master keeps running.
		breakIt func(m *testMaster)
	}{
		{name: "wrong admin password", breakIt: func(m *testMaster) {
			m.cfg.AdminPassword = "not-the-admin-password"
		}},
		{name: "server does not answer", breakIt: func(m *testMaster) {
			m.cfg.Addr = blackHole(m.t)
		}},
		{name: "rewrite too slow", breakIt: func(m *testMaster) {
			m.adminDo("config", "set", "rdb-key-save-delay", "100000000") // 100 s per key
		}},
		{name: "rewrite too slow, orphan", orphan: true, breakIt: func(m *testMaster) {
			m.adminDo("config", "set", "rdb-key-save-delay", "100000000")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := newMaster(t, time.Hour)
			pid := m.spawn()
			st := m.waitReady(pid)
			m.set("kept", "v")
			if tc.orphan {
				m.killSupervisor(pid)
			}
			right := m.cfg
			tc.breakIt(m)
			if m.cfg.Addr != right.Addr || m.cfg.AdminPassword != right.AdminPassword {
				if err := WriteConfig(m.dir, m.cfg); err != nil {
					t.Fatal(err)
				}
				if !tc.orphan {
					if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
						t.Fatal(err)
					}
					waitFor(t, "the reload in the log", func() bool { return strings.Contains(logTail(m.dir, 4000), "config reloaded") })
				}
			}
			m.stopWithin(compactTimeout + 3*time.Second)
			if processAlive(st.RedisPID) {
				t.Fatal("redis-server still runs after Stop")
			}
			if log := logTail(m.dir, 6000); !strings.Contains(log, "AOF not rewritten before the clean stop") {
				t.Fatalf("the failed rewrite is not logged:\n%s", log)
			}
			// The restart (with the working config) keeps the data.
			m.cfg = right
			if err := WriteConfig(m.dir, m.cfg); err != nil {
				t.Fatal(err)
			}
			m.waitReady(m.spawn())
			m.wantKey("kept", "v")
		})
	}
}
