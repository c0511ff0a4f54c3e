package redlock

import (
	"slices"
	"sync"
	"testing"

	"github.com/redlock-kit/redlock-kit/lockagent/internal/handofftrace"
)

// TestNoticeTraceCountsHandOffsOnly: the benchmark's hook hears a hand-off notice for a
// waiter of this Client, with its master, and not a window's notice (the waiter then takes
// the lock with its own attempt) nor a notice for a token no waiter has. Not parallel: the
// hook is process-wide.
func TestNoticeTraceCountsHandOffsOnly(t *testing.T) {
	var mu sync.Mutex
	var heard []int
	handofftrace.Set(nil, func(master int) { mu.Lock(); heard = append(heard, master); mu.Unlock() })
	t.Cleanup(func() { handofftrace.Set(nil, nil) })
	n := &notifier{keys: map[string]*keyQueue{}}
	q := &keyQueue{key: "k", byToken: map[string]*waiter{}}
	w := &waiter{q: q, token: "tok", grants: make(chan grantMsg, 8)}
	q.waiters, q.byToken["tok"] = []*waiter{w}, w
	n.keys["k"] = q
	n.deliverGrant("k", 2, "tok 17 3")    // a hand-off by master 2
	n.deliverGrant("k", 1, "tok w4 3")    // a window: try in 4 ms
	n.deliverGrant("k", 0, "other 18 3")  // someone else's token
	n.deliverGrant("gone", 0, "tok 19 3") // a key without waiters here
	n.deliverGrant("k", 0, "tok r40 3")   // a hand-off by master 0 that did not raise the register
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(heard, []int{2, 0}) {
		t.Errorf("the hook heard masters %v, want [2 0]: the hand-offs, not the window nor the others", heard)
	}
	if len(w.grants) != 3 { // the window goes to the waiter too
		t.Errorf("%d notices delivered to the waiter, want 3", len(w.grants))
	}
}
