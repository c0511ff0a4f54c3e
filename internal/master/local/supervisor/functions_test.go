package supervisor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/funclib"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestFunctionLibraryLoadedAtEveryStart: a running master has the current function
// library, and a master restarted after a crash has it again even though the admin had
// deleted it (the deletion was in the AOF): the supervisor loads it at every start.
func TestFunctionLibraryLoadedAtEveryStart(t *testing.T) {
	t.Parallel()
	m := newMaster(t, 500*time.Millisecond)
	pid := m.spawn()
	st := m.waitReady(pid)
	admin := m.admin()
	ctx := context.Background()
	check := func(when string) {
		t.Helper()
		got, err := funclib.Check(ctx, admin)
		if err != nil || !got.Loaded || !got.Current || got.Version != redlock.FunctionLibrary().Version {
			t.Fatalf("%s: library %+v (%v), want the current one loaded", when, got, err)
		}
	}
	check("first start")
	if err := admin.FunctionDelete(ctx, redlock.FunctionLibraryName).Err(); err != nil {
		t.Fatal(err)
	}
	m.killRedis(st.RedisPID)
	m.waitState("status holding", func(s State) bool { return s.Status == StatusHolding })
	after := m.waitReady(pid)
	if after.RedisPID == st.RedisPID {
		t.Fatalf("state %+v: not restarted", after)
	}
	check("after the restart")
}

// TestBusyScriptIsKilled: a script that runs past busy-reply-threshold is killed by the
// supervisor's health check instead of stalling the master.
func TestBusyScriptIsKilled(t *testing.T) {
	t.Parallel()
	m := newMaster(t, time.Second)
	m.waitReady(m.spawn())
	// The admin may EVAL (a lock user may not: see the redlock and audit tests); a client
	// that waits long enough for the script's end.
	c := redis.NewClient(&redis.Options{Addr: m.cfg.Addr, Password: redistest.AdminPassword,
		ContextTimeoutEnabled: true, MaxRetries: -1, ReadTimeout: waitLimit})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	err := c.Eval(ctx, "local i = 0 while true do i = i + 1 end", nil).Err()
	if err == nil || !strings.Contains(err.Error(), "SCRIPT KILL") {
		t.Fatalf("busy script ended with %v, want it killed by SCRIPT KILL", err)
	}
	if err := m.admin().Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after the kill: %v", err)
	}
	waitFor(t, "the kill in supervisor.log", func() bool {
		return strings.Contains(logTail(m.dir, 100000), "killed a script")
	})
}
