package redlock_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestMain silences go-redis's pool log: the fault tests dial dead masters on purpose.
func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{})
	os.Exit(m.Run())
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// lockClients returns one new lock-user client per master, closed in t.Cleanup.
func lockClients(t *testing.T, cl *redistest.Cluster) []redis.UniversalClient {
	t.Helper()
	var out []redis.UniversalClient
	for _, r := range cl.LockClients() {
		out = append(out, r)
		t.Cleanup(func() { _ = r.Close() })
	}
	return out
}

// evalClients returns one new EVAL-user client per master (the user for clients that
// send their own Lua, such as redsync), closed in t.Cleanup.
func evalClients(t *testing.T, cl *redistest.Cluster) []redis.UniversalClient {
	t.Helper()
	var out []redis.UniversalClient
	for _, r := range cl.EvalClients() {
		out = append(out, r)
		t.Cleanup(func() { _ = r.Close() })
	}
	return out
}

// testNodeTimeout replaces the TTL-derived node timeout in tests that are not about it:
// the machine running the tests may be busy, and a "slow" healthy master would turn a
// behaviour test into a test of the scheduler. Correctness never depends on it.
const testNodeTimeout = 250 * time.Millisecond

// newClient returns a redlock Client over fresh lock-user connections to cl, open
// already: each client PINGs its master once (all at once, errors ignored, at most 2 s),
// as a Client of a running application has its connections. A test's first round then
// does not also dial, run the TLS handshake and AUTH within its node timeout, which a
// busy machine can make longer than that (a healthy master counted as failed).
func newClient(t *testing.T, cl *redistest.Cluster, opts redlock.Options) *redlock.Client {
	t.Helper()
	if opts.NodeTimeout == 0 {
		opts.NodeTimeout = testNodeTimeout
	}
	masters := lockClients(t, cl)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	var wg sync.WaitGroup
	for _, m := range masters {
		wg.Add(1)
		go func() { defer wg.Done(); _ = m.Ping(ctx).Err() }()
	}
	wg.Wait()
	cancel()
	c, err := redlock.New(masters, opts)
	if err != nil {
		t.Fatalf("redlock.New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func adminCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// tryAnswered is c.TryAcquire, made again while the masters did not answer (a fresh
// Client's first round also opens its connections, which a busy machine can make longer
// than the node timeout): it returns the lock, or the error of an attempt the masters
// answered (ErrTaken...), or after 5 attempts the last error.
func tryAnswered(ctx context.Context, t *testing.T, c *redlock.Client, key string, ttl time.Duration) (*redlock.Lock, error) {
	t.Helper()
	for n := 1; ; n++ {
		l, err := c.TryAcquire(ctx, key, ttl)
		if err == nil || !errors.Is(err, redlock.ErrUnavailable) || n == 5 {
			return l, err
		}
		t.Logf("TryAcquire %q, attempt %d: %v: again", key, n, err)
	}
}

// valueOn returns the key's value on one master ("" when absent).
func valueOn(t *testing.T, m *redistest.Master, key string) string {
	t.Helper()
	v, err := m.Admin().Get(adminCtx(t), key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s on %s: %v", key, m.Addr, err)
	}
	return v
}

// holders counts the masters (running ones only) whose key holds token.
func holders(t *testing.T, cl *redistest.Cluster, key, token string) int {
	t.Helper()
	n := 0
	for _, m := range cl.Masters {
		if m.Running() && valueOn(t, m, key) == token {
			n++
		}
	}
	return n
}

// keysOn counts the masters (running ones only) where key exists at all.
func keysOn(t *testing.T, cl *redistest.Cluster, key string) int {
	t.Helper()
	n := 0
	for _, m := range cl.Masters {
		if !m.Running() {
			continue
		}
		c, err := m.Admin().Exists(adminCtx(t), key).Result()
		if err != nil {
			t.Fatalf("EXISTS on %s: %v", m.Addr, err)
		}
		n += int(c)
	}
	return n
}

// waitUntil polls cond until it holds or the (generous) bound passes; the bound is a
// hang guard, not a timing assertion.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// contentionHangGuard bounds how long a contention test waits for its work to be done. It is
// a guard against a hang, not a speed test: only a starved waiter (the bug) or a stalled
// machine waits this long.
const contentionHangGuard = 2 * time.Minute

// runUntil returns the context a contention test's workers run under: it ends once done
// returns true (polled every 5 ms), so the test runs for an amount of work, not for a
// wall-clock window that a busy machine fills with less of it, or at contentionHangGuard.
// finished waits for that end and reports whether done was reached (false: the hang guard).
func runUntil(done func() bool) (ctx context.Context, finished func() bool) {
	ctx, cancel := context.WithTimeout(context.Background(), contentionHangGuard)
	reached := make(chan bool, 1)
	go func() {
		for ctx.Err() == nil {
			if done() {
				reached <- true
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		reached <- false
	}()
	return ctx, func() bool {
		r := <-reached
		cancel()
		return r
	}
}

// mustAcquire acquires key, trying again while an attempt failed only because the machine
// was busy (see busyOnly), for at most a generous hang guard, and logging each such attempt:
// the tests that use it are about what a held lock does, not about acquiring on a loaded
// machine. Any other failure ends the test.
func mustAcquire(t *testing.T, c *redlock.Client, key string, ttl time.Duration, opts ...redlock.LockOption) *redlock.Lock {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		l, err := c.TryAcquire(context.Background(), key, ttl, opts...)
		if err == nil {
			return l
		}
		if !busyOnly(err) || time.Now().After(deadline) {
			t.Fatalf("TryAcquire(%q): %v", key, err)
		}
		t.Logf("TryAcquire(%q) failed by the clock alone, trying again: %v", key, err)
		time.Sleep(10 * time.Millisecond)
	}
}

// acquireHeldOn acquires key with acquire until the lock's token is on n masters. Acquire
// returns at a majority, and a SET whose node timeout passed before it was sent is dropped
// by design: when the token is not on n masters within a while (a hang guard for late
// SETs, not a timing assertion), the lock is released and acquired again.
func acquireHeldOn(t *testing.T, cl *redistest.Cluster, key string, n int, acquire func() *redlock.Lock) *redlock.Lock {
	t.Helper()
	for try := 0; ; try++ {
		l := acquire()
		for seen := time.Now(); time.Since(seen) < 2*time.Second; time.Sleep(5 * time.Millisecond) {
			if holders(t, cl, key, l.Token()) == n {
				return l
			}
		}
		if try == 9 {
			t.Fatalf("%q: the token never reached %d masters in 10 acquisitions", key, n)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// busyOnly tells an attempt that failed only by the clock from one the masters refused:
// every failed master answered nothing within the node timeout and none refused, or the
// majority answered after a short TTL's validity ran out. On a loaded machine both happen
// to healthy masters, and Redlock allows them (the attempt is given up and cleaned up).
func busyOnly(err error) bool {
	if errors.Is(err, redlock.ErrExpired) {
		return true
	}
	var ue *redlock.UnavailableError
	if !errors.As(err, &ue) || ue.Refused > 0 || len(ue.Errors) == 0 {
		return false
	}
	for _, me := range ue.Errors {
		// A full request queue is a stuck pipeline, not a slow reply (it matches
		// ErrNodeTimeout too).
		if !errors.Is(me.Err, redlock.ErrNodeTimeout) || strings.Contains(me.Err.Error(), "queue is full") {
			return false
		}
	}
	return true
}
