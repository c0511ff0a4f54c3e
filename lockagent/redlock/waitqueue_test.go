package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/overlap"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// queueLines returns the waiter lines of key's wait queue on m (the first line of the
// value is the queue's header).
func queueLines(t *testing.T, m *redistest.Master, key string) []string {
	t.Helper()
	v := valueOn(t, m, key+redlock.QueueSuffix)
	if v == "" {
		return nil
	}
	lines := strings.Split(strings.TrimSuffix(v, "\n"), "\n")
	lo, hi := queuePages(lines[0])
	for p := lo; p <= hi; p++ {
		if pv := valueOn(t, m, fmt.Sprintf("%s%s:%d", key, redlock.QueueSuffix, p)); len(pv) > 2 {
			lines = append(lines, strings.Split(strings.TrimSuffix(pv[2:], "\n"), "\n")...)
		}
	}
	return lines[1:]
}

// queuePages returns the range of pages a queue's header names (none: lo > hi).
func queuePages(header string) (lo, hi int) {
	if _, r, ok := strings.Cut(header, " +"); ok {
		a, b, _ := strings.Cut(r, "-")
		lo, _ = strconv.Atoi(a)
		hi, _ = strconv.Atoi(b)
		return lo, hi
	}
	return 1, 0
}

// queuedEverywhere waits until key's queue has n waiters (n > 0) on a majority of the
// masters, or no waiter (n == 0) on every running master. Not every master: the holder's
// Acquire returned at its majority, and where its SET came too late (dropped, by design)
// a waiter takes the free key instead of queueing.
func queuedEverywhere(t *testing.T, cl *redistest.Cluster, key string, n int) {
	t.Helper()
	queuedWhileWaiting(t, cl, key, n, nil)
}

// queuedWhileWaiting is queuedEverywhere that fails at once when one of the waiters
// reports on got (its Acquire returned instead of queueing).
func queuedWhileWaiting(t *testing.T, cl *redistest.Cluster, key string, n int, got <-chan waited) {
	t.Helper()
	var seen []string
	defer func() {
		if t.Failed() {
			t.Logf("last seen queues of %s: %q", key, seen)
		}
	}()
	want := len(cl.Masters)/2 + 1
	if n == 0 {
		want = len(cl.Masters)
	}
	waitUntil(t, fmt.Sprintf("%d waiters queued for %s on %d masters", n, key, want), func() bool {
		select {
		case r := <-got:
			t.Fatalf("waiter %d returned instead of queueing for %s: lock %v, err %v", r.who, key, r.lock != nil, r.err)
		default:
		}
		seen = seen[:0]
		k := 0
		for _, m := range cl.Masters {
			if !m.Running() {
				if n == 0 {
					k++
				}
				continue
			}
			lines := queueLines(t, m, key)
			seen = append(seen, strings.Join(lines, "|"))
			if len(lines) == n {
				k++
			}
		}
		return k >= want
	})
}

// masterMillis is a master's clock in milliseconds (TIME), the clock of queue leases.
func masterMillis(t *testing.T, m *redistest.Master) int64 {
	t.Helper()
	now, err := m.Admin().Time(adminCtx(t)).Result()
	if err != nil {
		t.Fatalf("TIME on %s: %v", m.Addr, err)
	}
	return now.UnixMilli()
}

// waited is the outcome of one queued Acquire (startWaiters).
type waited struct {
	who  int
	lock *redlock.Lock
	err  error
}

// startWaiters starts n Acquires of key, each from its own Client (as from its own
// process), each starting once the previous one is in line on every master.
func startWaiters(t *testing.T, cl *redistest.Cluster, key string, n int) <-chan waited {
	t.Helper()
	got := make(chan waited, n)
	for i := range n {
		c := newClient(t, cl, redlock.Options{})
		go func() {
			l, err := c.Acquire(context.Background(), key, 10*time.Second)
			got <- waited{i, l, err}
		}()
		queuedWhileWaiting(t, cl, key, i+1, got)
	}
	return got
}

// servedInTurn takes the n waiters of startWaiters as they get the lock and releases each:
// they must get it in the order they started, each holding the key on a majority, with
// fences above prev that keep increasing.
func servedInTurn(t *testing.T, cl *redistest.Cluster, key string, got <-chan waited, n int, prev uint64) {
	t.Helper()
	for want := range n {
		r := <-got
		if r.err != nil {
			t.Fatalf("waiter %d: Acquire: %v", r.who, r.err)
		}
		if r.who != want {
			t.Errorf("waiter %d got the lock in turn %d, want waiter %d first", r.who, want, want)
		}
		if r.lock.Fence() <= prev {
			t.Errorf("waiter %d got fence %d after fence %d: fences must increase", r.who, r.lock.Fence(), prev)
		}
		prev = r.lock.Fence()
		if n := holders(t, cl, key, r.lock.Token()); n < len(cl.Masters)/2+1 {
			t.Errorf("waiter %d holds the key on %d masters, want a majority", r.who, n)
		}
		if err := r.lock.Release(context.Background()); err != nil {
			t.Fatalf("waiter %d: Release: %v", r.who, err)
		}
	}
}

// TestWaitQueueHandsOffInOrder: waiters in different Clients (as in different processes)
// get a released lock first come, first served, each by a hand-off (the release sets the
// key to the first waiter's token on every master), with fences that keep increasing.
func TestWaitQueueHandsOffInOrder(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	const key = "queue-order"
	holder := newClient(t, cl, redlock.Options{})
	first := mustAcquire(t, holder, key, 10*time.Second)
	got := startWaiters(t, cl, key, 3)
	if err := first.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	servedInTurn(t, cl, key, got, 3, first.Fence())
	waitUntil(t, "the queue and the key gone from every master", func() bool {
		return keysOn(t, cl, key) == 0 && keysOn(t, cl, key+redlock.QueueSuffix) == 0
	})
}

// TestWaitQueueInPages: a queue longer than its key holds goes on in pages (the queue key
// + ":<n>"), and its waiters still get the lock first come, first served, each by a
// hand-off, with fences that keep increasing; once the last one has released, neither the
// queue nor a page is left.
func TestWaitQueueInPages(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	const key, n = "queue-pages", 40
	holder := newClient(t, cl, redlock.Options{})
	first := mustAcquire(t, holder, key, 30*time.Second)
	got := startWaiters(t, cl, key, n)
	paged := 0
	for _, m := range cl.Masters {
		front := valueOn(t, m, key+redlock.QueueSuffix)
		header, _, _ := strings.Cut(front, "\n")
		if lo, hi := queuePages(header); hi >= lo {
			paged++
			t.Logf("%s: the queue key holds %d bytes, pages %d to %d, %d waiters in all", m.Addr, len(front), lo, hi, len(queueLines(t, m, key)))
		}
	}
	if paged < len(cl.Masters)/2+1 {
		t.Fatalf("%d waiters are in pages on %d masters, want a majority", n, paged)
	}
	if err := first.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	servedInTurn(t, cl, key, got, n, first.Fence())
	waitUntil(t, "the queue, its pages and the key gone from every master", func() bool {
		left := keysOn(t, cl, key) + keysOn(t, cl, key+redlock.QueueSuffix)
		for p := 1; p <= 8; p++ {
			left += keysOn(t, cl, fmt.Sprintf("%s%s:%d", key, redlock.QueueSuffix, p))
		}
		return left == 0
	})
}

// TestWaitQueueJoinAfterTheLastPageIsPulled: a waiter that finds the key free while the
// front has only expired lines hands it to the first waiter of the last page, which the
// script pulls into the front; its own line, which then goes to a new first page, stays
// (the pulled page's key, deleted when the front is written, must not take the new page
// with it). Found by review: the new line was lost.
func TestWaitQueueJoinAfterTheLastPageIsPulled(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1})
	m := cl.Masters[0]
	const key = "queue-pulled"
	ctx := adminCtx(t)
	tok := strings.Repeat("t", lua.QueueBytes*4/10) // two lines fill the front, a third starts a page
	q := key + redlock.QueueSuffix
	if err := m.Admin().Set(ctx, q, "0 +1-1\nold/1 100 "+tok+" 5 1000 1\n", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := m.Admin().Set(ctx, q+":1", "0\nA/1 200 "+tok+" 99999999999999 1000 1\nB/1 300 "+tok+" 99999999999999 1000 1\n", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	script := redis.NewScript(redlock.AcquireQueuedScript())
	keys := []string{key, key + redlock.FenceSuffix, q}
	if err := script.Run(ctx, m.Admin(), keys, "x-"+tok, 10000, "0", "X/1", 400, 30000, 1).Err(); err != nil {
		t.Fatal(err)
	}
	if v := valueOn(t, m, key); v != tok {
		t.Errorf("the free key went to %.10q..., want waiter A, the first in line", v)
	}
	var ids []string
	for _, l := range queueLines(t, m, key) {
		ids = append(ids, strings.Fields(l)[0])
	}
	if got := strings.Join(ids, " "); got != "B/1 X/1" {
		t.Errorf("in line after the hand-off: %q, want \"B/1 X/1\"", got)
	}
}

// TestWaitQueueFreeKeyGoesToTheFirstInLine: a key that frees up without a hand-off (it
// expired, or its holder's client hands nothing over) goes to the first waiter in line,
// whichever waiter's attempt finds it free first.
func TestWaitQueueFreeKeyGoesToTheFirstInLine(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	const key = "queue-free"
	holder := newClient(t, cl, redlock.Options{})
	mustAcquire(t, holder, key, 10*time.Second)
	got := startWaiters(t, cl, key, 2)
	// The holder vanishes without a release (as if its key expired): nobody is told.
	for _, m := range cl.Masters {
		if err := m.Admin().Del(adminCtx(t), key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	first := <-got
	if first.err != nil {
		t.Fatalf("waiter %d: Acquire: %v", first.who, first.err)
	}
	if first.who != 0 {
		t.Errorf("waiter %d got the free key first, want waiter 0 (first in line)", first.who)
	}
	if err := first.lock.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	second := <-got
	if second.err != nil {
		t.Fatalf("waiter %d: Acquire: %v", second.who, second.err)
	}
	if second.lock.Fence() <= first.lock.Fence() {
		t.Errorf("fences %d then %d: must increase", first.lock.Fence(), second.lock.Fence())
	}
	_ = second.lock.Release(context.Background())
}

// TestWaitQueueDeadWaiters: a waiter that died stays in line until its lease runs out.
// One whose lease has run out is skipped; one still leased is handed the lock, which then
// frees up at that acquisition's TTL, like a lock whose holder died. Neither makes the
// live waiter behind it wait forever.
func TestWaitQueueDeadWaiters(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	for _, tc := range []struct {
		name  string
		lease time.Duration // of the dead waiter's entry, from now (negative: run out)
	}{
		{"lease run out: skipped", -time.Second},
		{"lease still running: handed the lock, which expires", 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "queue-dead-" + strings.Fields(tc.name)[1]
			holder := newClient(t, cl, redlock.Options{})
			first := mustAcquire(t, holder, key, 10*time.Second)
			// A dead waiter from another Client, first in line everywhere, asking for a
			// 300ms TTL.
			const deadToken = "dead-waiter-token"
			for _, m := range cl.Masters {
				lease := masterMillis(t, m) + tc.lease.Milliseconds()
				entry := fmt.Sprintf("0\ndeadclient/1 1 %s %d 300 1\n", deadToken, lease)
				if err := m.Admin().Set(adminCtx(t), key+redlock.QueueSuffix, entry, 30*time.Second).Err(); err != nil {
					t.Fatal(err)
				}
			}
			live := newClient(t, cl, redlock.Options{})
			done := make(chan error, 1)
			var got *redlock.Lock
			go func() {
				var err error
				got, err = live.Acquire(context.Background(), key, 10*time.Second)
				done <- err
			}()
			queuedEverywhere(t, cl, key, 2)
			if err := first.Release(context.Background()); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if tc.lease > 0 {
				// The dead waiter is handed the lock: its token holds the key. At once, or,
				// when the release fell in a window for other clients (5ms of every 100ms),
				// at the live waiter's next attempt after it: the dead waiter is first in
				// line.
				waitUntil(t, "the dead waiter's token on a majority (it was first in line)", func() bool {
					return holders(t, cl, key, deadToken) >= len(cl.Masters)/2+1
				})
			}
			if err := <-done; err != nil {
				t.Fatalf("the live waiter: Acquire: %v", err)
			}
			if n := holders(t, cl, key, got.Token()); n < len(cl.Masters)/2+1 {
				t.Errorf("the live waiter holds the key on %d masters, want a majority", n)
			}
			_ = got.Release(context.Background())
		})
	}
}

// TestWaitQueueLeaveOnCancel: a waiter that gives up leaves the queue on every master,
// so the next release does not hand the lock to it.
func TestWaitQueueLeaveOnCancel(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	const key = "queue-cancel"
	holder := newClient(t, cl, redlock.Options{})
	first := mustAcquire(t, holder, key, 10*time.Second)
	w := newClient(t, cl, redlock.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		// A TTL beyond waitUntil's bound: had the release handed it the key, the key
		// would outlast the wait below.
		_, err := w.Acquire(ctx, key, 20*time.Second)
		done <- err
	}()
	queuedEverywhere(t, cl, key, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire after cancel: %v, want context.Canceled", err)
	}
	queuedEverywhere(t, cl, key, 0)
	if err := first.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	// The release returns at its majority; the others follow. Nothing may hand it over.
	waitUntil(t, "the key gone from every master (nobody is waiting)", func() bool { return keysOn(t, cl, key) == 0 })
}

// contend runs a worker per client that takes key in a loop, recording every hold in checker,
// until every worker has held it holdsEach times and also (nil: nothing more) returns true:
// the workers contend until the last one is served, so a starved waiter keeps the others
// contending rather than a wall-clock window deciding. It returns each worker's count; a
// worker not served within contentionHangGuard is a test failure (checkContended).
func contend(t *testing.T, clients []*redlock.Client, key string, holdsEach int64, checker *overlap.Checker, also func() bool) []int64 {
	t.Helper()
	counts := make([]atomic.Int64, len(clients))
	ctx, served := runUntil(func() bool {
		for i := range counts {
			if counts[i].Load() < holdsEach {
				return false
			}
		}
		return also == nil || also()
	})
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				l, err := c.Acquire(ctx, key, 5*time.Second)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("worker %d: Acquire: %v", i, err)
					}
					return
				}
				start := time.Now()
				time.Sleep(time.Millisecond)
				end := time.Now()
				if d := l.Deadline(); d.Before(end) {
					end = d
				}
				checker.Record(key, l.Token(), start, end, l.Fence())
				counts[i].Add(1)
				if err := l.Release(context.Background()); err != nil {
					t.Errorf("worker %d: Release: %v", i, err)
				}
			}
		}()
	}
	if !served() {
		t.Errorf("contention on %s: not every worker was served %d times within the hang guard (%v)", key, holdsEach, contentionHangGuard)
	}
	wg.Wait()
	out := make([]int64, len(counts))
	for i := range counts {
		out[i] = counts[i].Load()
	}
	return out
}

// checkContended fails the test when two holds overlapped or a worker never got the lock.
func checkContended(t *testing.T, checker *overlap.Checker, counts []int64) {
	t.Helper()
	for _, v := range checker.Violations() {
		t.Errorf("violation: %v", v)
	}
	for i, n := range counts {
		if n == 0 {
			t.Errorf("worker %d never got the lock", i)
		}
	}
}

// TestWaitQueueDegrades: with a master stopped, and with queues lost or garbled on some
// masters, waiters still get the lock, in turn, and no two hold it at once: the queue
// only orders waiters, the SET of the key decides.
func TestWaitQueueDegrades(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	clients := func() []*redlock.Client {
		var cs []*redlock.Client
		for range 4 {
			cs = append(cs, newClient(t, cl, redlock.Options{NodeTimeout: 50 * time.Millisecond}))
		}
		return cs
	}
	t.Run("one master stopped", func(t *testing.T) {
		if err := cl.Masters[4].Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Masters[4].Resume() })
		checker := overlap.New()
		counts := contend(t, clients(), "queue-paused", 3, checker, nil)
		checkContended(t, checker, counts)
	})
	t.Run("queues lost", func(t *testing.T) {
		// (A value that is not a queue is another application's: it is refused, see
		// TestForeignQueueKeyRefused.)
		const key = "queue-lost"
		checker := overlap.New()
		stop := make(chan struct{})
		var vandal sync.WaitGroup
		var losses atomic.Int64
		vandal.Add(1)
		go func() {
			defer vandal.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				ctx := context.Background()
				_ = cl.Masters[0].Admin().Del(ctx, key+redlock.QueueSuffix).Err() // lost (a restart)
				_ = cl.Masters[2].Admin().Del(ctx, key+redlock.QueueSuffix).Err()
				losses.Add(1)
			}
		}()
		// Contention lasts until the queues were lost a few times, too.
		counts := contend(t, clients(), key, 3, checker, func() bool { return losses.Load() >= 5 })
		close(stop)
		vandal.Wait()
		checkContended(t, checker, counts)
	})
}

// TestWaitQueueWithRedsync: redsync on the same key, polling with its own retry loop,
// excludes and is excluded by queued lockagent waiters, and is not starved by them:
// the masters leave the key free in windows of their clocks, which redsync's polling
// finds.
func TestWaitQueueWithRedsync(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	const key = "queue-redsync"
	var pools []redsyncredis.Pool
	for _, r := range evalClients(t, cl) {
		pools = append(pools, goredis.NewPool(r))
	}
	rs := redsync.New(pools...)
	checker := overlap.New()
	stop, stopRedsync := context.WithCancel(context.Background())
	defer stopRedsync()
	var redsyncCount atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for stop.Err() == nil {
			m := rs.NewMutex(key, redsync.WithExpiry(5*time.Second), redsync.WithTries(1000),
				redsync.WithRetryDelay(10*time.Millisecond))
			if err := m.LockContext(stop); err != nil {
				continue
			}
			start := time.Now()
			time.Sleep(time.Millisecond)
			checker.Record(key, m.Value(), start, time.Now(), 0)
			redsyncCount.Add(1)
			_, _ = m.UnlockContext(context.Background())
		}
	}()
	var cs []*redlock.Client
	for range 3 {
		cs = append(cs, newClient(t, cl, redlock.Options{}))
	}
	// Contention lasts until every lockagent worker got the lock 3 times and redsync once.
	counts := contend(t, cs, key, 3, checker, func() bool { return redsyncCount.Load() >= 1 })
	stopRedsync()
	wg.Wait()
	t.Logf("lockagent workers: %v; redsync: %d", counts, redsyncCount.Load())
	checkContended(t, checker, counts)
	if redsyncCount.Load() == 0 {
		t.Errorf("redsync never got the lock while lockagent waiters queued (until the hang guard): starved")
	}
}

// TestWaitQueueSplitVotes: releases that hand the key to different waiters on different
// masters (their queues disagree) leave no waiter with a majority; all but one step back,
// and every waiter still gets the lock, one at a time.
func TestWaitQueueSplitVotes(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	const key = "queue-split"
	holder := newClient(t, cl, redlock.Options{})
	first := mustAcquire(t, holder, key, 10*time.Second)
	got := startWaiters(t, cl, key, 3)
	// Rewrite each master's queue so that its first waiter differs: masters 0-1 put
	// waiter 0 first, 2-3 waiter 1, 4 waiter 2. The release then hands out 2, 2 and 1.
	// (A master where the holder's SET came too late has a waiter's key instead of all
	// three in line: it splits the votes its own way.)
	for mi, m := range cl.Masters {
		lines := queueLines(t, m, key)
		if len(lines) == 0 {
			continue
		}
		lead := min([]int{0, 0, 1, 1, 2}[mi], len(lines)-1)
		var b strings.Builder
		b.WriteString("0\n")
		write := func(i int, ticket int) {
			f := strings.Fields(lines[i])
			f[1] = fmt.Sprint(ticket)
			b.WriteString(strings.Join(f, " ") + "\n")
		}
		write(lead, 1) // the queue is in ticket order
		for i := range lines {
			if i != lead {
				write(i, 100+i)
			}
		}
		if err := m.Admin().Set(adminCtx(t), key+redlock.QueueSuffix, b.String(), 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	checker := overlap.New()
	for i := range 3 {
		r := <-got
		if r.err != nil {
			t.Fatalf("Acquire %d: %v", i, r.err)
		}
		start := time.Now()
		if n := holders(t, cl, key, r.lock.Token()); n < len(cl.Masters)/2+1 {
			t.Errorf("a waiter holds the key on %d masters, want a majority", n)
		}
		checker.Record(key, r.lock.Token(), start, time.Now(), r.lock.Fence())
		if err := r.lock.Release(context.Background()); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	for _, v := range checker.Violations() {
		t.Errorf("violation: %v", v)
	}
}

// TestWaitQueueReservedName: a lock name ending in QueueSuffix would be another lock's
// wait queue: refused.
func TestWaitQueueReservedName(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	c := newClient(t, cl, redlock.Options{})
	_, err := c.TryAcquire(context.Background(), "jobs"+redlock.QueueSuffix, time.Second)
	if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "wait queue") {
		t.Fatalf("TryAcquire of a name ending in %q: %v, want ErrInvalid naming wait queues", redlock.QueueSuffix, err)
	}
	// A page of lock jobs's queue.
	_, err = c.TryAcquire(context.Background(), "jobs"+redlock.QueueSuffix+":1", time.Second)
	if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "pages of wait queues") {
		t.Fatalf("TryAcquire of a name with %q in it: %v, want ErrInvalid naming the pages of wait queues", redlock.QueueSuffix+":", err)
	}
}

// TestWaitQueueStaleReleaseFence: a holder whose lock expired, whose keys came back (its
// late extension set them again after another client held and released the lock), and
// which then releases, hands the lock to the waiter with a fence above the other
// client's, not its own fence + 1: only a key this master handed over itself, untouched
// since, lets a hand-off use the releaser's fence.
func TestWaitQueueStaleReleaseFence(t *testing.T) {
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			cl := redistest.Start(t, redistest.Options{Masters: 5})
			ctx := context.Background()
			const key = "stale-release"
			r := newClient(t, cl, redlock.Options{DurableRelease: durable})
			lr := mustAcquire(t, r, key, 300*time.Millisecond)
			waitUntil(t, "the first holder's keys expired", func() bool { return holders(t, cl, key, lr.Token()) == 0 })
			z := newClient(t, cl, redlock.Options{})
			lz := mustAcquire(t, z, key, 300*time.Millisecond)
			if err := lz.Release(ctx); err != nil {
				t.Fatal(err)
			}
			// The first holder's extension, sent before its deadline, arrives now: the
			// extend script sets its token again where the key is free.
			for _, m := range cl.Masters {
				if err := m.Admin().Eval(ctx, `if not redis.call("get", KEYS[1]) then redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2]) end return 1`,
					[]string{key}, lr.Token(), 3000).Err(); err != nil {
					t.Fatal(err)
				}
			}
			w := newClient(t, cl, redlock.Options{})
			got := make(chan waited, 1)
			go func() {
				l, err := w.Acquire(ctx, key, time.Second)
				got <- waited{0, l, err}
			}()
			queuedWhileWaiting(t, cl, key, 1, got)
			if ms := masterMillis(t, cl.Masters[0]) % 100; ms < 20 || ms > 70 {
				time.Sleep(time.Duration((145-ms)%100) * time.Millisecond) // not in a window
			}
			_ = lr.Release(ctx) // expired: an error, but the keys are deleted and handed on
			lw := <-got
			if lw.err != nil {
				t.Fatalf("waiter: %v", lw.err)
			}
			if lw.lock.Fence() <= lz.Fence() {
				t.Errorf("the waiter acquired after %d was released and got fence %d", lz.Fence(), lw.lock.Fence())
			}
			_ = lw.lock.Release(ctx)
		})
	}
}

// TestWaitQueueTicketOrder: the queue stays in ticket order whichever way a waiter's line
// goes in: a newcomer with the latest ticket at the end (without walking the queue), one
// with an earlier ticket in its place, a renewal where it was, and after a last line that
// is not a waiter's, in its place by the walk.
func TestWaitQueueTicketOrder(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1})
	m := cl.Masters[0]
	const key = "queue-order"
	ctx := adminCtx(t)
	if err := m.Admin().Set(ctx, key, "holder", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	script := redis.NewScript(redlock.AcquireQueuedScript())
	keys := []string{key, key + redlock.FenceSuffix, key + redlock.QueueSuffix}
	attempt := func(ticket int, attempt int) {
		t.Helper()
		id := fmt.Sprintf("client/%d", ticket)
		if err := script.Run(ctx, m.Admin(), keys, fmt.Sprintf("token-%d", ticket), 10000, "0", id, ticket, 30000, attempt).Err(); err != nil {
			t.Fatalf("attempt of ticket %d: %v", ticket, err)
		}
	}
	tickets := func() string {
		t.Helper()
		var out []string
		for _, l := range queueLines(t, m, key) {
			out = append(out, strings.Fields(l)[1])
		}
		return strings.Join(out, " ")
	}
	for _, tk := range []int{10, 30, 40, 20, 50, 5} {
		attempt(tk, 1)
	}
	if got, want := tickets(), "5 10 20 30 40 50"; got != want {
		t.Errorf("tickets in line %q, want %q", got, want)
	}
	attempt(30, 2) // a renewal keeps its place
	if got, want := tickets(), "5 10 20 30 40 50"; got != want {
		t.Errorf("after a renewal: tickets in line %q, want %q", got, want)
	}
	// A last line that is not a waiter's: the walk places the line, before it.
	q := valueOn(t, m, key+redlock.QueueSuffix)
	if err := m.Admin().Set(ctx, key+redlock.QueueSuffix, q+"not a waiter\n", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	attempt(60, 1)
	if got, want := tickets(), "5 10 20 30 40 50 60 a"; got != want {
		t.Errorf("after an unreadable last line: %q, want %q", got, want)
	}
}
