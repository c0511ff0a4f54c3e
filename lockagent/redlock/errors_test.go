package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// readmeClient is a client built as the README's snippet builds one.
func readmeClient(t *testing.T, addr, user, password string, tweak func(*redis.Options)) redis.UniversalClient {
	t.Helper()
	o := &redis.Options{Addr: addr, Username: user, Password: password, MaxRetries: -1, ContextTimeoutEnabled: true}
	if tweak != nil {
		tweak(o)
	}
	r := redis.NewClient(o)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// acquireOrHang runs Acquire with a context that has no deadline, failing the test (not
// hanging it) if it never returns.
func acquireOrHang(t *testing.T, c *redlock.Client, name string, opts ...redlock.LockOption) (*redlock.Lock, error) {
	t.Helper()
	type result struct {
		l   *redlock.Lock
		err error
	}
	done := make(chan result, 1)
	ctx, cancel := context.WithCancel(context.Background()) // no deadline, as in the README
	t.Cleanup(cancel)
	go func() {
		l, err := c.Acquire(ctx, name, 5*time.Second, opts...)
		done <- result{l, err}
	}()
	select {
	case r := <-done:
		return r.l, r.err
	case <-time.After(hangGuard):
		cancel()
		t.Fatalf("Acquire(%q) with no deadline did not return: a denial must not be retried", name)
		return nil, nil
	}
}

const hangGuard = 60 * time.Second

// TestWrongPasswordIsDenied: a wrong password is reported as ErrDenied with the server's
// WRONGPASS message, after one attempt, even by Acquire with no deadline; with and
// without fencing (script vs SET+PTTL pipeline, whose unanswered replies used to show as
// "unexpected type=<nil>").
func TestWrongPasswordIsDenied(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	for _, noFencing := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoFencing=%v", noFencing), func(t *testing.T) {
			var masters []redis.UniversalClient
			for _, m := range cl.Masters {
				masters = append(masters, readmeClient(t, m.Addr, redistest.LockUser, "not-the-password", nil))
			}
			var attempts atomic.Int64
			c, err := redlock.New(masters, redlock.Options{NoFencing: noFencing, NodeTimeout: testNodeTimeout,
				Hooks: redlock.HookFuncs{OnOperation: func(e redlock.OperationEvent) {
					if e.Op == redlock.OpAcquire {
						attempts.Store(int64(e.Attempts))
					}
				}}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			_, err = acquireOrHang(t, c, "denied")
			if !errors.Is(err, redlock.ErrDenied) {
				t.Fatalf("Acquire with a wrong password: %v, want ErrDenied", err)
			}
			var de *redlock.DeniedError
			if !errors.As(err, &de) {
				t.Errorf("no *DeniedError in %v", err)
			}
			if !strings.Contains(err.Error(), "WRONGPASS") {
				t.Errorf("error does not show the server's message: %v", err)
			}
			if strings.Contains(err.Error(), "unexpected") {
				t.Errorf("error shows a parse failure instead of the cause: %v", err)
			}
			if n := attempts.Load(); n != 1 {
				t.Errorf("Acquire made %d attempts, want 1: a denial is not retried", n)
			}
		})
	}
}

// TestMinorityDenialIsRetried: a master that denies the lock user (a new master whose
// users are off until its fences are seeded) while the others can still make a majority
// is one failed master: an attempt that also meets the lock held is retried, and the lock
// is taken once the holder's key expires. Denied by a majority, Acquire returns ErrDenied
// after one attempt (the negative control: retrying cannot help there).
func TestMinorityDenialIsRetried(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	clientDenyingOn := func(t *testing.T, denied int) (*redlock.Client, *atomic.Int64) {
		var masters []redis.UniversalClient
		for i, m := range cl.Masters {
			password := redistest.LockPassword
			if i < denied {
				password = "not-the-password"
			}
			masters = append(masters, readmeClient(t, m.Addr, redistest.LockUser, password, nil))
		}
		var attempts atomic.Int64
		c, err := redlock.New(masters, redlock.Options{NodeTimeout: testNodeTimeout,
			Hooks: redlock.HookFuncs{OnOperation: func(e redlock.OperationEvent) {
				if e.Op == redlock.OpAcquire {
					attempts.Store(int64(e.Attempts))
				}
			}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c, &attempts
	}
	// Another holder's key on masters 0-2 (a majority) for a second: the attempt is denied
	// by master 0, refused by 1 and 2, granted by 3 and 4, so no majority either way yet.
	holdOnFirstThree := func(t *testing.T, key string) {
		for _, m := range cl.Masters[:3] {
			if err := m.Admin().Set(adminCtx(t), key, "another-holder", time.Second).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("denied by one of five: retried until the holder's key expires", func(t *testing.T) {
		c, attempts := clientDenyingOn(t, 1)
		holdOnFirstThree(t, "minority-denied")
		l, err := acquireOrHang(t, c, "minority-denied")
		if err != nil {
			t.Fatalf("Acquire with one master denying: %v, want the lock once the holder's key expired", err)
		}
		if n := attempts.Load(); n < 2 {
			t.Errorf("Acquire made %d attempts, want a retry after the denied and refused attempt", n)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("denied by three of five: ErrDenied after one attempt", func(t *testing.T) {
		c, attempts := clientDenyingOn(t, 3)
		holdOnFirstThree(t, "majority-denied")
		_, err := acquireOrHang(t, c, "majority-denied")
		if !errors.Is(err, redlock.ErrDenied) {
			t.Fatalf("Acquire with three masters denying: %v, want ErrDenied", err)
		}
		if n := attempts.Load(); n != 1 {
			t.Errorf("Acquire made %d attempts, want 1", n)
		}
	})
}

// TestMissingPermissionIsDenied: a user whose ACL lacks the scripts gets NOPERM as
// ErrDenied, not retried.
func TestMissingPermissionIsDenied(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	var masters []redis.UniversalClient
	for _, m := range cl.Masters {
		if err := m.Admin().Do(adminCtx(t), "acl", "setuser", "noscripts", "on", ">pw", "~*", "&*", "+ping", "+set", "+get", "+pttl").Err(); err != nil {
			t.Fatalf("ACL SETUSER on %s: %v", m.Addr, err)
		}
		masters = append(masters, readmeClient(t, m.Addr, "noscripts", "pw", nil))
	}
	c, err := redlock.New(masters, redlock.Options{NodeTimeout: testNodeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, err = acquireOrHang(t, c, "noperm")
	if !errors.Is(err, redlock.ErrDenied) || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("Acquire without EVALSHA permission: %v, want ErrDenied showing NOPERM", err)
	}
}

// TestConnectionRefusedIsNamed: a master that refuses connections is reported as
// "connection refused", not as a node timeout, both when go-redis dials once and with
// go-redis's default dial retries (which outlast a node timeout).
func TestConnectionRefusedIsNamed(t *testing.T) {
	var addrs []string
	host := redistest.Loopback(t) // the ports stay closed: no other test listens there
	for range 3 {
		port, err := redistest.FreePort(host)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, fmt.Sprintf("%s:%d", host, port))
	}
	for _, tc := range []struct {
		name  string
		tweak func(*redis.Options)
	}{
		{"one dial", func(o *redis.Options) { o.DialerRetries = 1 }},
		{"go-redis default dial retries", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var masters []redis.UniversalClient
			for _, a := range addrs {
				masters = append(masters, readmeClient(t, a, redistest.LockUser, "x", tc.tweak))
			}
			c, err := redlock.New(masters, redlock.Options{NodeTimeout: testNodeTimeout})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			// The first attempt may end before go-redis gave up dialing (default retries);
			// later attempts know the cause. Bounded by the hang guard, never timed.
			var last error
			deadline := time.Now().Add(hangGuard)
			for time.Now().Before(deadline) {
				_, last = c.TryAcquire(context.Background(), "refused", 5*time.Second)
				if refusals(last) == len(addrs) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			var ue *redlock.UnavailableError
			if !errors.As(last, &ue) {
				t.Fatalf("TryAcquire with nothing listening: %v, want *UnavailableError", last)
			}
			if n := refusals(last); n != len(addrs) {
				t.Fatalf("error names %d refusals, want %d: %v", n, len(addrs), last)
			}
			for _, me := range ue.Errors {
				if errors.Is(me, redlock.ErrNodeTimeout) {
					t.Errorf("master %d: a refused connection matches ErrNodeTimeout: %v", me.Master, me)
				}
				if !errors.Is(me, syscall.ECONNREFUSED) {
					t.Errorf("master %d: errors.Is(ECONNREFUSED) false: %v", me.Master, me)
				}
			}
			if strings.Contains(last.Error(), "did not answer") {
				t.Errorf("a refusal is reported as a timeout: %v", last)
			}
		})
	}
}

// refusals counts the masters whose error in err says first "connection refused".
func refusals(err error) int {
	var ue *redlock.UnavailableError
	if !errors.As(err, &ue) {
		return 0
	}
	n := 0
	for _, me := range ue.Errors {
		if strings.HasPrefix(me.Err.Error(), "connection refused") {
			n++
		}
	}
	return n
}

// TestUnavailableCountsAddUp: every master is counted once in UnavailableError: votes,
// refusals and one error each, out of N.
func TestUnavailableCountsAddUp(t *testing.T) {
	t.Run("refused, killed and granted", func(t *testing.T) {
		cl := redistest.Start(t, redistest.Options{Masters: 5})
		if err := cl.Masters[0].Admin().Set(adminCtx(t), "counts", "someone-else", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		for _, m := range cl.Masters[1:3] {
			if err := m.Kill(); err != nil {
				t.Fatal(err)
			}
		}
		c := newClient(t, cl, redlock.Options{})
		_, err := c.TryAcquire(context.Background(), "counts", 5*time.Second)
		checkCounts(t, err, 2, 1, 5)
		if !strings.Contains(err.Error(), "2/5 masters confirmed, need 3") {
			t.Errorf("error text does not add up: %v", err)
		}
	})
	t.Run("grants with unreadable fencing registers are errors, not votes", func(t *testing.T) {
		cl := redistest.Start(t, redistest.Options{Masters: 5})
		for _, m := range cl.Masters[:2] {
			if err := m.Admin().Set(adminCtx(t), "badreg"+redlock.FenceSuffix, "not-a-number", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.Masters[4].Kill(); err != nil {
			t.Fatal(err)
		}
		c := newClient(t, cl, redlock.Options{})
		_, err := c.TryAcquire(context.Background(), "badreg", 5*time.Second)
		checkCounts(t, err, 2, 0, 5)
		if !strings.Contains(err.Error(), "2/5 masters confirmed, need 3") {
			t.Errorf("error text does not add up: %v", err)
		}
	})
}

func checkCounts(t *testing.T, err error, votes, refused, n int) {
	t.Helper()
	var ue *redlock.UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want *UnavailableError", err)
	}
	if ue.Votes != votes || ue.Refused != refused || ue.Masters != n {
		t.Errorf("votes %d refused %d masters %d, want %d %d %d: %v", ue.Votes, ue.Refused, ue.Masters, votes, refused, n, err)
	}
	if got := ue.Votes + ue.Refused + len(ue.Errors); got != n {
		t.Errorf("votes+refused+errors = %d, want %d masters: %v", got, n, err)
	}
	seen := map[int]bool{}
	for _, me := range ue.Errors {
		if seen[me.Master] {
			t.Errorf("master %d listed twice: %v", me.Master, err)
		}
		seen[me.Master] = true
	}
}

// TestFenceSuffixRefused: a lock name ending in FenceSuffix is ErrInvalid at once.
func TestFenceSuffixRefused(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	c := newClient(t, cl, redlock.Options{})
	_, err := acquireOrHang(t, c, "jobs"+redlock.FenceSuffix)
	if !errors.Is(err, redlock.ErrInvalid) {
		t.Errorf("Acquire of a name ending in %s: %v, want ErrInvalid", redlock.FenceSuffix, err)
	}
}

// TestRetryHookReportsTaken: WithRetryHook sees each refused attempt as a *TakenError
// with an estimate of when the key frees up.
func TestRetryHookReportsTaken(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	c := newClient(t, cl, redlock.Options{})
	holder := mustAcquire(t, c, "hooked", 5*time.Second)
	defer holder.Release(context.Background())
	var taken atomic.Pointer[redlock.TakenError]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := c.Acquire(ctx, "hooked", 5*time.Second, redlock.WithRetryHook(func(_ int, err error) {
		var te *redlock.TakenError
		if errors.As(err, &te) {
			taken.Store(te)
			cancel()
		}
	}))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire: %v, want cancelled by the hook", err)
	}
	te := taken.Load()
	if te == nil {
		t.Fatal("the hook never saw a *TakenError")
	}
	if te.FreeIn <= 0 || te.FreeIn > 5*time.Second {
		t.Errorf("TakenError.FreeIn = %v, want the holder's remaining TTL (0 < FreeIn <= 5s)", te.FreeIn)
	}
}
