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

// subscribed reports whether every master has a subscriber on key's release channel.
func subscribed(t *testing.T, cl *redistest.Cluster, key string) bool {
	t.Helper()
	for _, m := range cl.Masters {
		n := m.Admin().PubSubNumSub(adminCtx(t), key+redlock.ReleaseChannelSuffix).Val()
		if n[key+redlock.ReleaseChannelSuffix] == 0 {
			return false
		}
	}
	return true
}

// acquireAsync runs Acquire in the background and returns where its result will arrive.
func acquireAsync(c *redlock.Client, ctx context.Context, key string, ttl time.Duration) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := c.Acquire(ctx, key, ttl)
		ch <- acquired{l, err}
	}()
	return ch
}

type acquired struct {
	l   *redlock.Lock
	err error
}

// TestWaiting: Acquire waits without polling hard, wakes on release notifications and on
// expiry, and still acquires locks of clients that publish nothing. The retry delay is set
// far above the test's deadline where a test shows that something else woke the waiter.
func TestWaiting(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	ctx := context.Background()
	slowPolling := redlock.Options{RetryDelayMin: 10 * time.Second, RetryDelayMax: 20 * time.Second}

	// wokenByRelease: a holder in one Client releases while a waiter in another waits,
	// with attempts 20 s and more apart, so that only the release's notices can wake it
	// before its deadline; meanwhile runs once the waiter is subscribed, before the release.
	wokenByRelease := func(t *testing.T, key string, deadline time.Duration, meanwhile func()) (held, woken *redlock.Lock) {
		t.Helper()
		holder := newClient(t, cl, redlock.Options{})
		waiter := newClient(t, cl, slowPolling)
		l := mustAcquire(t, holder, key, 20*time.Second)
		wctx, cancel := context.WithTimeout(ctx, deadline)
		defer cancel()
		res := acquireAsync(waiter, wctx, key, 5*time.Second)
		waitUntil(t, "the waiter's subscription", func() bool { return subscribed(t, cl, key) })
		meanwhile()
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		r := <-res
		if r.err != nil {
			t.Fatalf("waiter (retry delay 10s+, holder TTL 20s, deadline %s): %v: only the notices could have woken it", deadline, r.err)
		}
		t.Cleanup(func() { _ = r.l.Release(ctx) })
		return l, r.l
	}

	t.Run("a release in another process wakes the waiter (pub/sub)", func(t *testing.T) {
		l, woken := wokenByRelease(t, "wake-remote", 5*time.Second, func() {})
		if woken.Fence() <= l.Fence() {
			t.Errorf("fence %d after %d", woken.Fence(), l.Fence())
		}
		if err := woken.Release(ctx); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the subscription to end with the last waiter", func() bool {
			return cl.Masters[0].Admin().PubSubNumSub(adminCtx(t), "wake-remote"+redlock.ReleaseChannelSuffix).Val()["wake-remote"+redlock.ReleaseChannelSuffix] == 0
		})
	})

	t.Run("the waiter's subscriptions come back after its masters restart", func(t *testing.T) {
		// Three masters (a majority) restart while the waiter waits: its subscriptions there
		// break, and the notices of the release must still reach it, on new connections
		// subscribed again.
		restarted := &redistest.Cluster{Masters: cl.Masters[:3]}
		wokenByRelease(t, "wake-restarted", 15*time.Second, func() {
			for _, m := range restarted.Masters {
				if err := m.Shutdown(); err != nil { // clean: the AOF keeps the holder's key
					t.Fatal(err)
				}
				if err := m.Restart(); err != nil {
					t.Fatal(err)
				}
			}
			waitUntil(t, "the waiter's subscriptions on the restarted masters", func() bool { return subscribed(t, restarted, "wake-restarted") })
		})
	})

	t.Run("local waiters get the lock first come, first served", func(t *testing.T) {
		c := newClient(t, cl, slowPolling)
		l := mustAcquire(t, c, "fifo", 20*time.Second)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var mu sync.Mutex
		var order []int
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				got, err := c.Acquire(wctx, "fifo", 5*time.Second)
				if err != nil {
					t.Errorf("waiter %d: %v", i, err)
					return
				}
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				_ = got.Release(ctx)
			}(i)
			// Start the next waiter only once this one queued.
			waitUntil(t, "waiter queued", func() bool { return redlock.QueuedWaiters(c, "fifo") == i+1 })
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		for i, got := range order {
			if got != i {
				t.Fatalf("waiters acquired in order %v, want 0 1 2 3", order)
			}
		}
	})

	t.Run("a holder that publishes nothing is acquired after it deletes the key", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{RetryDelayMax: 50 * time.Millisecond})
		for _, m := range cl.Masters { // another Redlock library's lock
			m.Admin().Set(adminCtx(t), "foreign", "other-library-token", 20*time.Second)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		res := acquireAsync(c, wctx, "foreign", time.Second)
		waitUntil(t, "the waiter's subscription", func() bool { return subscribed(t, cl, "foreign") })
		for _, m := range cl.Masters {
			m.Admin().Del(adminCtx(t), "foreign") // released without a PUBLISH
		}
		r := <-res
		if r.err != nil {
			t.Fatalf("waiter after a silent release: %v", r.err)
		}
		_ = r.l.Release(ctx)
	})

	t.Run("the waiter wakes when the holder's key expires", func(t *testing.T) {
		c := newClient(t, cl, slowPolling)
		for _, m := range cl.Masters {
			m.Admin().Set(adminCtx(t), "expiring", "vanished-holder", 300*time.Millisecond)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var failed []error // the attempts that failed, in order
		l, err := c.Acquire(wctx, "expiring", time.Second, redlock.WithRetryHook(func(_ int, err error) { failed = append(failed, err) }))
		if err == nil {
			_ = l.Release(ctx)
			return
		}
		// The wake is what this shows: a second attempt within the deadline, which only the
		// PTTL can bring before the 10s+ retry delay. On a busy machine that attempt can find
		// every master slower than the node timeout; the next one is then 10s+ away.
		if len(failed) < 2 || !errors.Is(err, redlock.ErrUnavailable) {
			t.Fatalf("waiter (retry delay 10s+, deadline 5s): %v after %d failed attempt(s): only the PTTL could have woken it", err, len(failed))
		}
		t.Logf("the waiter woke at the key's expiry (attempt %d), but the masters did not answer it in time: %v", len(failed), failed[1])
	})

	t.Run("without notifications the waiter still acquires after a release", func(t *testing.T) {
		holder := newClient(t, cl, redlock.Options{})
		c := newClient(t, cl, redlock.Options{NoNotifications: true, RetryDelayMax: 50 * time.Millisecond})
		l := mustAcquire(t, holder, "no-notify", 20*time.Second)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		res := acquireAsync(c, wctx, "no-notify", time.Second)
		time.Sleep(100 * time.Millisecond)
		if subscribed(t, cl, "no-notify") {
			t.Error("NoNotifications client subscribed")
		}
		_ = l.Release(ctx)
		r := <-res
		if r.err != nil {
			t.Fatalf("waiter: %v", r.err)
		}
		_ = r.l.Release(ctx)
	})

	t.Run("the context bounds Acquire and the error says both why and what", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, c, "held", 20*time.Second)
		defer l.Release(ctx)
		// Longer than the node timeout, so that at least one attempt completes.
		wctx, cancel := context.WithTimeout(ctx, 4*testNodeTimeout)
		defer cancel()
		_, err := c.Acquire(wctx, "held", time.Second)
		var taken *redlock.TakenError
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &taken) {
			t.Fatalf("Acquire on a held lock: %v, want DeadlineExceeded and *TakenError", err)
		}
		if len(taken.Refused) < 3 || taken.Key != "held" {
			t.Errorf("TakenError %+v: want the key and at least 3 refusing masters", taken)
		}
	})

	t.Run("MaxRetries bounds the attempts", func(t *testing.T) {
		var attempts int
		var mu sync.Mutex
		c := newClient(t, cl, redlock.Options{MaxRetries: 2, RetryDelayMax: 10 * time.Millisecond,
			Hooks: redlock.HookFuncs{OnOperation: func(e redlock.OperationEvent) {
				if e.Op == redlock.OpAcquire {
					mu.Lock()
					attempts = e.Attempts
					mu.Unlock()
				}
			}}})
		holder := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, holder, "retries", 20*time.Second)
		defer l.Release(ctx)
		_, err := c.Acquire(ctx, "retries", time.Second)
		if !errors.Is(err, redlock.ErrTaken) {
			t.Fatalf("Acquire: %v, want ErrTaken", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if attempts != 3 {
			t.Errorf("%d attempts, want 3 (1 + MaxRetries 2)", attempts)
		}
	})
}
