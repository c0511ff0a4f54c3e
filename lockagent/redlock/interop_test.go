package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestRedsyncInterop: the wire format is the standard one (key = name, value = random
// token, SET NX PX, compare-and-delete), so a lockagent holder and a redsync holder of the
// same name exclude each other, both ways, and neither can delete the other's lock.
func TestRedsyncInterop(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	ctx := context.Background()
	var pools []redsyncredis.Pool
	// redsync sends its own Lua (EVAL): it gets the EVAL user, as in a deployment; the
	// library keeps the lock user (FCALL of the kit's functions only).
	for _, r := range evalClients(t, cl) {
		pools = append(pools, goredis.NewPool(r))
	}
	rs := redsync.New(pools...)
	c := newClient(t, cl, redlock.Options{})

	t.Run("a redsync holder excludes lockagent until it unlocks", func(t *testing.T) {
		m := rs.NewMutex("interop-a", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
		if err := m.LockContext(ctx); err != nil {
			t.Fatalf("redsync Lock: %v", err)
		}
		_, err := c.TryAcquire(ctx, "interop-a", 5*time.Second)
		var taken *redlock.TakenError
		if !errors.As(err, &taken) {
			t.Fatalf("lockagent TryAcquire while redsync holds it: %v, want *TakenError", err)
		}
		if n := holders(t, cl, "interop-a", m.Value()); n != 5 {
			t.Errorf("redsync's key is on %d masters after lockagent's failed attempt, want 5", n)
		}
		if ok, err := m.UnlockContext(ctx); !ok || err != nil {
			t.Fatalf("redsync Unlock: %v %v", ok, err)
		}
		l, err := c.TryAcquire(ctx, "interop-a", 5*time.Second)
		if err != nil {
			t.Fatalf("lockagent TryAcquire after redsync unlocked: %v", err)
		}
		_ = l.Release(ctx)
	})

	t.Run("a lockagent holder excludes redsync until it releases", func(t *testing.T) {
		l := mustAcquire(t, c, "interop-b", 10*time.Second)
		// TryAcquire returns at the majority; let the last SETs land so the count below
		// only measures what redsync's attempt did.
		waitUntil(t, "the key on every master", func() bool { return holders(t, cl, "interop-b", l.Token()) == 5 })
		m := rs.NewMutex("interop-b", redsync.WithExpiry(5*time.Second), redsync.WithTries(1))
		if err := m.LockContext(ctx); err == nil {
			t.Fatal("redsync locked a key lockagent holds")
		}
		if n := holders(t, cl, "interop-b", l.Token()); n != 5 {
			t.Errorf("lockagent's key is on %d masters after redsync's attempt, want 5", n)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("lockagent Release: %v", err)
		}
		if err := m.LockContext(ctx); err != nil {
			t.Fatalf("redsync Lock after lockagent released: %v", err)
		}
		_, _ = m.UnlockContext(ctx)
	})

	t.Run("neither library's release deletes the other's lock", func(t *testing.T) {
		l := mustAcquire(t, c, "interop-c", 10*time.Second)
		defer l.Release(ctx)
		waitUntil(t, "the key on every master", func() bool { return holders(t, cl, "interop-c", l.Token()) == 5 })
		stranger := rs.NewMutex("interop-c", redsync.WithValue("redsync-stranger"))
		if ok, _ := stranger.UnlockContext(ctx); ok {
			t.Error("redsync's unlock with another value reported success")
		}
		if n := holders(t, cl, "interop-c", l.Token()); n != 5 {
			t.Errorf("lockagent's key is on %d masters after redsync's unlock, want 5", n)
		}
		// A lockagent holder whose lock expired, and that redsync then took, cannot delete
		// redsync's key by releasing late.
		mine := mustAcquire(t, c, "interop-d", 100*time.Millisecond)
		<-mine.Context().Done()
		waitUntil(t, "the expired keys to go", func() bool { return keysOn(t, cl, "interop-d") == 0 })
		m := rs.NewMutex("interop-d", redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
		if err := m.LockContext(ctx); err != nil {
			t.Fatalf("redsync Lock after lockagent's lock expired: %v", err)
		}
		defer m.UnlockContext(ctx)
		if err := mine.Release(ctx); !errors.Is(err, redlock.ErrExpired) {
			t.Errorf("late lockagent Release: %v, want ErrExpired", err)
		}
		if n := holders(t, cl, "interop-d", m.Value()); n != 5 {
			t.Errorf("redsync's key is on %d masters, want 5", n)
		}
	})
}
