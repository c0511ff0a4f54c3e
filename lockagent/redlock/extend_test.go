package redlock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

func TestExtend(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	ctx := context.Background()

	t.Run("moves the deadline and the TTL on every master", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, c, "ext-ok", time.Second)
		defer l.Release(ctx)
		before := l.Deadline()
		if err := l.Extend(ctx, 3*time.Second); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if !l.Deadline().After(before) {
			t.Errorf("deadline %v not after %v", l.Deadline(), before)
		}
		waitUntil(t, "every master extended", func() bool {
			for _, m := range cl.Masters {
				if m.Admin().PTTL(adminCtx(t), "ext-ok").Val() <= time.Second {
					return false
				}
			}
			return true
		})
	})

	t.Run("sets the key again on masters that lost it", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, c, "ext-reset", 5*time.Second)
		defer l.Release(ctx)
		waitUntil(t, "the key on every master", func() bool { return holders(t, cl, "ext-reset", l.Token()) == 5 })
		for _, m := range cl.Masters[:2] {
			m.Admin().Del(adminCtx(t), "ext-reset")
		}
		if n := holders(t, cl, "ext-reset", l.Token()); n != 3 {
			t.Fatalf("setup: key on %d masters, want 3", n)
		}
		if err := l.Extend(ctx, 5*time.Second); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		// Extend returns at the majority; the other masters follow.
		waitUntil(t, "the key back on all 5 masters", func() bool { return holders(t, cl, "ext-reset", l.Token()) == 5 })
		for _, m := range cl.Masters[:2] {
			if pttl := m.Admin().PTTL(adminCtx(t), "ext-reset").Val(); pttl <= 0 {
				t.Errorf("re-set key on %s has PTTL %v, want a TTL", m.Addr, pttl)
			}
		}
	})

	t.Run("never overwrites another holder's key on a minority", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, c, "ext-foreign", 5*time.Second)
		defer l.Release(ctx)
		cl.Masters[0].Admin().Set(adminCtx(t), "ext-foreign", "someone-else", 5*time.Second)
		if err := l.Extend(ctx, 5*time.Second); err != nil {
			t.Fatalf("Extend with 4 of 5: %v", err)
		}
		if v := valueOn(t, cl.Masters[0], "ext-foreign"); v != "someone-else" {
			t.Errorf("the foreign key became %q", v)
		}
	})

	t.Run("an expired lock can be neither extended nor released, and the new holder is untouched", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		old := mustAcquire(t, c, "ext-expired", 100*time.Millisecond)
		<-old.Context().Done()
		if cause := context.Cause(old.Context()); !errors.Is(cause, redlock.ErrExpired) {
			t.Errorf("context cause %v, want ErrExpired", cause)
		}
		// The context ends at the validity, a little before the keys expire: wait for the
		// keys too, so that the next holder is refused nowhere and sets its key everywhere.
		waitUntil(t, "the old key expired on every master", func() bool { return keysOn(t, cl, "ext-expired") == 0 })
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		next, err := c.Acquire(actx, "ext-expired", 5*time.Second)
		if err != nil {
			t.Fatalf("the next holder: %v", err)
		}
		acquiredAt := time.Now()
		defer next.Release(ctx)
		// The new holder's value and remaining TTL on every master. The old holder extends
		// by more than the new holder's TTL: a PTTL that went up was touched by it.
		snapshot := func() (values []string, pttls []time.Duration) {
			for _, m := range cl.Masters {
				values = append(values, valueOn(t, m, "ext-expired"))
				pttls = append(pttls, m.Admin().PTTL(adminCtx(t), "ext-expired").Val())
			}
			return values, pttls
		}
		// Acquire returns at the majority; let the last SETs land first. A SET that has not
		// landed a second later (node timeouts are at most 50ms) was never sent: on a loaded
		// machine a request whose deadline passed in the queue is dropped, by design.
		waitUntil(t, "the new holder's last SETs", func() bool {
			return holders(t, cl, "ext-expired", next.Token()) == 5 || time.Since(acquiredAt) > time.Second
		})
		valuesBefore, pttlsBefore := snapshot()
		if err := old.Extend(ctx, 9*time.Second); !errors.Is(err, redlock.ErrExpired) {
			t.Errorf("Extend of the expired lock: %v, want ErrExpired", err)
		}
		if err := old.Release(ctx); !errors.Is(err, redlock.ErrExpired) {
			t.Errorf("Release of the expired lock: %v, want ErrExpired", err)
		}
		valuesAfter, pttlsAfter := snapshot()
		if strings.Join(valuesAfter, ",") != strings.Join(valuesBefore, ",") {
			t.Errorf("the new holder's keys changed: before %v, after %v", valuesBefore, valuesAfter)
		}
		for i := range pttlsAfter {
			if pttlsAfter[i] > pttlsBefore[i] {
				t.Errorf("master %d: the new holder's TTL went up from %v to %v", i, pttlsBefore[i], pttlsAfter[i])
			}
		}
		if n := holders(t, cl, "ext-expired", next.Token()); n < 3 {
			t.Errorf("the new holder's key is on %d masters, want a majority", n)
		}
		if next.Fence() <= old.Fence() {
			t.Errorf("new holder fence %d <= old %d", next.Fence(), old.Fence())
		}
	})

	t.Run("a lock taken over on a majority is lost", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, c, "ext-lost", 5*time.Second)
		for _, m := range cl.Masters[:3] {
			m.Admin().Set(adminCtx(t), "ext-lost", "thief", 5*time.Second)
		}
		if err := l.Extend(ctx, 5*time.Second); !errors.Is(err, redlock.ErrLost) {
			t.Fatalf("Extend: %v, want ErrLost", err)
		}
		if !errors.Is(context.Cause(l.Context()), redlock.ErrLost) {
			t.Errorf("context cause %v, want ErrLost", context.Cause(l.Context()))
		}
		if err := l.Release(ctx); !errors.Is(err, redlock.ErrLost) {
			t.Errorf("Release of a lost lock: %v, want ErrLost", err)
		}
		if n := holders(t, cl, "ext-lost", "thief"); n != 3 {
			t.Errorf("the thief's key is on %d masters, want 3", n)
		}
	})

	t.Run("the number of extensions is bounded", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{MaxExtensions: 2})
		l := mustAcquire(t, c, "ext-limit", 5*time.Second)
		defer l.Release(ctx)
		for i := 0; i < 2; i++ {
			if err := l.Extend(ctx, 5*time.Second); err != nil {
				t.Fatalf("extension %d: %v", i+1, err)
			}
		}
		if err := l.Extend(ctx, 5*time.Second); !errors.Is(err, redlock.ErrExtensionLimit) {
			t.Errorf("third extension: %v, want ErrExtensionLimit", err)
		}
	})
}

func TestInputValidation(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	c := newClient(t, cl, redlock.Options{MaxTTL: 10 * time.Second})
	ctx := context.Background()
	tests := []struct {
		name    string
		key     string
		ttl     time.Duration
		want    error
		mention string
	}{
		{"ttl above MaxTTL", "k", 11 * time.Second, redlock.ErrTTLTooLong, "MaxTTL 10s"},
		{"zero ttl", "k", 0, redlock.ErrInvalid, "positive TTL"},
		{"negative ttl", "k", -time.Second, redlock.ErrInvalid, "positive TTL"},
		{"sub-millisecond ttl", "k", time.Microsecond, redlock.ErrInvalid, "1ms"},
		{"empty key", "", time.Second, redlock.ErrInvalid, "empty lock name"},
		{"key naming a fencing register", "k:fence", time.Second, redlock.ErrInvalid, ":fence"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, op := range []struct {
				name string
				fn   func() error
			}{
				{"TryAcquire", func() error { _, err := c.TryAcquire(ctx, tt.key, tt.ttl); return err }},
				{"Acquire", func() error { _, err := c.Acquire(ctx, tt.key, tt.ttl); return err }},
			} {
				err := op.fn()
				if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mention) {
					t.Errorf("%s: %v, want %v mentioning %q", op.name, err, tt.want, tt.mention)
				}
			}
			if n := keysOn(t, cl, tt.key); tt.key != "" && n != 0 {
				t.Errorf("a refused request left a key on %d masters", n)
			}
		})
	}
	t.Run("Extend above MaxTTL", func(t *testing.T) {
		l := mustAcquire(t, c, "ext-too-long", time.Second)
		defer l.Release(ctx)
		if err := l.Extend(ctx, time.Minute); !errors.Is(err, redlock.ErrTTLTooLong) {
			t.Errorf("Extend(1m): %v, want ErrTTLTooLong", err)
		}
	})
}

func TestNewValidation(t *testing.T) {
	safe := func(addr string) redis.UniversalClient {
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1}) // never dialled
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	three := []redis.UniversalClient{safe("127.0.0.1:1"), safe("127.0.0.1:2"), safe("127.0.0.1:3")}
	tests := []struct {
		name    string
		masters []redis.UniversalClient
		opts    redlock.Options
		mention string
	}{
		{"nil master", []redis.UniversalClient{three[0], nil, three[2]}, redlock.Options{}, "masters[1] is nil"},
		{"the same master twice", []redis.UniversalClient{three[0], three[1], safe("127.0.0.1:1")}, redlock.Options{}, "masters[0] and masters[2] both connect to 127.0.0.1:1"},
		{"negative NodeTimeout", three, redlock.Options{NodeTimeout: -1}, "Options.NodeTimeout"},
		{"negative MaxTTL", three, redlock.Options{MaxTTL: -1}, "Options.MaxTTL"},
		{"retry delays inverted", three, redlock.Options{RetryDelayMin: time.Second, RetryDelayMax: time.Millisecond}, "RetryDelayMax"},
		{"negative MaxRetries", three, redlock.Options{MaxRetries: -1}, "Options.MaxRetries"},
		{"drift factor too large", three, redlock.Options{DriftFactor: 0.7}, "Options.DriftFactor"},
		{"negative MaxExtensions", three, redlock.Options{MaxExtensions: -1}, "Options.MaxExtensions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := redlock.New(tt.masters, tt.opts)
			if err == nil {
				_ = c.Close()
				t.Fatal("New accepted it")
			}
			if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("New: %v, want ErrInvalid mentioning %q", err, tt.mention)
			}
		})
	}
}

// TestNewRefusesMasterCounts: Redlock needs an odd number of masters, at least 3 (a
// majority of an even count tolerates no more failures than one fewer; fewer than 3
// tolerate none), as the CLI says for its endpoints.
func TestNewRefusesMasterCounts(t *testing.T) {
	clients := func(n int) []redis.UniversalClient {
		var masters []redis.UniversalClient
		for i := range n {
			rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(i+1), MaxRetries: -1}) // never dialled
			t.Cleanup(func() { _ = rdb.Close() })
			masters = append(masters, rdb)
		}
		return masters
	}
	for _, tt := range []struct {
		masters int
		fix     string
	}{
		{0, "at least 3"}, {1, "at least 3"}, {2, "at least 3"},
		{4, "a majority of 4 tolerates no more failures than 3 masters would: pass 3 or 5 independent masters"},
		{6, "pass 5 or 7"},
	} {
		t.Run(strconv.Itoa(tt.masters)+" masters", func(t *testing.T) {
			c, err := redlock.New(clients(tt.masters), redlock.Options{})
			if err == nil {
				_ = c.Close()
				t.Fatal("New accepted it")
			}
			var ce *redlock.MasterCountError
			if !errors.As(err, &ce) || ce.Masters != tt.masters || !errors.Is(err, redlock.ErrInvalid) {
				t.Fatalf("New: %v, want a *MasterCountError of %d masters matching ErrInvalid", err, tt.masters)
			}
			for _, want := range []string{strconv.Itoa(tt.masters) + " masters given", "Redlock needs an odd number >= 3", tt.fix} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("New: %q does not mention %q", err, want)
				}
			}
		})
	}
	for _, n := range []int{3, 5, 7} {
		c, err := redlock.New(clients(n), redlock.Options{})
		if err != nil {
			t.Fatalf("New with %d masters: %v", n, err)
		}
		_ = c.Close()
	}
}

func TestKeyPrefix(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	c := newClient(t, cl, redlock.Options{KeyPrefix: "app1:"})
	l := mustAcquire(t, c, "orders", time.Second)
	defer l.Release(context.Background())
	if l.Key() != "app1:orders" {
		t.Errorf("Key() = %q, want app1:orders", l.Key())
	}
	waitUntil(t, "the prefixed key on every master", func() bool { return holders(t, cl, "app1:orders", l.Token()) == 3 })
	if n := keysOn(t, cl, "orders"); n != 0 {
		t.Errorf("the unprefixed name exists on %d masters", n)
	}
}

// TestExtendFailureNeverLengthens: a failed Extend may already have changed the TTL on
// the masters it reached, so the holder must never rely on the lock past start + ttl -
// drift of that attempt; an Extend that could never succeed sends nothing.
func TestExtendFailureNeverLengthens(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	ctx := context.Background()
	const long = 10 * time.Second

	// keysIntact reports whether key is held by token on every master with most of the
	// long TTL left: nothing shortened it.
	keysIntact := func(t *testing.T, key, token string) bool {
		t.Helper()
		for _, m := range cl.Masters {
			if valueOn(t, m, key) != token || m.Admin().PTTL(adminCtx(t), key).Val() < long/2 {
				return false
			}
		}
		return true
	}

	t.Run("a ttl that leaves no validity is refused and sends nothing", func(t *testing.T) {
		a := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, a, "ext-tiny", long)
		defer l.Release(ctx)
		waitUntil(t, "the key on every master", func() bool { return holders(t, cl, "ext-tiny", l.Token()) == 5 })
		err := l.Extend(ctx, 2*time.Millisecond)
		if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "drift") {
			t.Fatalf("Extend(2ms): %v, want ErrInvalid naming the drift", err)
		}
		if !keysIntact(t, "ext-tiny", l.Token()) {
			t.Errorf("a refused Extend changed the key on some master")
		}
		if l.Context().Err() != nil {
			t.Errorf("context ended: %v", context.Cause(l.Context()))
		}
		b := newClient(t, cl, redlock.Options{})
		if other, err := b.TryAcquire(ctx, "ext-tiny", long); !errors.Is(err, redlock.ErrTaken) {
			if other != nil {
				_ = other.Release(ctx)
			}
			t.Errorf("another client's TryAcquire while the lock is valid: %v, want ErrTaken", err)
		}
	})

	t.Run("a cancelled ctx sends nothing", func(t *testing.T) {
		a := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, a, "ext-cancelled", long)
		defer l.Release(ctx)
		waitUntil(t, "the key on every master", func() bool { return holders(t, cl, "ext-cancelled", l.Token()) == 5 })
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := l.Extend(cctx, 100*time.Millisecond); !errors.Is(err, context.Canceled) {
			t.Fatalf("Extend: %v, want context.Canceled", err)
		}
		if !keysIntact(t, "ext-cancelled", l.Token()) {
			t.Errorf("an Extend with a cancelled ctx changed the key on some master")
		}
		if l.Context().Err() != nil {
			t.Errorf("context ended: %v", context.Cause(l.Context()))
		}
	})

	t.Run("a shorter extension that fails still shortens the validity", func(t *testing.T) {
		a := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, a, "ext-short-fail", long)
		waitUntil(t, "the key on every master", func() bool { return holders(t, cl, "ext-short-fail", l.Token()) == 5 })
		paused := cl.Masters[:3]
		resumeOnCleanup(t, paused...)
		for _, m := range paused {
			if err := m.Pause(); err != nil {
				t.Fatalf("pause %s: %v", m.Addr, err)
			}
		}
		const short = 300 * time.Millisecond
		start := time.Now()
		err := l.Extend(ctx, short)
		if !errors.Is(err, redlock.ErrUnavailable) {
			t.Fatalf("Extend with 3 of 5 paused: %v, want ErrUnavailable", err)
		}
		// The two running masters now expire the key within short: the validity must end
		// by then too, whatever the round's outcome.
		if d := l.Deadline(); d.After(start.Add(short)) {
			t.Errorf("deadline %v after the failed Extend, beyond the %v it may have set on the masters", time.Until(d), short)
		}
		select {
		case <-l.Context().Done():
		case <-time.After(15 * time.Second): // hang guard
			t.Fatalf("the context is still live %v after a failed %v extension", time.Since(start), short)
		}
		if cause := context.Cause(l.Context()); !errors.Is(cause, redlock.ErrExpired) {
			t.Errorf("context cause %v, want ErrExpired", cause)
		}
		for _, m := range paused {
			_ = m.Resume()
		}
	})
}

// TestExtendRacingRelease: an Extend that passed its checks before a concurrent Release
// must not reach the masters after the release: its script sets the key again where it
// is missing, which would re-create the lock nobody holds for a whole TTL.
func TestExtendRacingRelease(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	ctx := context.Background()
	c := newClient(t, cl, redlock.Options{})
	l := mustAcquire(t, c, "ext-vs-release", 5*time.Second)
	reached := make(chan struct{})
	releaseDone := make(chan struct{})
	redlock.SetBeforeExtendSend(c, func() {
		close(reached)
		// Let the Release run first if it can; a Release that waits for this extension
		// cannot, and the bound lets the extension go on.
		select {
		case <-releaseDone:
		case <-time.After(testNodeTimeout / 3): // well within the extension's own node timeout
		}
	})
	extendErr := make(chan error, 1)
	go func() { extendErr <- l.Extend(ctx, 30*time.Second) }()
	<-reached
	releaseErr := l.Release(ctx)
	close(releaseDone)
	if err := <-extendErr; err != nil && !errors.Is(err, redlock.ErrReleased) {
		t.Errorf("Extend: %v, want nil (it ran before the release) or ErrReleased", err)
	}
	if releaseErr != nil {
		t.Errorf("Release: %v", releaseErr)
	}
	// Release returns at the majority; the other deletes follow. A key re-created by the
	// extension would stay for 30s, beyond the wait's bound.
	waitUntil(t, "the key gone from every master", func() bool { return keysOn(t, cl, "ext-vs-release") == 0 })
	other := newClient(t, cl, redlock.Options{})
	l2, err := other.TryAcquire(ctx, "ext-vs-release", time.Second)
	if err != nil {
		t.Fatalf("another client after the release: %v", err)
	}
	_ = l2.Release(ctx)
}
