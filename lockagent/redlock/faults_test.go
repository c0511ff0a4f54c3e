package redlock_test

import (
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// plainClients are lock-user clients with go-redis defaults: no ContextTimeoutEnabled, so
// go-redis itself would wait its 3 s read timeout on a stopped master. The library must
// bound its calls on its own.
func plainClients(t *testing.T, cl *redistest.Cluster) []redis.UniversalClient {
	t.Helper()
	var out []redis.UniversalClient
	for _, m := range cl.Masters {
		r := redis.NewClient(&redis.Options{Addr: m.Addr, Username: redistest.LockUser, Password: redistest.LockPassword, MaxRetries: -1})
		t.Cleanup(func() { _ = r.Close() })
		out = append(out, r)
	}
	return out
}

func resumeOnCleanup(t *testing.T, masters ...*redistest.Master) {
	t.Cleanup(func() {
		for _, m := range masters {
			_ = m.Resume()
		}
	})
}

// TestMasterFaults: Liveness B: acquire and release work while a
// majority is up, and fail cleanly (typed error, no key left behind) when it is not.
func TestMasterFaults(t *testing.T) {
	ctx := context.Background()

	t.Run("a SIGKILLed minority: acquire and release still work", func(t *testing.T) {
		cl := redistest.Start(t, redistest.Options{Masters: 5})
		for _, m := range cl.Masters[:2] {
			if err := m.Kill(); err != nil {
				t.Fatal(err)
			}
		}
		// At its first attempt: a node timeout no live master misses on a loaded machine, so
		// that the two dead masters are the only failures.
		c := newClient(t, cl, redlock.Options{NodeTimeout: testNodeTimeout})
		l, err := c.TryAcquire(ctx, "kill-minority", 5*time.Second)
		if err != nil {
			t.Fatalf("TryAcquire with a SIGKILLed minority: %v", err)
		}
		if n := holders(t, cl, "kill-minority", l.Token()); n != 3 {
			t.Errorf("key on %d live masters, want 3", n)
		}
		if l.Fence() == 0 {
			t.Error("no fencing token with a live majority")
		}
		if err := l.Release(ctx); err != nil {
			t.Errorf("Release: %v", err)
		}
		if n := keysOn(t, cl, "kill-minority"); n != 0 {
			t.Errorf("key left on %d live masters after release", n)
		}
	})

	t.Run("a SIGSTOPped minority: acquire returns, bounded by the node timeout, with validity left", func(t *testing.T) {
		cl := redistest.Start(t, redistest.Options{Masters: 5})
		c, err := redlock.New(plainClients(t, cl), redlock.Options{NodeTimeout: testNodeTimeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		for _, m := range cl.Masters[3:] {
			if err := m.Pause(); err != nil {
				t.Fatal(err)
			}
		}
		resumeOnCleanup(t, cl.Masters[3:]...)
		const ttl = 2 * time.Second
		for i := 0; i < 3; i++ { // repeatedly: the stopped masters' connections stay stuck
			start := time.Now()
			l, err := c.TryAcquire(ctx, "stop-minority", ttl)
			if err != nil {
				t.Fatalf("attempt %d: TryAcquire with 2 of 5 stopped: %v", i, err)
			}
			// The validity arithmetic is the bound: a lock that took its whole TTL would
			// have been refused.
			if took := time.Since(start); took >= ttl || !time.Now().Before(l.Deadline()) {
				t.Fatalf("attempt %d: acquire took %v of a %v TTL", i, took, ttl)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("attempt %d: Release with 2 of 5 stopped: %v", i, err)
			}
		}
	})

	t.Run("a SIGKILLed majority: UnavailableError and no key left on the live masters", func(t *testing.T) {
		cl := redistest.Start(t, redistest.Options{Masters: 5})
		for _, m := range cl.Masters[2:] {
			if err := m.Kill(); err != nil {
				t.Fatal(err)
			}
		}
		c, err := redlock.New(lockClients(t, cl), redlock.Options{NodeTimeout: testNodeTimeout})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.TryAcquire(ctx, "kill-majority", 5*time.Second)
		// A live master that a busy machine kept past the node timeout is listed too; that
		// attempt says nothing about which masters count as failed: try again.
		for try := 0; try < 10 && liveTimedOut(err, 2); try++ {
			t.Logf("try %d: a live master timed out: %v", try, err)
			_, err = c.TryAcquire(ctx, "kill-majority", 5*time.Second)
		}
		var unavailable *redlock.UnavailableError
		if !errors.As(err, &unavailable) || !errors.Is(err, redlock.ErrUnavailable) {
			t.Fatalf("TryAcquire with 3 of 5 dead: %v, want *UnavailableError", err)
		}
		if len(unavailable.Errors) != 3 || unavailable.Quorum != 3 {
			t.Errorf("UnavailableError lists %d failed masters (quorum %d), want 3 (3): %v", len(unavailable.Errors), unavailable.Quorum, err)
		}
		if errors.Is(err, redlock.ErrTaken) {
			t.Error("an outage reported as ErrTaken")
		}
		_ = c.Close() // flushes the cleanup releases
		if n := keysOn(t, cl, "kill-majority"); n != 0 {
			t.Errorf("failed acquire left the key on %d live masters", n)
		}
	})

	t.Run("a SIGSTOPped majority: UnavailableError, and after resuming no key anywhere", func(t *testing.T) {
		cl := redistest.Start(t, redistest.Options{Masters: 5})
		c, err := redlock.New(plainClients(t, cl), redlock.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range cl.Masters[:3] {
			if err := m.Pause(); err != nil {
				t.Fatal(err)
			}
		}
		resumeOnCleanup(t, cl.Masters[:3]...)
		_, err = c.TryAcquire(ctx, "stop-majority", 5*time.Second)
		if !errors.Is(err, redlock.ErrUnavailable) {
			t.Fatalf("TryAcquire with 3 of 5 stopped: %v, want ErrUnavailable", err)
		}
		for _, m := range cl.Masters[:3] {
			_ = m.Resume()
		}
		_ = c.Close() // waits for the stopped masters' replies, then the releases behind them
		if n := keysOn(t, cl, "stop-majority"); n != 0 {
			t.Errorf("key left on %d masters: the SETs the stopped masters ran late were not released", n)
		}
	})

	t.Run("release after a master restart (script cache gone) works there too", func(t *testing.T) {
		cl := redistest.Start(t, redistest.Options{Masters: 5})
		// The EVAL user: the library runs its scripts with EVALSHA there (the lock user has
		// FCALL of the function library instead, which a restart keeps). A node timeout of
		// seconds: the release must reach the restarted master in its own round (EVALSHA,
		// NOSCRIPT, then EVAL), which a reconnect on a busy machine can outlast.
		c, err := redlock.New(evalClients(t, cl), redlock.Options{NodeTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		l := mustAcquire(t, c, "restart", 10*time.Second)
		if err := l.Extend(ctx, 10*time.Second); err != nil { // scripts now cached everywhere
			t.Fatal(err)
		}
		// Acquire and Extend return at the majority: restart a master that holds the key and
		// that the Extend reached (it cached the scripts there, SCRIPT LOAD then EVALSHA), so
		// that the client sends EVALSHA to it after the restart. A master the Extend had not
		// reached yet (a busy machine) would get the SCRIPT LOADs first, and no NOSCRIPT.
		releaseSHA := fmt.Sprintf("%x", sha1.Sum([]byte(redlock.ReleaseScript(false))))
		var m *redistest.Master
		waitUntil(t, "a master holding the key with the scripts cached by the Extend", func() bool {
			for _, cand := range cl.Masters {
				cached := cand.Admin().ScriptExists(adminCtx(t), releaseSHA).Val()
				if valueOn(t, cand, "restart") == l.Token() && len(cached) == 1 && cached[0] && commandCalls(t, cand, "evalsha") > 0 {
					m = cand
					return true
				}
			}
			return false
		})
		if err := m.Shutdown(); err != nil { // clean: the AOF keeps the key
			t.Fatal(err)
		}
		if err := m.Restart(); err != nil {
			t.Fatal(err)
		}
		if exists := m.Admin().ScriptExists(adminCtx(t), "0000000000000000000000000000000000000000").Val(); len(exists) != 1 {
			t.Fatalf("SCRIPT EXISTS answered %v", exists)
		}
		if valueOn(t, m, "restart") != l.Token() {
			t.Fatal("the restarted master lost the key: the test needs it kept")
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release after the restart: %v", err)
		}
		waitUntil(t, "the restarted master to release too", func() bool { return valueOn(t, m, "restart") == "" })
		if commandCalls(t, m, "eval") == 0 {
			t.Error("the restarted master never saw the EVAL fallback: NOSCRIPT was not exercised")
		}
		if n := keysOn(t, cl, "restart"); n != 0 {
			t.Errorf("key left on %d masters", n)
		}
	})

	t.Run("cancelling a blocked acquire leaves no key on any master", func(t *testing.T) {
		cl := redistest.Start(t, redistest.Options{Masters: 5})
		setsBefore := make([]int, len(cl.Masters))
		for i, m := range cl.Masters {
			setsBefore[i] = commandCalls(t, m, "set")
		}
		// A long node timeout: only the cancellation can end the call.
		c, err := redlock.New(lockClients(t, cl), redlock.Options{NodeTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range cl.Masters {
			if err := m.Pause(); err != nil {
				t.Fatal(err)
			}
		}
		resumeOnCleanup(t, cl.Masters...)
		actx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := c.TryAcquire(actx, "cancelled", 20*time.Second)
			done <- err
		}()
		time.Sleep(100 * time.Millisecond) // let the SETs reach the stopped masters' sockets
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled TryAcquire: %v, want context.Canceled", err)
		}
		for _, m := range cl.Masters {
			_ = m.Resume()
		}
		_ = c.Close()
		for i, m := range cl.Masters {
			if commandCalls(t, m, "set") <= setsBefore[i] {
				t.Errorf("master %s never ran the SET: the test did not exercise a late SET", m.Addr)
			}
		}
		if n := keysOn(t, cl, "cancelled"); n != 0 {
			t.Errorf("key left on %d masters after the cancelled acquire", n)
		}
	})
}

// commandCalls returns how many times a master executed cmd (INFO commandstats).
func commandCalls(t *testing.T, m *redistest.Master, cmd string) int {
	t.Helper()
	info, err := m.Admin().Info(adminCtx(t), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.Atoi(strings.SplitN(rest, ",", 2)[0])
			return n
		}
	}
	return 0
}

// liveTimedOut reports whether err lists one of the first live masters as timed out.
func liveTimedOut(err error, live int) bool {
	var ue *redlock.UnavailableError
	if !errors.As(err, &ue) {
		return false
	}
	for _, me := range ue.Errors {
		if me.Master < live && errors.Is(me.Err, redlock.ErrNodeTimeout) {
			return true
		}
	}
	return false
}
