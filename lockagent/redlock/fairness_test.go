package redlock_test

import (
	"context"
	"errors"
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
// checker must find no two holders at once.
func TestFairnessAcrossClients(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	const (
		key         = "fair"
		ttl         = 2 * time.Second
		hold        = 2 * time.Millisecond
		runFor      = 2500 * time.Millisecond
		aGoroutines = 4
	)
	a := newClient(t, cl, redlock.Options{})
	b := newClient(t, cl, redlock.Options{})
	checker := overlap.New()
	stop := time.Now().Add(runFor)
	var aCount, bCount atomic.Int64
	var wg sync.WaitGroup
	worker := func(c *redlock.Client, count *atomic.Int64) {
		defer wg.Done()
		for time.Now().Before(stop) {
			ctx, cancel := context.WithDeadline(context.Background(), stop)
			l, err := c.Acquire(ctx, key, ttl)
			cancel()
			if err != nil {
				if !errors.Is(err, context.DeadlineExceeded) {
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
