package redlock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/overlap"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestFairnessAcrossClients: waits are short and fair between processes. Client A (four
// goroutines) and Client B (one), as two processes would, fight over one key. A's local
// hand-offs always beat a waiter elsewhere, so without a bound on them B never gets the
// lock while A is busy. B must get a fair share per waiting goroutine, and the overlap
// checker must find no two holders at once. The run lasts until A's goroutines made
// aTotal acquisitions, not a time: a busy machine makes fewer in a given time, but the
// share B gets of them is what the bound decides.
func TestFairnessAcrossClients(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	const (
		key         = "fair"
		ttl         = 2 * time.Second
		hold        = 2 * time.Millisecond
		aTotal      = 200 // 50 per goroutine of A
		aGoroutines = 4
	)
	a := newClient(t, cl, redlock.Options{})
	b := newClient(t, cl, redlock.Options{})
	checker := overlap.New()
	var aCount, bCount atomic.Int64
	ctx, finished := runUntil(func() bool { return aCount.Load() >= aTotal })
	var wg sync.WaitGroup
	worker := func(c *redlock.Client, count *atomic.Int64) {
		defer wg.Done()
		for ctx.Err() == nil {
			l, err := c.Acquire(ctx, key, ttl)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("Acquire: %v", err)
				}
				return
			}
			start := time.Now()
			count.Add(1)
			time.Sleep(hold) // the work
			end := time.Now()
			if d := l.Deadline(); d.Before(end) {
				end = d
			}
			checker.Record(key, l.Token(), start, end, l.Fence())
			if err := l.Release(context.Background()); err != nil {
				t.Errorf("Release: %v", err)
			}
		}
	}
	for g := 0; g < aGoroutines; g++ {
		wg.Add(1)
		go worker(a, &aCount)
	}
	wg.Add(1)
	go worker(b, &bCount)
	if !finished() {
		t.Errorf("A made %d of %d acquisitions within the hang guard (%v)", aCount.Load(), aTotal, contentionHangGuard)
	}
	wg.Wait()
	for _, v := range checker.Violations() {
		t.Errorf("violation: %v", v)
	}
	perA := float64(aCount.Load()) / aGoroutines
	t.Logf("A: %d acquisitions by %d goroutines (%.1f each); B: %d by one goroutine", aCount.Load(), aGoroutines, perA, bCount.Load())
	if aCount.Load() == 0 {
		t.Fatalf("A never acquired the lock")
	}
	if b := float64(bCount.Load()); b == 0 || b < perA/10 {
		t.Errorf("B got %d acquisitions, want at least a tenth of A's %.1f per goroutine", bCount.Load(), perA)
	}
}
