package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/overlap"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestContention: Safety under load. Several Clients (standing for
// processes) with several goroutines each fight over two keys with a short TTL; some
// holders vanish without releasing. The overlap checker, on this process's monotonic
// clock, must find no two holders relying on a key at once, and fencing tokens must
// strictly increase in acquisition order. The run lasts until each key was acquired
// perKeyHolds times, not a time, so a busy machine checks as many holds as an idle one.
func TestContention(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	const (
		clients     = 4
		goroutines  = 6
		ttl         = 300 * time.Millisecond
		perKeyHolds = 60
	)
	keys := []string{"contended-a", "contended-b"}
	checker := overlap.New()
	var acquired, vanished, fenceReplies atomic.Int64
	perKey := make([]atomic.Int64, len(keys))
	ctx, finished := runUntil(func() bool {
		for i := range perKey {
			if perKey[i].Load() < perKeyHolds {
				return false
			}
		}
		return true
	})
	// Fences come from the acquire round when a Client's cached fence is current (the
	// same Client acquires again) and from the fallback round when another Client moved
	// it on: the checker sees both.
	hooks := redlock.HookFuncs{OnMasterReply: func(e redlock.MasterEvent) {
		if e.Op == redlock.OpFence {
			fenceReplies.Add(1)
		}
	}}
	var wg sync.WaitGroup
	for ci := 0; ci < clients; ci++ {
		c := newClient(t, cl, redlock.Options{Hooks: hooks})
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func(ki int) {
				defer wg.Done()
				key := keys[ki]
				for ctx.Err() == nil {
					l, err := c.Acquire(ctx, key, ttl)
					if err != nil {
						if ctx.Err() == nil {
							t.Errorf("Acquire: %v", err)
						}
						return
					}
					start := time.Now()
					acquired.Add(1)
					perKey[ki].Add(1)
					if rand.N(20) == 0 {
						// The holder vanishes: it may rely on the lock until its deadline.
						vanished.Add(1)
						checker.Record(key, l.Token(), start, l.Deadline(), l.Fence())
						continue
					}
					time.Sleep(time.Duration(rand.N(1000)) * time.Microsecond) // the work
					end := time.Now()
					if d := l.Deadline(); d.Before(end) {
						end = d
					}
					checker.Record(key, l.Token(), start, end, l.Fence())
					// A holder the machine descheduled past its validity, before it sent the
					// release or while the release was on its way to the masters, releases a
					// lock that expired (ErrExpired; the keys may be another holder's by
					// then). ErrLost says that a majority refused within the validity: the
					// lock was lost before its deadline, which is a failure.
					releasedAt := time.Now()
					if err := l.Release(context.Background()); err != nil && !errors.Is(err, redlock.ErrExpired) {
						t.Errorf("Release at %v of the lock's %v validity: %v", releasedAt.Sub(start), l.Deadline().Sub(start), err)
					}
				}
			}(g % len(keys))
		}
	}
	if !finished() {
		t.Errorf("keys acquired %d and %d times, not %d each, within the hang guard (%v)", perKey[0].Load(), perKey[1].Load(), perKeyHolds, contentionHangGuard)
	}
	wg.Wait()
	for _, v := range checker.Violations() {
		t.Errorf("violation: %v", v)
	}
	if checker.Len() != int(acquired.Load()) {
		t.Errorf("checker has %d intervals for %d acquisitions", checker.Len(), acquired.Load())
	}
	t.Logf("%d acquisitions (%d holders vanished) by %d goroutines in %d clients; %d fence-round replies (about 5 per fallback round)",
		acquired.Load(), vanished.Load(), clients*goroutines, clients, fenceReplies.Load())
}

// TestMultiplexing: concurrent operations of one Client share one connection per master
// (the batcher pipelines them), instead of one connection per goroutine.
func TestMultiplexing(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	// This test is about connections, not latency: a node timeout far above what a reply to
	// 64 goroutines takes on a loaded machine (the derived one, 50 ms, is not), so that every
	// operation must succeed at its first attempt: a reply the batcher loses fails it.
	c := newClient(t, cl, redlock.Options{NodeTimeout: 2 * time.Second})
	const goroutines, rounds = 64, 10
	var wg sync.WaitGroup
	var failures atomic.Int64
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				l, err := c.TryAcquire(context.Background(), fmt.Sprintf("mux-%d", g), 10*time.Second)
				if err != nil {
					failures.Add(1)
					t.Errorf("TryAcquire: %v", err)
					continue
				}
				if err := l.Release(context.Background()); err != nil {
					failures.Add(1)
					t.Errorf("Release: %v", err)
				}
			}
		}(g)
	}
	wg.Wait()
	for _, m := range cl.Masters {
		list := m.Admin().ClientList(adminCtx(t)).Val()
		conns := strings.Count(list, "user="+redistest.LockUser+" ")
		if conns == 0 || conns > 2 {
			t.Errorf("master %s: %d lock-user connections after %d concurrent goroutines, want 1 (2 after a reconnect)", m.Addr, conns, goroutines)
		}
	}
	if failures.Load() > 0 {
		t.Errorf("%d of %d operations failed", failures.Load(), 2*goroutines*rounds)
	}
}
