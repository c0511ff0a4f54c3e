package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestReleaseRefusals: what a release refused by a majority says depends on when the
// refusals came back. The release script refuses (0) where the key is not ours when it
// runs: another token holds it, or none does.
func TestReleaseRefusals(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})

	// A release sent well before the deadline that reaches a majority only after their keys
	// expired (here the masters are stopped; in TestContention on a loaded machine it was
	// the client, kept off the CPU after it queued the release) is refused there: the key
	// is gone (and the release script hands a free key to the next waiter, so another
	// token may hold it by the time anyone looks). The lock was not lost within its
	// validity: ErrExpired, not ErrLost ("lost" is what the validator and the contention
	// test take as evidence of two holders).
	t.Run("answered after the deadline: expired, not lost", func(t *testing.T) {
		var mu sync.Mutex
		var events []string // each master's answers, logged when the test fails
		// The release waits for its answers up to CleanupTimeout: far beyond the pause below.
		c := newClient(t, cl, redlock.Options{CleanupTimeout: 10 * time.Second, Hooks: redlock.HookFuncs{OnMasterReply: func(e redlock.MasterEvent) {
			mu.Lock()
			defer mu.Unlock()
			events = append(events, fmt.Sprintf("%s %s master %d: vote %v, err %v, latency %v", time.Now().Format("15:04:05.000000"), e.Op, e.Master, e.Vote, e.Err, e.Latency))
		}}})
		defer func() {
			if t.Failed() {
				mu.Lock()
				defer mu.Unlock()
				for _, e := range events {
					t.Log(e)
				}
			}
		}()
		const key, ttl = "late-release", time.Second
		l := mustAcquire(t, c, key, ttl)
		waitUntil(t, "the key on every master", func() bool { return holders(t, cl, key, l.Token()) == 3 })
		set := time.Now() // every key was set before this, so it expires before set+ttl
		paused := cl.Masters[1:]
		resumeOnCleanup(t, paused...)
		for _, m := range paused {
			if err := m.Pause(); err != nil {
				t.Fatalf("pause %s: %v", m.Addr, err)
			}
		}
		if !time.Now().Before(l.Deadline()) {
			t.Skipf("the validity (%v) ran out before the release could be sent: nothing to test on a machine this slow", ttl)
		}
		done := make(chan error, 1)
		go func() { done <- l.Release(context.Background()) }()
		// The stopped masters hold the release in their sockets while their keys expire
		// (expiry is the wall clock, which runs on while a server is stopped).
		time.Sleep(time.Until(set.Add(ttl + 200*time.Millisecond)))
		for _, m := range paused {
			if err := m.Resume(); err != nil {
				t.Fatalf("resume %s: %v", m.Addr, err)
			}
		}
		var err error
		select {
		case err = <-done:
		case <-time.After(15 * time.Second): // hang guard
			t.Fatal("Release did not return after the masters were resumed")
		}
		if errors.Is(err, redlock.ErrLost) {
			t.Errorf("Release: %v: the keys expired after the deadline, before the late release reached them; the lock was not lost within its validity", err)
		}
		if !errors.Is(err, redlock.ErrExpired) {
			t.Errorf("Release answered by a majority only after the deadline: %v, want ErrExpired", err)
		}
		if n := keysOn(t, cl, key); n != 0 {
			t.Errorf("the key is on %d masters after the release", n)
		}
	})

	// Refusals that come back within the validity are a lock lost while the holder relied
	// on it, whether another token holds the key there or none does.
	t.Run("answered within the validity: lost, key gone or another token's", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		const key = "lost-release"
		l := mustAcquire(t, c, key, 10*time.Second)
		waitUntil(t, "the key on every master", func() bool { return holders(t, cl, key, l.Token()) == 3 })
		cl.Masters[1].Admin().Del(adminCtx(t), key)
		cl.Masters[2].Admin().Set(adminCtx(t), key, "someone-else", 10*time.Second)
		if err := l.Release(context.Background()); !errors.Is(err, redlock.ErrLost) || errors.Is(err, redlock.ErrExpired) {
			t.Errorf("Release with the key gone from one master and another's on a second: %v, want ErrLost", err)
		}
		if v := valueOn(t, cl.Masters[2], key); v != "someone-else" {
			t.Errorf("the other client's key is %q after the release", v)
		}
	})
}
