package redlock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestReentrantConcurrentSameOwner: goroutines of one owner acquire and release the same
// key re-entrantly at once. Every handle returned must be live (its context not ended)
// until its own Release, which must succeed: a re-entry that slipped in while the first
// acquisition was being recorded must not release the lock under it. Run with -race: the
// hooks read every acquisition's votes concurrently.
func TestReentrantConcurrentSameOwner(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	var votesSeen atomic.Int64
	hooks := redlock.HookFuncs{OnOperation: func(e redlock.OperationEvent) {
		if e.Op == redlock.OpAcquire && e.Err == nil {
			votesSeen.Add(int64(e.Votes))
		}
	}}
	// This test is about re-entry, not latency: a node timeout far above what a reply takes
	// on a loaded machine (the derived one is tens of ms), as in TestMultiplexing.
	c := newClient(t, cl, redlock.Options{Hooks: hooks, NodeTimeout: 2 * time.Second})
	const goroutines, rounds = 8, 200
	var wg sync.WaitGroup
	var acquired, taken atomic.Int64
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				l, err := c.TryAcquire(context.Background(), "reentrant-race", 10*time.Second, redlock.WithReentrant("owner"))
				if errors.Is(err, redlock.ErrTaken) {
					// The previous hold's release is still on its way to the masters.
					taken.Add(1)
					continue
				}
				if err != nil {
					t.Errorf("TryAcquire: %v", err)
					return
				}
				acquired.Add(1)
				if err := l.Context().Err(); err != nil {
					t.Errorf("a fresh handle's context already ended: %v", context.Cause(l.Context()))
				}
				if err := l.Release(context.Background()); err != nil {
					t.Errorf("Release: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d acquisitions (%d attempts refused while a release was on its way)", acquired.Load(), taken.Load())
	if acquired.Load() == 0 || votesSeen.Load() == 0 {
		t.Fatalf("no acquisition succeeded (%d) or reported its votes (%d)", acquired.Load(), votesSeen.Load())
	}
}

// TestTinyValidity: an acquisition left with almost no validity arms its timer with
// (nearly) nothing to wait; the timer may fire at once and must find the hold complete.
// Most attempts fail with ErrExpired; the rest hold a lock whose context ends soon.
func TestTinyValidity(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	c := newClient(t, cl, redlock.Options{DriftFactor: 0.001})
	var got, expired int
	for i := 0; i < 300; i++ {
		// drift = 2ms + ttl/1000: a 3ms TTL leaves about a millisecond.
		l, err := c.TryAcquire(context.Background(), "tiny", 3*time.Millisecond)
		switch {
		case errors.Is(err, redlock.ErrExpired) || errors.Is(err, redlock.ErrUnavailable):
			// The majority (or the fence round, bounded by the validity) came too late.
			expired++
			continue
		case err != nil:
			t.Fatalf("TryAcquire: %v", err)
		}
		got++
		<-l.Context().Done()
		if cause := context.Cause(l.Context()); !errors.Is(cause, redlock.ErrExpired) {
			t.Errorf("context cause %v, want ErrExpired", cause)
		}
		_ = l.Release(context.Background())
		waitUntil(t, "the key expired", func() bool { return keysOn(t, cl, "tiny") == 0 })
	}
	t.Logf("%d locks with about a millisecond of validity, %d expired before they were granted", got, expired)
}

// TestReentryExtension: a re-entry extends only when it moves the deadline meaningfully,
// never fails while its owner holds the lock, and honours WithAutoRenew.
func TestReentryExtension(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	ctx := context.Background()

	t.Run("re-entries with the same ttl cost no round and never hit the extension limit", func(t *testing.T) {
		var extendRounds atomic.Int64
		hooks := redlock.HookFuncs{OnMasterReply: func(e redlock.MasterEvent) {
			if e.Op == redlock.OpExtend {
				extendRounds.Add(1)
			}
		}}
		c := newClient(t, cl, redlock.Options{Hooks: hooks, MaxExtensions: 5})
		outer := mustAcquire(t, c, "reenter-same", 10*time.Second, redlock.WithReentrant("o"))
		defer outer.Release(ctx)
		for i := 0; i < 50; i++ {
			l, err := c.TryAcquire(ctx, "reenter-same", 10*time.Second, redlock.WithReentrant("o"))
			if err != nil {
				t.Fatalf("re-entry %d: %v", i+1, err)
			}
			if l.Token() != outer.Token() {
				t.Fatalf("re-entry %d got another acquisition", i+1)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("release of re-entry %d: %v", i+1, err)
			}
		}
		if n := extendRounds.Load(); n != 0 {
			t.Errorf("%d extend replies for re-entries that would not move the deadline meaningfully", n)
		}
	})

	t.Run("a longer ttl extends, and at the limit the re-entry keeps the deadline", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{MaxExtensions: 1})
		outer := mustAcquire(t, c, "reenter-longer", time.Second, redlock.WithReentrant("o"))
		defer outer.Release(ctx)
		before := outer.Deadline()
		l1, err := c.TryAcquire(ctx, "reenter-longer", 10*time.Second, redlock.WithReentrant("o"))
		if err != nil {
			t.Fatalf("re-entry with a longer ttl: %v", err)
		}
		defer l1.Release(ctx)
		extended := outer.Deadline()
		if !extended.After(before) {
			t.Fatalf("the re-entry with a 10s ttl did not extend the 1s lock")
		}
		// MaxExtensions is used up: the re-entry still succeeds, on the same deadline.
		l2, err := c.TryAcquire(ctx, "reenter-longer", 20*time.Second, redlock.WithReentrant("o"))
		if err != nil {
			t.Fatalf("re-entry at the extension limit: %v", err)
		}
		defer l2.Release(ctx)
		if !l2.Deadline().Equal(extended) {
			t.Errorf("deadline moved at the extension limit")
		}
		if err := outer.Extend(ctx, 5*time.Second); !errors.Is(err, redlock.ErrExtensionLimit) {
			t.Errorf("explicit Extend at the limit: %v, want ErrExtensionLimit", err)
		}
	})

	t.Run("WithAutoRenew on a re-entry renews the lock", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		const ttl = 300 * time.Millisecond
		outer := mustAcquire(t, c, "reenter-renew", ttl, redlock.WithReentrant("o"))
		defer outer.Release(ctx)
		l, err := c.TryAcquire(ctx, "reenter-renew", ttl, redlock.WithReentrant("o"), redlock.WithAutoRenew())
		if err != nil {
			t.Fatalf("re-entry: %v", err)
		}
		defer l.Release(ctx)
		// Without renewal the lock would end at the later of the two deadlines.
		unrenewed := l.Deadline()
		waitUntil(t, "auto-renewal moved the deadline", func() bool { return outer.Deadline().After(unrenewed) })
		waitUntil(t, "past the deadline without renewal", func() bool { return time.Now().After(unrenewed) })
		if err := l.Context().Err(); err != nil {
			t.Errorf("the renewed lock's context ended: %v", context.Cause(l.Context()))
		}
	})
}
