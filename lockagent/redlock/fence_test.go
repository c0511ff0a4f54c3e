package redlock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
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

	t.Run("a repeat acquirer gets its fence in the acquire round, with no fence round", func(t *testing.T) {
		// The key was used before (by others): a new Client does not know its fence, so its
		// first acquisition needs the fallback round; after that it proposes the right one.
		for _, m := range cl.Masters {
			m.Admin().Set(adminCtx(t), "repeat"+redlock.FenceSuffix, "7", 0)
		}
		rec := &recorder{}
		c := newClient(t, cl, redlock.Options{Hooks: rec.hooks()})
		first := mustAcquire(t, c, "repeat", time.Second)
		_ = first.Release(ctx)
		if first.Fence() != 8 {
			t.Errorf("first fence %d over registers at 7, want 8", first.Fence())
		}
		// Each round's last replies arrive after the call returned.
		waitUntil(t, "the first acquisition's replies", func() bool {
			_, acquires, _ := rec.replies(redlock.OpAcquire)
			_, fences, _ := rec.replies(redlock.OpFence)
			return acquires == 5 && fences == 5
		})
		last := first.Fence()
		for i := 1; i <= 5; i++ {
			l := mustAcquire(t, c, "repeat", time.Second)
			_ = l.Release(ctx)
			if l.Fence() != last+1 {
				t.Errorf("acquisition %d: fence %d after %d, want %d (the cached fence + 1)", i, l.Fence(), last, last+1)
			}
			last = l.Fence()
			waitUntil(t, "the acquisition's replies", func() bool {
				_, acquires, _ := rec.replies(redlock.OpAcquire)
				return acquires == 5*(i+1)
			})
			if votes, total, _ := rec.replies(redlock.OpFence); total != 5 {
				t.Errorf("acquisition %d: %d fence-round replies (%d votes) in all, want still the first acquisition's 5: the fence took a second round", i, total, votes)
			}
		}
		waitUntil(t, "the last fence on every master", func() bool {
			for _, m := range cl.Masters {
				if fenceOn(t, m, "repeat") != last {
					return false
				}
			}
			return true
		})
	})

	t.Run("a stale cached fence still yields a larger fence, through the fallback round", func(t *testing.T) {
		recA := &recorder{}
		a := newClient(t, cl, redlock.Options{Hooks: recA.hooks()})
		b := newClient(t, cl, redlock.Options{})
		la := mustAcquire(t, a, "stale", time.Second)
		_ = la.Release(ctx)
		// Another Client moves the fence on; a's cache still says la.Fence().
		var lb *redlock.Lock
		for i := 0; i < 3; i++ {
			lb = mustAcquire(t, b, "stale", time.Second)
			_ = lb.Release(ctx)
		}
		if lb.Fence() <= la.Fence() {
			t.Fatalf("b's fence %d after a's %d", lb.Fence(), la.Fence())
		}
		waitUntil(t, "b's fence on every master", func() bool {
			for _, m := range cl.Masters {
				if fenceOn(t, m, "stale") != lb.Fence() {
					return false
				}
			}
			return true
		})
		if _, total, _ := recA.replies(redlock.OpFence); total != 0 {
			t.Fatalf("a's first acquisition of a new key ran a fence round (%d replies)", total)
		}
		again := mustAcquire(t, a, "stale", time.Second)
		defer again.Release(ctx)
		if again.Fence() <= lb.Fence() {
			t.Errorf("fence %d from a stale cache (%d) after b's %d, want larger", again.Fence(), la.Fence(), lb.Fence())
		}
		if votes, total, _ := recA.replies(redlock.OpFence); votes < 3 {
			t.Errorf("fence round: %d votes of %d replies, want a majority: the stale proposal needs the fallback round", votes, total)
		}
	})

	t.Run("a refused attempt may raise registers on a minority: harmless, later fences still grow", func(t *testing.T) {
		for _, m := range cl.Masters {
			m.Admin().Set(adminCtx(t), "refused"+redlock.FenceSuffix, "10", 0)
		}
		c := newClient(t, cl, redlock.Options{})
		held := mustAcquire(t, c, "refused", time.Second)
		_ = held.Release(ctx)
		waitUntil(t, "the holder's fence on every master", func() bool {
			for _, m := range cl.Masters {
				if fenceOn(t, m, "refused") != held.Fence() {
					return false
				}
			}
			return true
		})
		// Another client holds the key on masters 0-2: c's next attempt is refused there
		// and granted (then cleaned up) on 3 and 4, where its proposal raises the register.
		for _, m := range cl.Masters[:3] {
			m.Admin().Set(adminCtx(t), "refused", "someone-else", 10*time.Second)
		}
		if _, err := c.TryAcquire(ctx, "refused", time.Second); !errors.Is(err, redlock.ErrTaken) {
			t.Fatalf("TryAcquire against a majority held elsewhere: %v, want ErrTaken", err)
		}
		waitUntil(t, "the refused attempt's keys cleaned up", func() bool { return keysOn(t, cl, "refused") == 3 })
		for i, m := range cl.Masters {
			if f := fenceOn(t, m, "refused"); f != held.Fence() && f != held.Fence()+1 {
				t.Errorf("master %d: register %d after the refused attempt, want %d or the proposal %d", i, f, held.Fence(), held.Fence()+1)
			}
		}
		for _, m := range cl.Masters[:3] {
			m.Admin().Del(adminCtx(t), "refused")
		}
		for name, cc := range map[string]*redlock.Client{"the same client": c, "a new client": newClient(t, cl, redlock.Options{})} {
			next := mustAcquire(t, cc, "refused", time.Second)
			_ = next.Release(ctx)
			if next.Fence() <= held.Fence() {
				t.Errorf("%s: fence %d after the last holder's %d", name, next.Fence(), held.Fence())
			}
			held = next
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

// TestFenceLimit: a register at or above 2^53 (the documented limit; only an operator
// can put one there) is reported as an error, never wrapped around to a small fence.
func TestFenceLimit(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	ctx := context.Background()
	tests := []struct {
		name     string
		register string
	}{
		{"2^53", "9007199254740992"},
		{"the largest uint64", "18446744073709551615"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := "fence-limit-" + tt.register
			for _, m := range cl.Masters {
				if err := m.Admin().Set(adminCtx(t), key+redlock.FenceSuffix, tt.register, 0).Err(); err != nil {
					t.Fatalf("setup: %v", err)
				}
			}
			c := newClient(t, cl, redlock.Options{})
			l, err := c.TryAcquire(ctx, key, time.Second)
			if err == nil {
				_ = l.Release(ctx)
				t.Fatalf("acquired with fence %d over registers at %s, want an error", l.Fence(), tt.register)
			}
			if !errors.Is(err, redlock.ErrUnavailable) || !strings.Contains(err.Error(), "2^53") {
				t.Errorf("TryAcquire: %v, want ErrUnavailable naming the 2^53 limit", err)
			}
			waitUntil(t, "the failed attempt released", func() bool { return keysOn(t, cl, key) == 0 })
			for _, m := range cl.Masters {
				if v := valueOn(t, m, key+redlock.FenceSuffix); v != tt.register {
					t.Errorf("register on %s became %q", m.Addr, v)
				}
			}
		})
	}
}
