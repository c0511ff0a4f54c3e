package redlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/internal/handofftrace"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestSentTraceNamesEachMaster: the benchmark's hook hears every master's pipeline of a
// round, with that master's index, and no notice when nobody waits. Not parallel: the
// hook is process-wide (a parallel test runs only once the sequential ones are done).
func TestSentTraceNamesEachMaster(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	c := newClient(t, cl, redlock.Options{})
	var mu sync.Mutex
	sent, notices := map[int]int{}, 0
	handofftrace.Set(func(m int) { mu.Lock(); sent[m]++; mu.Unlock() }, func(int) { mu.Lock(); notices++; mu.Unlock() })
	t.Cleanup(func() { handofftrace.Set(nil, nil) })
	ctx := context.Background()
	l, err := c.Acquire(ctx, "trace-sent", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "every master's release pipeline reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return sent[0] >= 2 && sent[1] >= 2 && sent[2] >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	for m := range sent {
		if m < 0 || m > 2 {
			t.Errorf("a pipeline reported for master %d of 3: %v", m, sent)
		}
	}
	if notices != 0 {
		t.Errorf("%d notices heard with nobody waiting, want none", notices)
	}
}
