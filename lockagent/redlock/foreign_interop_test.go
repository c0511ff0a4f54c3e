package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/overlap"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestForeignClientInterop: every Redlock client the docs name, unmodified, through one
// allow_eval lock user with exactly the kit's rights (redisconf.EvalCommands on top of
// the lock commands, confined to the user's prefix), against the kit's library on the
// same user and the same key, both ways: a holder of either kind excludes the other, a
// release frees the key for the other, and the foreign client is not starved while kit
// clients queue for the key. The node clients' negative control takes EXISTS away from
// the user: their lock script then fails on every master. With -v it prints the table
// the docs quote.
func TestForeignClientInterop(t *testing.T) {
	nodeDir := requireNode(t)
	const user, password, prefix = "orders", "orders-secret-for-tests", "orders:"
	cl := redistest.Start(t, redistest.Options{Masters: 5, LockUsers: []redisconf.LockUser{
		{Name: user, Password: password, KeyPrefix: prefix, AllowEval: true}}})
	kit := func(t *testing.T) *redlock.Client {
		t.Helper()
		return newTenantClient(t, cl, user, password, redlock.Options{KeyPrefix: prefix})
	}

	var table interopTable
	t.Cleanup(func() { t.Logf("other Redlock clients on one allow_eval user, beside lockagent:\n%s", &table) })

	clients := []struct {
		name, version string
		start         func(t *testing.T) foreignClient
		needsExists   bool // its lock script calls EXISTS (the negative control)
	}{
		{"node-redlock", "4.2.0 (ioredis 5.9.3)", func(t *testing.T) foreignClient {
			return startNodeRedlock(t, nodeDir, "redlock4", cl, user, password, false)
		}, true},
		{"node-redlock", "5.0.0-beta.2 (ioredis 5.9.3)", func(t *testing.T) foreignClient {
			return startNodeRedlock(t, nodeDir, "redlock5", cl, user, password, false)
		}, true},
		{"go-redsync", "v4.18.1 (go-redis v9)", func(t *testing.T) foreignClient {
			return newRedsyncClient(t, cl, user, password)
		}, false},
	}
	for i, fc := range clients {
		name := fmt.Sprintf("%s %s", fc.name, fc.version)
		row := func(direction, result string) { table.add(fc.name, fc.version, direction, result) }
		key := fmt.Sprintf("interop-%d", i) // lockagent's name; the foreign client names prefix+key
		t.Run(name, func(t *testing.T) {
			foreign := fc.start(t)
			c := kit(t)

			t.Run("a foreign holder excludes lockagent, and its release frees the key", func(t *testing.T) {
				a := foreign.acquire(t, prefix+key, 10*time.Second, once)
				if !a.OK {
					row("foreign holds -> lockagent", "FAIL: foreign acquire: "+a.Error)
					t.Fatalf("%s acquire: %s %v", name, a.Error, a.ClientErrors)
				}
				waitUntil(t, "the foreign key on every master", func() bool { return holders(t, cl, prefix+key, a.Value) == 5 })
				_, err := c.TryAcquire(context.Background(), key, 5*time.Second)
				var taken *redlock.TakenError
				if !errors.As(err, &taken) {
					row("foreign holds -> lockagent", fmt.Sprintf("FAIL: lockagent got %v", err))
					t.Fatalf("lockagent TryAcquire while %s holds it: %v, want *TakenError", name, err)
				}
				if n := holders(t, cl, prefix+key, a.Value); n != 5 {
					t.Errorf("the foreign key is on %d masters after lockagent's attempt, want 5", n)
				}
				if err := foreign.release(t); err != nil {
					t.Fatalf("%s release: %v", name, err)
				}
				// A foreign client's release returns at a majority (node-redlock) or at every
				// reply: the rest may still be on its way, and lands within the key's TTL.
				if n := keysOn(t, cl, prefix+key); n > 5-3 {
					t.Errorf("the key is on %d masters after the foreign release, want at most 2 (a majority freed)", n)
				}
				waitUntil(t, "the foreign release on every master", func() bool { return keysOn(t, cl, prefix+key) == 0 })
				l := mustAcquire(t, c, key, 5*time.Second)
				if err := l.Release(context.Background()); err != nil {
					t.Fatalf("lockagent Release: %v", err)
				}
				row("foreign holds -> lockagent", "excluded (TakenError); after release: acquired")
			})

			t.Run("a lockagent holder excludes the foreign client, and its release frees the key", func(t *testing.T) {
				l := mustAcquire(t, c, key, 10*time.Second)
				waitUntil(t, "lockagent's key on every master", func() bool { return holders(t, cl, prefix+key, l.Token()) == 5 })
				a := foreign.acquire(t, prefix+key, 5*time.Second, once)
				if a.OK {
					row("lockagent holds -> foreign", "FAIL: foreign acquired")
					t.Fatalf("%s acquired a key lockagent holds", name)
				}
				if denied := deniedErrors(a.ClientErrors); len(denied) > 0 {
					t.Fatalf("%s was refused by the ACL, not by the held key: %v", name, denied)
				}
				if n := holders(t, cl, prefix+key, l.Token()); n != 5 {
					t.Errorf("lockagent's key is on %d masters after the foreign attempt, want 5", n)
				}
				if err := l.Release(context.Background()); err != nil {
					t.Fatalf("lockagent Release: %v", err)
				}
				a = foreign.acquire(t, prefix+key, 5*time.Second, once)
				if !a.OK {
					row("lockagent holds -> foreign", "FAIL: after release: "+a.Error)
					t.Fatalf("%s acquire after lockagent released: %s %v", name, a.Error, a.ClientErrors)
				}
				if err := foreign.release(t); err != nil {
					t.Fatalf("%s release: %v", name, err)
				}
				row("lockagent holds -> foreign", "excluded (no quorum, no ACL error); after release: acquired")
			})

			t.Run("the foreign client is not starved by queued kit clients", func(t *testing.T) {
				longest, mostHolds, kitHolds := notStarved(t, cl, foreign, c, prefix, key+"-queue", name)
				row(fmt.Sprintf("beside %d queued lockagent clients", queuedKitClients),
					fmt.Sprintf("acquired %d/%d, longest wait %v over %d lockagent holds (starved at %d); lockagent holds in all: %d",
						foreignRounds, foreignRounds, longest.Round(time.Millisecond), mostHolds, foreignStarvedAfter, kitHolds))
			})

			if fc.needsExists {
				t.Run("negative control: without EXISTS its lock script is refused", func(t *testing.T) {
					setUserRight(t, cl, user, "-exists")
					defer setUserRight(t, cl, user, "+exists")
					a := foreign.acquire(t, prefix+key+"-noexists", 5*time.Second, once)
					if a.OK {
						_ = foreign.release(t)
						t.Fatalf("%s acquired through a user without EXISTS: the control cannot fail", name)
					}
					if len(deniedErrors(a.ClientErrors)) == 0 {
						t.Fatalf("%s failed without an ACL error: %s %v", name, a.Error, a.ClientErrors)
					}
					row("negative control: user without EXISTS", "refused: "+shorten(deniedErrors(a.ClientErrors)[0]))
				})
			}
		})
	}

	t.Run("ioredis options: the guide's leave no NOPERM on the masters, the defaults still lock", func(t *testing.T) {
		for _, defaults := range []bool{false, true} {
			before := commandErrors(t, cl)["NOPERM"]
			n := startNodeRedlock(t, nodeDir, "redlock5", cl, user, password, defaults)
			a := n.acquire(t, prefix+"options", 5*time.Second, once)
			if !a.OK {
				t.Fatalf("node-redlock 5 (ioredis defaults %v) acquire: %s %v", defaults, a.Error, a.ClientErrors)
			}
			if err := n.release(t); err != nil {
				t.Fatalf("release: %v", err)
			}
			noperm := commandErrors(t, cl)["NOPERM"] - before
			switch {
			case !defaults && noperm != 0:
				t.Errorf("with enableReadyCheck: false and disableClientInfo: true the masters counted %d NOPERM replies, want 0", noperm)
			case defaults && noperm == 0:
				t.Errorf("with ioredis's defaults the masters counted no NOPERM (INFO, CLIENT SETINFO): the control cannot fail")
			}
			opts := "enableReadyCheck: false, disableClientInfo: true"
			if defaults {
				opts = "ioredis defaults"
			}
			table.add("node-redlock", "5.0.0-beta.2 (ioredis 5.9.3)", "connect with "+opts,
				fmt.Sprintf("acquired and released; NOPERM replies on the 5 masters: %d", noperm))
		}
	})
}

// The starvation check's configuration. The kit clients queue for the key with
// queuedKitTTL and hold it for a millisecond; the foreign client retries every
// foreignRetryDelay (± a fifth), as node-redlock and redsync do, in attempts of
// foreignAttemptRetries retries each, again and again, until it holds the key. Queued kit
// clients hand the key to each other and leave it free to polling clients only in the
// library's windows: a release in the first 5 ms of every 100 ms of a master's clock. So
// the foreign client's chances come with the kit clients' releases, and its wait is
// counted in them: it is starved when the kit clients held the key foreignStarvedAfter
// times while it tried (about one release in twenty opens a window, and a window is won
// in a few tries; a machine's load slows the releases and the tries alike, never the
// count). A wall clock bound would measure the machine instead.
const (
	queuedKitClients      = 3
	queuedKitTTL          = 2 * time.Second
	foreignRounds         = 5
	foreignRetryDelay     = 10 * time.Millisecond
	foreignAttemptRetries = 100
	foreignStarvedAfter   = 5000 // kit holds during one round's wait
	foreignHangGuard      = 10 * time.Minute
)

// notStarved runs queuedKitClients lockagent clients contending for key (queued
// Acquires) while the foreign client acquires and releases prefix+key foreignRounds
// times, each before the kit clients held it foreignStarvedAfter times. It checks that no
// two holds overlapped and returns the foreign client's longest wait, the most kit holds
// during one wait, and the kit holds in all.
func notStarved(t *testing.T, cl *redistest.Cluster, foreign foreignClient, c *redlock.Client, prefix, key, name string) (time.Duration, int64, int64) {
	t.Helper()
	checker := overlap.New()
	kitClients := []*redlock.Client{c}
	for len(kitClients) < queuedKitClients {
		kitClients = append(kitClients, newTenantClient(t, cl, "orders", "orders-secret-for-tests", redlock.Options{KeyPrefix: prefix}))
	}
	ctx, stop := context.WithCancel(context.Background())
	var kitHolds atomic.Int64
	var wg sync.WaitGroup
	for i, kc := range kitClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				l, err := kc.Acquire(ctx, key, queuedKitTTL)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("kit client %d: Acquire: %v", i, err)
					}
					return
				}
				start := time.Now()
				time.Sleep(time.Millisecond)
				checker.Record(prefix+key, l.Token(), start, minTime(time.Now(), l.Deadline()), 0)
				kitHolds.Add(1)
				if err := l.Release(context.Background()); err != nil {
					t.Errorf("kit client %d: Release: %v", i, err)
				}
			}
		}()
	}
	// A failed wait below ends the test: the kit clients stop first.
	defer func() { stop(); wg.Wait() }()
	var longest time.Duration
	var mostHolds int64
	retry := foreignRetry{count: foreignAttemptRetries, delay: foreignRetryDelay, jitter: foreignRetryDelay / 5}
	for round := 0; round < foreignRounds && !t.Failed(); round++ {
		// Each round begins while the kit clients hold and queue.
		from := kitHolds.Load()
		waitUntil(t, "the kit clients to take turns", func() bool { return kitHolds.Load() >= from+queuedKitClients })
		from = kitHolds.Load()
		began := time.Now()
		var a foreignAttempt
		for attempts := 1; ; attempts++ {
			a = foreign.acquire(t, prefix+key, queuedKitTTL, retry)
			if a.OK || len(deniedErrors(a.ClientErrors)) > 0 {
				break
			}
			if held := kitHolds.Load() - from; held >= foreignStarvedAfter || time.Since(began) > foreignHangGuard {
				break
			}
		}
		wait, held := time.Since(began), kitHolds.Load()-from
		longest, mostHolds = max(longest, wait), max(mostHolds, held)
		if !a.OK {
			t.Errorf("%s round %d: no lock while the %d queued lockagent clients held the key %d times (%v, retrying every %v): starved (%s %v)",
				name, round, queuedKitClients, held, wait.Round(time.Millisecond), retry.delay, a.Error, a.ClientErrors)
			break
		}
		start := time.Now()
		time.Sleep(time.Millisecond)
		checker.Record(prefix+key, a.Value, start, time.Now(), 0)
		if err := foreign.release(t); err != nil {
			t.Errorf("%s release: %v", name, err)
		}
	}
	stop()
	wg.Wait()
	for _, v := range checker.Violations() {
		t.Errorf("violation: %v", v)
	}
	t.Logf("%s: longest wait %v and %d lockagent holds beside %d queued lockagent clients (%d lockagent holds in all)",
		name, longest, mostHolds, queuedKitClients, kitHolds.Load())
	return longest, mostHolds, kitHolds.Load()
}

// newTenantClient is a redlock Client over user's connections to cl's masters.
func newTenantClient(t *testing.T, cl *redistest.Cluster, user, password string, opts redlock.Options) *redlock.Client {
	t.Helper()
	if opts.NodeTimeout == 0 {
		opts.NodeTimeout = testNodeTimeout
	}
	var rdbs []redis.UniversalClient
	for _, m := range cl.Masters {
		r := m.ClientAs(user, password)
		t.Cleanup(func() { _ = r.Close() })
		rdbs = append(rdbs, r)
	}
	c, err := redlock.New(rdbs, opts)
	if err != nil {
		t.Fatalf("redlock.New as %s: %v", user, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// deniedErrors keeps the errors that are the ACL's refusals.
func deniedErrors(errs []string) []string {
	var out []string
	for _, e := range errs {
		if strings.Contains(e, "NOPERM") || strings.Contains(e, "no permissions") || strings.Contains(e, "can't run this command") {
			out = append(out, e)
		}
	}
	return out
}

func shorten(s string) string {
	if len(s) > 90 {
		return s[:87] + "..."
	}
	return s
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// interopTable collects the rows of TestForeignClientInterop's report.
type interopTable struct {
	mu   sync.Mutex
	rows [][4]string
}

func (tb *interopTable) add(client, version, direction, result string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.rows = append(tb.rows, [4]string{client, version, direction, result})
}

func (tb *interopTable) String() string {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "client\tversion\tdirection\tresult")
	for _, r := range tb.rows {
		fmt.Fprintln(w, strings.Join(r[:], "\t"))
	}
	_ = w.Flush()
	return b.String()
}
