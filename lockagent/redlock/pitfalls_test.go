package redlock_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestPitfalls covers the client-side pitfalls in the README ("The ten pitfalls"), one behaviour per
// subtest, against five real masters.
func TestPitfalls(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	ctx := context.Background()

	// With fencing, the SET runs inside the acquire script (which also raises the fencing
	// register, a sibling key); without, it is a plain command. Either way the lock key is
	// written by exactly one SET key token NX PX ttl, and nothing else touches its TTL.
	for _, tc := range []struct {
		name, key string
		opts      redlock.Options
		origin    string // MONITOR prefix of the SET: "lua " inside a script, "" top-level
	}{
		{"1 acquire is one atomic SET NX PX (inside the acquire script with fencing): every master has the key with a TTL at once", "p1", redlock.Options{}, "lua "},
		{"1 acquire is one atomic SET NX PX (a plain command with NoFencing): every master has the key with a TTL at once", "p1-nofence", redlock.Options{NoFencing: true}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mon := startMonitor(t, cl.Masters[0])
			c := newClient(t, cl, tc.opts)
			l := mustAcquire(t, c, tc.key, 5*time.Second)
			defer l.Release(ctx)
			waitUntil(t, "the key on every master", func() bool { return holders(t, cl, tc.key, l.Token()) == 5 })
			for _, m := range cl.Masters {
				if pttl := m.Admin().PTTL(adminCtx(t), tc.key).Val(); pttl <= 0 {
					t.Errorf("master %s: PTTL %v right after acquire, want > 0", m.Addr, pttl)
				}
			}
			want := strings.ToLower(fmt.Sprintf(`%s"set" "%s" "%s" "nx" "px" "5000"`, tc.origin, tc.key, l.Token())) // commands() lowercases
			mon.waitFor(t, tc.key, want)
			var sets []string
			for _, cmd := range mon.commands(tc.key) {
				bare := strings.TrimPrefix(cmd, "lua ")
				if strings.HasPrefix(bare, `"set"`) {
					sets = append(sets, cmd)
				}
				for _, bad := range []string{`"setnx"`, `"expire"`, `"pexpire"`, `"getset"`, `"persist"`} {
					if strings.HasPrefix(bare, bad) {
						t.Errorf("acquire sent %s: SETNX/EXPIRE as separate commands can leave a key without TTL", cmd)
					}
				}
			}
			if len(sets) != 1 || sets[0] != want {
				t.Errorf("SETs of the lock key: %q, want exactly one: %s", sets, want)
			}
		})
	}

	t.Run("2 the value is a random token, never an expiry time, and nothing GETSETs it", func(t *testing.T) {
		mon := startMonitor(t, cl.Masters[0])
		c := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, c, "p2", 5*time.Second)
		if err := l.Extend(ctx, 5*time.Second); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		raw, err := base64.RawURLEncoding.DecodeString(l.Token())
		if err != nil || len(raw) != 20 {
			t.Errorf("token %q: want 20 random bytes, base64url (%v)", l.Token(), err)
		}
		// Acquire and Extend return at a majority: a master whose reply came late may not
		// have the key yet, but none has any other value.
		stored, onMonitored := 0, false
		for i, m := range cl.Masters {
			switch got := valueOn(t, m, "p2"); got {
			case l.Token():
				stored++
				onMonitored = onMonitored || i == 0
			case "":
			default:
				t.Errorf("master %d: stored value %q, want the token %q", i, got, l.Token())
			}
		}
		if stored < 3 {
			t.Errorf("the token is stored on %d masters, want a majority", stored)
		}
		other := mustAcquire(t, c, "p2-other", 5*time.Second)
		if other.Token() == l.Token() {
			t.Errorf("two acquisitions got the same token %q", l.Token())
		}
		_ = other.Release(ctx)
		_ = l.Release(ctx)
		if onMonitored {
			mon.waitFor(t, "p2", `lua "del"`) // every command for p2 has been seen
		}
		for _, cmd := range mon.commands("p2") {
			if strings.Contains(cmd, `"getset"`) {
				t.Errorf("client sent %s", cmd)
			}
		}
	})

	t.Run("3 every lock key has a TTL, after acquire and after extend", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, c, "p3", 2*time.Second)
		defer l.Release(ctx)
		if err := l.Extend(ctx, 4*time.Second); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		// Calls return once a majority answered; the last masters follow.
		waitUntil(t, "the key on every master", func() bool { return holders(t, cl, "p3", l.Token()) == 5 })
		for _, m := range cl.Masters {
			if pttl := m.Admin().PTTL(adminCtx(t), "p3").Val(); pttl <= 0 || pttl > 4*time.Second {
				t.Errorf("master %s: PTTL %v after extending to 4s, want in (0, 4s]", m.Addr, pttl)
			}
		}
		// Extend returns once a majority confirmed; the others follow.
		waitUntil(t, "every master extended", func() bool {
			for _, m := range cl.Masters {
				if m.Admin().PTTL(adminCtx(t), "p3").Val() <= 2*time.Second {
					return false
				}
			}
			return true
		})
	})

	t.Run("4a a released lock is gone from every master", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, c, "p4a", 5*time.Second)
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		waitUntil(t, "no key left", func() bool { return keysOn(t, cl, "p4a") == 0 })
		if err := l.Release(ctx); !errors.Is(err, redlock.ErrReleased) {
			t.Errorf("second Release: %v, want ErrReleased", err)
		}
	})

	t.Run("4b a holder that vanishes without releasing frees the lock at expiry", func(t *testing.T) {
		gone, err := redlock.New(lockClients(t, cl), redlock.Options{NodeTimeout: testNodeTimeout})
		if err != nil {
			t.Fatal(err)
		}
		l := mustAcquire(t, gone, "p4b", 300*time.Millisecond)
		_ = gone.Close() // the holder disappears with its lock
		c := newClient(t, cl, redlock.Options{})
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		next, err := c.Acquire(actx, "p4b", time.Second)
		if err != nil {
			t.Fatalf("Acquire after the holder vanished: %v", err)
		}
		defer next.Release(ctx)
		if next.Token() == l.Token() {
			t.Fatal("got the vanished holder's token back")
		}
		if next.Fence() <= l.Fence() {
			t.Errorf("fence %d after the vanished holder's %d, want larger", next.Fence(), l.Fence())
		}
	})

	t.Run("5 A's release cannot delete B's lock after A expired and B acquired", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		a := mustAcquire(t, c, "p5", 100*time.Millisecond)
		<-a.Context().Done()
		waitUntil(t, "A's keys expired", func() bool { return keysOn(t, cl, "p5") == 0 })
		b := mustAcquire(t, c, "p5", 5*time.Second)
		defer b.Release(ctx)
		waitUntil(t, "B's key on every master", func() bool { return holders(t, cl, "p5", b.Token()) == 5 })
		if err := a.Release(ctx); !errors.Is(err, redlock.ErrExpired) {
			t.Errorf("A.Release after expiry: %v, want ErrExpired", err)
		}
		if n := holders(t, cl, "p5", b.Token()); n != 5 {
			t.Errorf("B's key is on %d masters after A's release, want 5", n)
		}
	})

	t.Run("6 release checks and deletes in one function: a foreign key is untouched", func(t *testing.T) {
		mon := startMonitor(t, cl.Masters[0])
		c := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, c, "p6", 5*time.Second)
		// Another client's value replaces ours everywhere (as if ours expired and it won).
		for _, m := range cl.Masters {
			m.Admin().Set(adminCtx(t), "p6", "someone-else", 5*time.Second)
		}
		if err := l.Release(ctx); !errors.Is(err, redlock.ErrLost) {
			t.Errorf("Release of a key that is not ours: %v, want ErrLost", err)
		}
		mon.waitFor(t, "p6", `lua "get"`)
		cmds := mon.commands("p6") // before the test's own GETs below
		if n := holders(t, cl, "p6", "someone-else"); n != 5 {
			t.Errorf("the other client's key survives on %d masters, want 5", n)
		}
		for _, cmd := range cmds {
			if strings.HasPrefix(cmd, `"get"`) || strings.HasPrefix(cmd, `"del"`) {
				t.Errorf("top-level %s: check and delete must run inside one script", cmd)
			}
		}
		// The release function has three keys (the lock, its fencing register and its wait
		// queue) and the token as its first argument (the acquire function has two keys).
		release := strings.ToLower(fmt.Sprintf(`"3" "p6" "p6:fence" "p6:waitq" "%s"`, l.Token()))
		found := false
		for _, cmd := range cmds {
			found = found || (strings.HasPrefix(cmd, `"fcall"`) && strings.Contains(cmd, release))
		}
		if !found {
			t.Errorf("no FCALL of the release function, commands: %v", cmds)
		}
	})

	t.Run("7a auto-renewal keeps the lock past its TTL while the work runs", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		// A TTL well above the fsync stalls of a loaded test machine (0.5s seen on every
		// master at once): a 300ms lock that no master can extend for 0.5s does expire,
		// and the context rightly says so.
		l := mustAcquire(t, c, "p7a", 2*time.Second, redlock.WithAutoRenew())
		firstDeadline := l.Deadline()
		// Work for two and a half TTLs.
		work := time.NewTimer(5 * time.Second)
		select {
		case <-work.C:
		case <-l.Context().Done():
			t.Fatalf("lock context ended during the work: %v", context.Cause(l.Context()))
		}
		if !l.Deadline().After(firstDeadline) {
			t.Error("deadline never moved: no renewal happened")
		}
		if n := holders(t, cl, "p7a", l.Token()); n < 3 {
			t.Errorf("key held on %d masters after 2.5 TTLs of work, want a majority", n)
		}
		if err := l.Release(ctx); err != nil {
			t.Errorf("Release: %v", err)
		}
		if !errors.Is(context.Cause(l.Context()), redlock.ErrReleased) {
			t.Errorf("context cause after release: %v", context.Cause(l.Context()))
		}
	})

	t.Run("7b the lock context ends with ErrLost when renewal finds the lock taken", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		l := mustAcquire(t, c, "p7b", 600*time.Millisecond, redlock.WithAutoRenew())
		for _, m := range cl.Masters {
			m.Admin().Set(adminCtx(t), "p7b", "thief", 10*time.Second)
		}
		<-l.Context().Done()
		if cause := context.Cause(l.Context()); !errors.Is(cause, redlock.ErrLost) {
			t.Errorf("context cause %v, want ErrLost", cause)
		}
		if n := holders(t, cl, "p7b", "thief"); n != 5 {
			t.Errorf("renewal touched the other holder's key: it is on %d masters", n)
		}
	})

	t.Run("7c the lock context ends when renewal stops at the extension limit", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{MaxExtensions: 2})
		// On a busy machine a renewal can miss a 150ms validity before the limit is reached
		// (the lock then ends as expired without the limit, as it must): that run shows
		// nothing about the limit, so it is tried again with a new key. A lock that never
		// ends with the limit fails.
		var l *redlock.Lock
		var cause error
		for try := 0; ; try++ {
			l = mustAcquire(t, c, fmt.Sprintf("p7c-%d", try), 150*time.Millisecond, redlock.WithAutoRenew())
			<-l.Context().Done()
			cause = context.Cause(l.Context())
			if errors.Is(cause, redlock.ErrExtensionLimit) || !renewalMissedByClock(cause) || try == 9 {
				break
			}
			t.Logf("try %d: the renewal missed the validity before the limit: %v", try, cause)
		}
		defer l.Release(ctx)
		if !errors.Is(cause, redlock.ErrExpired) || !errors.Is(cause, redlock.ErrExtensionLimit) {
			t.Errorf("context cause %v, want ErrExpired wrapping ErrExtensionLimit", cause)
		}
		if err := l.Extend(ctx, 150*time.Millisecond); err == nil {
			t.Error("Extend succeeded after the validity ended")
		}
	})

	t.Run("9 re-entrant holds: the same owner acquires again, the last release frees the lock", func(t *testing.T) {
		c := newClient(t, cl, redlock.Options{})
		outer := mustAcquire(t, c, "p9", 5*time.Second, redlock.WithReentrant("job-42"))
		waitUntil(t, "the key on every master", func() bool { return holders(t, cl, "p9", outer.Token()) == 5 })
		inner, err := c.Acquire(ctx, "p9", 5*time.Second, redlock.WithReentrant("job-42"))
		if err != nil {
			t.Fatalf("re-entrant Acquire by the same owner: %v", err)
		}
		if inner.Token() != outer.Token() || inner.Fence() != outer.Fence() {
			t.Errorf("inner hold (%s, fence %d) differs from outer (%s, fence %d)", inner.Token(), inner.Fence(), outer.Token(), outer.Fence())
		}
		if _, err := c.TryAcquire(ctx, "p9", 5*time.Second, redlock.WithReentrant("other-owner")); !errors.Is(err, redlock.ErrTaken) {
			t.Errorf("another owner: %v, want ErrTaken", err)
		}
		if _, err := c.TryAcquire(ctx, "p9", 5*time.Second); !errors.Is(err, redlock.ErrTaken) {
			t.Errorf("a non-re-entrant acquisition: %v, want ErrTaken", err)
		}
		if err := inner.Release(ctx); err != nil {
			t.Fatalf("inner Release: %v", err)
		}
		if n := holders(t, cl, "p9", outer.Token()); n != 5 {
			t.Errorf("after the inner release the key is on %d masters, want 5 (outer still holds)", n)
		}
		if inner.Context().Err() == nil {
			t.Error("the released inner handle's context is still live")
		}
		if outer.Context().Err() != nil {
			t.Errorf("the outer handle's context ended: %v", context.Cause(outer.Context()))
		}
		if err := outer.Release(ctx); err != nil {
			t.Fatalf("outer Release: %v", err)
		}
		waitUntil(t, "no key left after the last release", func() bool { return keysOn(t, cl, "p9") == 0 })
		again := mustAcquire(t, c, "p9", 5*time.Second, redlock.WithReentrant("job-42"))
		defer again.Release(ctx)
		if again.Token() == outer.Token() || again.Fence() <= outer.Fence() {
			t.Errorf("a new acquisition after the last release reused the old hold (fence %d -> %d)", outer.Fence(), again.Fence())
		}
	})
}

// renewalMissedByClock: the lock ended as expired because its renewal failed by the clock
// alone (the renewal's deadline passed, or every master that failed it answered nothing in
// time: busyOnly). A renewal the masters refused, a lost key or an invalid call is none of
// these. The cause is "ErrExpired (auto-renewal stopped: <the renewal's error>)".
func renewalMissedByClock(cause error) bool {
	u, ok := cause.(interface{ Unwrap() []error })
	if !ok {
		return false
	}
	errs := u.Unwrap()
	if len(errs) != 2 || !errors.Is(errs[0], redlock.ErrExpired) {
		return false
	}
	renewal := errs[1]
	return errors.Is(renewal, context.DeadlineExceeded) || busyOnly(renewal)
}
