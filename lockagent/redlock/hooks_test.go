package redlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

type recorder struct {
	mu      sync.Mutex
	masters []redlock.MasterEvent
	ops     []redlock.OperationEvent
}

func (r *recorder) hooks() redlock.Hooks {
	return redlock.HookFuncs{
		OnMasterReply: func(e redlock.MasterEvent) { r.mu.Lock(); r.masters = append(r.masters, e); r.mu.Unlock() },
		OnOperation:   func(e redlock.OperationEvent) { r.mu.Lock(); r.ops = append(r.ops, e); r.mu.Unlock() },
	}
}

func (r *recorder) replies(op redlock.Op) (votes, total int, addrs map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	addrs = map[string]bool{}
	for _, e := range r.masters {
		if e.Op == op {
			total++
			addrs[e.Addr] = true
			if e.Vote {
				votes++
			}
		}
	}
	return votes, total, addrs
}

func TestHooks(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	ctx := context.Background()

	t.Run("every master's reply and every operation is reported", func(t *testing.T) {
		rec := &recorder{}
		c := newClient(t, cl, redlock.Options{Hooks: rec.hooks()})
		l := mustAcquire(t, c, "hooked", 5*time.Second)
		if err := l.Extend(ctx, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		_ = c.Close() // stragglers are reported before Close returns
		for _, op := range []redlock.Op{redlock.OpAcquire, redlock.OpExtend, redlock.OpRelease} {
			votes, total, addrs := rec.replies(op)
			if total != 5 || votes != 5 || len(addrs) != 5 {
				t.Errorf("%s: %d replies, %d votes from %d addresses, want 5/5/5", op, total, votes, len(addrs))
			}
		}
		// A new key: the optimistic fence (1) is below every register, so the acquire
		// round confirms it and no fence round runs (TestFencing covers the fallback).
		if _, total, _ := rec.replies(redlock.OpFence); total != 0 {
			t.Errorf("fence: %d replies for the first acquisition of a new key, want none", total)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		var kinds []redlock.Op
		for _, e := range rec.ops {
			kinds = append(kinds, e.Op)
			if e.Err != nil {
				t.Errorf("%s failed: %v", e.Op, e.Err)
			}
		}
		if len(kinds) != 3 || kinds[0] != redlock.OpAcquire || kinds[1] != redlock.OpExtend || kinds[2] != redlock.OpRelease {
			t.Errorf("operations %v, want acquire, extend, release", kinds)
		}
		if acq := rec.ops[0]; acq.Fence != l.Fence() || acq.Validity <= 0 || acq.Votes < 3 || acq.Attempts != 1 {
			t.Errorf("acquire event %+v: want the fence, a positive validity, a majority of votes, 1 attempt", acq)
		}
	})

	t.Run("a refused attempt reports refusals, not errors, and the outcome", func(t *testing.T) {
		holder := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, holder, "hooked-taken", 5*time.Second)
		defer l.Release(ctx)
		waitUntil(t, "the key on every master", func() bool { return holders(t, cl, "hooked-taken", l.Token()) == 5 })
		rec := &recorder{}
		c := newClient(t, cl, redlock.Options{Hooks: rec.hooks()})
		if _, err := c.TryAcquire(ctx, "hooked-taken", time.Second); !errors.Is(err, redlock.ErrTaken) {
			t.Fatalf("TryAcquire: %v", err)
		}
		_ = c.Close()
		rec.mu.Lock()
		defer rec.mu.Unlock()
		refusals := 0
		for _, e := range rec.masters {
			if e.Op == redlock.OpAcquire && !e.Vote && e.Err == nil {
				refusals++
			}
		}
		// At least the majority that decided; the others unless the attempt ended before
		// they were even sent.
		if refusals < 3 || refusals > 5 {
			t.Errorf("%d refusals reported, want 3 to 5", refusals)
		}
		if len(rec.ops) != 1 || !errors.Is(rec.ops[0].Err, redlock.ErrTaken) {
			t.Errorf("operation events %+v, want one acquire with ErrTaken", rec.ops)
		}
	})
}
