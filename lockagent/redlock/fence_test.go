package redlock_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

func fenceOn(t *testing.T, m *redistest.Master, key string) uint64 {
	t.Helper()
	v := valueOn(t, m, key+redlock.FenceSuffix)
	if v == "" {
		return 0
	}
	f, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("fence register on %s holds %q", m.Addr, v)
	}
	return f
}

// TestFencing: every acquisition's fencing token is larger than every earlier holder's.
func TestFencing(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	ctx := context.Background()

	t.Run("successive holders get strictly increasing fences, released or expired", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		var last uint64
		for i := 0; i < 10; i++ {
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			l, err := c.Acquire(actx, "fenced", 100*time.Millisecond)
			cancel()
			if err != nil {
				t.Fatalf("acquisition %d: %v", i, err)
			}
			if l.Fence() <= last {
				t.Fatalf("acquisition %d: fence %d after %d", i, l.Fence(), last)
			}
			last = l.Fence()
			if i%2 == 0 {
				_ = l.Release(ctx)
			} // else: let it expire
		}
	})

	t.Run("the register has no TTL and holds the last fence on every master", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, c, "register", time.Second)
		_ = l.Release(ctx)
		waitUntil(t, "the register on every master", func() bool {
			for _, m := range cl.Masters {
				if fenceOn(t, m, "register") != l.Fence() {
					return false
				}
			}
			return true
		})
		for _, m := range cl.Masters {
			if pttl := m.Admin().PTTL(adminCtx(t), "register"+redlock.FenceSuffix).Val(); pttl != -time.Nanosecond {
				t.Errorf("register on %s has PTTL %v, want none (-1): a fence must never expire and go back", m.Addr, pttl)
			}
		}
	})

	t.Run("a minority losing its register does not lower the next fence", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, c, "lossy", time.Second)
		_ = l.Release(ctx)
		waitUntil(t, "the register on every master", func() bool {
			for _, m := range cl.Masters {
				if fenceOn(t, m, "lossy") != l.Fence() {
					return false
				}
			}
			return true
		})
		for _, m := range cl.Masters[:2] {
			m.Admin().Del(adminCtx(t), "lossy"+redlock.FenceSuffix)
		}
		next := mustAcquire(t, c, "lossy", time.Second)
		defer next.Release(ctx)
		if next.Fence() <= l.Fence() {
			t.Errorf("fence %d after %d with 2 of 5 registers lost", next.Fence(), l.Fence())
		}
	})

	t.Run("a stale higher register on one master only raises later fences", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, c, "raised", time.Second)
		_ = l.Release(ctx)
		cl.Masters[0].Admin().Set(adminCtx(t), "raised"+redlock.FenceSuffix, "1000", 0)
		next := mustAcquire(t, c, "raised", time.Second)
		defer next.Release(ctx)
		if next.Fence() <= l.Fence() {
			t.Errorf("fence %d after %d", next.Fence(), l.Fence())
		}
		if got := fenceOn(t, cl.Masters[0], "raised"); got < 1000 {
			t.Errorf("the higher register went from 1000 down to %d: a register must never go down", got)
		}
	})

	t.Run("NoFencing skips the register", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{NoFencing: true})
		l := mustAcquire(t, c, "unfenced", time.Second)
		defer l.Release(ctx)
		if l.Fence() != 0 {
			t.Errorf("Fence() = %d with NoFencing", l.Fence())
		}
		if n := keysOn(t, cl, "unfenced"+redlock.FenceSuffix); n != 0 {
			t.Errorf("register written on %d masters", n)
		}
	})
}
