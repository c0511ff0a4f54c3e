package redlock

import (
	"testing"
	"time"
)

// TestLingerWithAWaiterAtTheTimer drives a notifier without masters: a timer that fires
// while a waiter waits leaves the key subscribed (it is in use), and the next waiter to
// leave starts a new linger that ends it; after close, leaving arms no timer.
func TestLingerWithAWaiterAtTheTimer(t *testing.T) {
	n := newNotifier(&Client{})
	const linger = 20 * time.Millisecond
	n.linger = linger
	const key = "k"
	w, _ := n.join(key)
	n.leave(w) // the linger starts
	w, _ = n.join(key)
	// The timer fires while w waits (it is armed for the linger; give it ten).
	time.Sleep(10 * linger)
	if !n.hot(key) {
		t.Fatal("the key was unsubscribed while a waiter waited for it")
	}
	n.leave(w)
	deadline := time.Now().Add(time.Minute)
	for n.hot(key) {
		if time.Now().After(deadline) {
			t.Fatalf("the key still subscribed a minute after its last waiter left (linger %v)", linger)
		}
		time.Sleep(time.Millisecond)
	}
	n.mu.Lock()
	armed := n.lingerArmed
	n.mu.Unlock()
	if armed != 2 {
		t.Errorf("the linger timer was armed %d times, want twice (once per leave with no waiter left)", armed)
	}
	// After close, a waiter that leaves arms nothing.
	w, _ = n.join(key)
	n.close()
	n.leave(w)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.lingerArmed != armed {
		t.Errorf("a leave after close armed the linger timer (%d, want %d)", n.lingerArmed, armed)
	}
}
