package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// lingering makes key's subscription in b linger: b waits for it once, while a holds it.
func lingering(t *testing.T, a, b *redlock.Client, key string) {
	t.Helper()
	ctx := context.Background()
	held := mustAcquire(t, a, key, 10*time.Second)
	got := make(chan *redlock.Lock, 1)
	go func() {
		l, err := b.Acquire(ctx, key, 10*time.Second)
		if err != nil {
			t.Errorf("Acquire: %v", err)
		}
		got <- l
	}()
	waitUntil(t, "b waiting for the key", func() bool { return redlock.QueuedWaiters(b, key) == 1 })
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if l := <-got; l != nil {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !redlock.Subscribed(b, key) {
		t.Fatalf("b does not keep %q subscribed after its waiter left", key)
	}
}

// TestLingerTimerOncePerIdleSpell: a Client that locks a key in a loop (each Acquire waits
// in the queue, since the key is subscribed, and leaves it with the lock) arms the key's
// linger timer once, not once per acquisition: its process is not woken by a timer for
// every lock it took.
func TestLingerTimerOncePerIdleSpell(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	a, b := newClient(t, cl, redlock.Options{}), newClient(t, cl, redlock.Options{})
	redlock.SetSubscriptionLinger(b, time.Hour)
	const key = "linger-loop"
	lingering(t, a, b, key)
	ctx := context.Background()
	for range 20 {
		l, err := b.Acquire(ctx, key, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !redlock.Subscribed(b, key) {
		t.Errorf("b does not keep %q subscribed", key)
	}
	if n := redlock.LingerTimersArmed(b); n != 1 {
		t.Errorf("the linger timer was armed %d times for 21 acquisitions in a row, want once", n)
	}
}

// TestLingerEndsAfterTheLastWaiterLeft: the subscription ends once the key's last waiter
// left the linger ago, counted from the latest one to leave, not from the first.
func TestLingerEndsAfterTheLastWaiterLeft(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	a, b := newClient(t, cl, redlock.Options{}), newClient(t, cl, redlock.Options{})
	// A linger long against the pause below, so that the key still lingers when the
	// second waiter comes even on a machine that stalls for a second.
	const linger, pause = 2 * time.Second, 500 * time.Millisecond
	redlock.SetSubscriptionLinger(b, linger)
	const key = "linger-ends"
	lingering(t, a, b, key) // the timer is armed as this waiter leaves
	time.Sleep(pause)
	// Another waiter comes and leaves while the key lingers (the key is subscribed, so
	// Acquire waits in the queue): the linger now runs from here.
	last := time.Now()
	if !redlock.Subscribed(b, key) {
		t.Fatalf("the key no longer lingers %v after its waiter left, with a linger of %v", pause, linger)
	}
	l, err := b.Acquire(context.Background(), key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the subscription ended", func() bool { return !redlock.Subscribed(b, key) })
	if since := time.Since(last); since < linger {
		t.Errorf("the subscription ended %v after the last waiter came, want the linger (%v) at least", since, linger)
	}
	if n := redlock.LingerTimersArmed(b); n != 1 {
		t.Errorf("the linger timer was armed %d times, want once (re-armed by itself for the rest)", n)
	}
}
