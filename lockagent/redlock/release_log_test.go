package redlock_test

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// aofSize returns the master's aof_current_size (INFO persistence): it grows with every
// write the master logs, and the master logs (and, with appendfsync always, fsyncs)
// before it answers.
func aofSize(t *testing.T, m *redistest.Master) int64 {
	t.Helper()
	info, err := m.Admin().InfoMap(adminCtx(t), "persistence").Result()
	if err != nil {
		t.Fatalf("INFO persistence on %s: %v", m.Addr, err)
	}
	v, ok := info["Persistence"]["aof_current_size"]
	if !ok {
		t.Fatalf("no aof_current_size in INFO persistence on %s (is appendonly on?)", m.Addr)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("aof_current_size %q on %s: %v", v, m.Addr, err)
	}
	return n
}

func aofSizes(t *testing.T, cl *redistest.Cluster) []int64 {
	t.Helper()
	var out []int64
	for _, m := range cl.Masters {
		out = append(out, aofSize(t, m))
	}
	return out
}

// The default release deletes the key in memory without logging it (no fsync before the
// master answers); Options.DurableRelease logs it. Acquisitions are logged either way.
func TestReleaseLoggingFollowsDurableRelease(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	for _, durable := range []bool{false, true} {
		t.Run("DurableRelease="+strconv.FormatBool(durable), func(t *testing.T) {
			c := newClient(t, cl, redlock.Options{DurableRelease: durable})
			key := "release-log-" + strconv.FormatBool(durable)
			before := aofSizes(t, cl)
			l := mustAcquire(t, c, key, 10*time.Second)
			// Wait for the stragglers of the acquisition too: a master that answered after
			// the majority has logged by the time its reply is in.
			waitUntil(t, "every master holds the key", func() bool { return holders(t, cl, key, l.Token()) == len(cl.Masters) })
			acquired := aofSizes(t, cl)
			for i := range cl.Masters {
				if acquired[i] <= before[i] {
					t.Errorf("master %d: the acquisition was not logged (aof_current_size %d -> %d)", i, before[i], acquired[i])
				}
			}
			if err := l.Release(context.Background()); err != nil {
				t.Fatalf("Release: %v", err)
			}
			waitUntil(t, "the key is gone from every master", func() bool { return keysOn(t, cl, key) == 0 })
			released := aofSizes(t, cl)
			for i := range cl.Masters {
				switch grew := released[i] > acquired[i]; {
				case durable && !grew:
					t.Errorf("master %d: DurableRelease did not log the release (aof_current_size stayed %d)", i, released[i])
				case !durable && grew:
					t.Errorf("master %d: the default release was logged (aof_current_size %d -> %d): it pays an fsync", i, acquired[i], released[i])
				}
			}
		})
	}
}

// An unlogged release comes back after a restart that replays the AOF (a crash, and here
// a restart without the supervisor's delay, the worst case), but only as a refusal: the
// released handle stays released, a new holder still gets a majority with a larger
// fence, and the AOF replays the new holder's SET (logged as SET ... PXAT without NX) over
// the resurrected key, so a crash of every master restores the last holder.
func TestUnloggedReleaseComesBackOnlyAsARefusal(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	const key = "resurrect"
	const ttl = 20 * time.Second
	a := newClient(t, cl, redlock.Options{})
	// On every master, master 0 included: a SET dropped on a busy machine (the node timeout)
	// would leave master 0 with nothing to bring back.
	first := acquireHeldOn(t, cl, key, 5, func() *redlock.Lock { return mustAcquire(t, a, key, ttl) })
	if err := first.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	waitUntil(t, "the released key is gone", func() bool { return keysOn(t, cl, key) == 0 })

	m0 := cl.Masters[0]
	if err := m0.Kill(); err != nil {
		t.Fatalf("kill -9 master 0: %v", err)
	}
	if err := m0.Restart(); err != nil {
		t.Fatalf("restart master 0: %v", err)
	}
	if got := valueOn(t, m0, key); got != first.Token() {
		t.Fatalf("master 0 after crash+restart holds %q; want the released token back (the release was not logged)", got)
	}
	pttl, err := m0.Admin().PTTL(adminCtx(t), key).Result()
	if err != nil || pttl <= 0 || pttl > ttl {
		t.Fatalf("resurrected key PTTL = %v, %v; want its original expiry (0 < PTTL <= %v)", pttl, err, ttl)
	}
	if err := first.Extend(context.Background(), ttl); !errors.Is(err, redlock.ErrReleased) {
		t.Fatalf("Extend of the released handle = %v; want ErrReleased (a resurrected key must not revive it)", err)
	}

	b := newClient(t, cl, redlock.Options{})
	// On masters 1-4 (master 0 refuses): a SET dropped on a busy machine is acquired again.
	// Every acquisition's fence is checked, also one released again for a dropped SET: a
	// round granted by a bare majority reads the fence registers of those masters only.
	second := acquireHeldOn(t, cl, key, 4, func() *redlock.Lock {
		l := mustAcquire(t, b, key, ttl)
		if l.Fence() <= first.Fence() {
			t.Fatalf("fence after the resurrection %d <= earlier holder's %d", l.Fence(), first.Fence())
		}
		return l
	})
	if got := valueOn(t, m0, key); got != first.Token() {
		t.Fatalf("master 0 holds %q; want the resurrected key, which must have refused the new holder", got)
	}

	// Crash every master and restart them at once: each AOF replays to the last grant.
	crashAll(t, cl)
	if n := holders(t, cl, key, second.Token()); n != 4 {
		t.Fatalf("after a crash of every master the holder is on %d masters; want 4 (its SETs replayed over the released key)", n)
	}
	third := newClient(t, cl, redlock.Options{MaxRetries: 0})
	if _, err := third.TryAcquire(context.Background(), key, ttl); !errors.Is(err, redlock.ErrTaken) {
		t.Fatalf("a third client's TryAcquire while the holder's keys are back = %v; want ErrTaken", err)
	}
	if err := second.Release(context.Background()); err != nil {
		t.Fatalf("Release of the holder after the restarts: %v", err)
	}
	// Release returns once a majority confirmed; the other masters' deletes complete in
	// the background (checking right away raced with them). They must still all come,
	// and before the key would have expired by itself.
	waitUntil(t, "the holder's key is gone from every master", func() bool { return holders(t, cl, key, second.Token()) == 0 })
	if !time.Now().Before(second.Deadline()) {
		t.Fatalf("the holder's key went only by expiring (deadline %v), not by its release", second.Deadline())
	}
}

// With DurableRelease a crash right after the release does not bring the key back.
func TestDurableReleaseSurvivesACrash(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	const key = "durable-release"
	c := newClient(t, cl, redlock.Options{DurableRelease: true})
	l := mustAcquire(t, c, key, 20*time.Second)
	waitUntil(t, "every master holds the key", func() bool { return holders(t, cl, key, l.Token()) == 3 })
	if err := l.Release(context.Background()); err != nil {
		t.Fatalf("Release: %v", err)
	}
	waitUntil(t, "the released key is gone", func() bool { return keysOn(t, cl, key) == 0 })
	for i, m := range cl.Masters {
		if err := m.Kill(); err != nil {
			t.Fatalf("kill -9 master %d: %v", i, err)
		}
		if err := m.Restart(); err != nil {
			t.Fatalf("restart master %d: %v", i, err)
		}
	}
	if n := keysOn(t, cl, key); n != 0 {
		t.Fatalf("a durable release came back on %d masters after a crash", n)
	}
}

// aofHas reports whether the master's AOF holds s.
func aofHas(t *testing.T, m *redistest.Master, s string) bool {
	t.Helper()
	b, err := m.AOF()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Contains(b, []byte(s))
}

// crashAll kills every master (kill -9) and restarts them at once, without the
// supervisor's delay: each replays its AOF.
func crashAll(t *testing.T, cl *redistest.Cluster) {
	t.Helper()
	for i, m := range cl.Masters {
		if err := m.Kill(); err != nil {
			t.Fatalf("kill -9 master %d: %v", i, err)
		}
	}
	for i, m := range cl.Masters {
		if err := m.Restart(); err != nil {
			t.Fatalf("restart master %d: %v", i, err)
		}
	}
}

// TestPreparedHandOffSurvivesACrash: a logged hand-off prepares the next ones (the new
// holder's key lives a slack beyond its TTL, the fencing register is raised past its
// fence), so the releases after it hand the lock over without writing to the AOF: no
// fsync before the waiter is told, twice in a row here. Nothing is lost by it: every
// master killed right after and restarted at once (without the supervisor's delay, the
// worst case) replays a key that refuses everyone until the last holder's lock would
// have expired anyway, and a register at or above its fence.
func TestPreparedHandOffSurvivesACrash(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	const key = "prepared"
	const ttl = 10 * time.Second
	a := newClient(t, cl, redlock.Options{})
	first := mustAcquire(t, a, key, ttl)
	// Three waiters that renew their entries every 20-40ms, so that each one's validity
	// counts from just before the hand-off to it.
	got := make(chan waited, 3)
	for i := range 3 {
		c := newClient(t, cl, redlock.Options{RetryDelayMin: 10 * time.Millisecond, RetryDelayMax: 20 * time.Millisecond})
		go func() {
			l, err := c.Acquire(context.Background(), key, ttl)
			got <- waited{i, l, err}
		}()
		queuedWhileWaiting(t, cl, key, i+1, got)
	}
	// A release in the first 5ms of every 100ms of the masters' clocks leaves the key free
	// for other clients instead of handing it over: release in the middle of a slot.
	// It returns the masters' clock once the release has returned (they share this
	// machine's clock): every hand-off it made happened at or before it.
	release := func(l *redlock.Lock) int64 {
		t.Helper()
		if ms := masterMillis(t, cl.Masters[0]) % 100; ms < 20 || ms > 70 {
			time.Sleep(time.Duration((145-ms)%100) * time.Millisecond)
		}
		if err := l.Release(context.Background()); err != nil {
			t.Fatalf("Release: %v", err)
		}
		return masterMillis(t, cl.Masters[0])
	}
	release(first)
	b := <-got
	if b.err != nil || b.who != 0 {
		t.Fatalf("first waiter: waiter %d, %v; want waiter 0 holding the lock", b.who, b.err)
	}
	// The hand-off from a holder that took the lock without the queue (its key had less
	// than a TTL left) was logged, and prepared the next ones: the key lives beyond the
	// TTL. A master where the waiter took the free key itself (the holder's SET came too
	// late) is not prepared. A majority is.
	// prepared: the master's key expiry (its clock, ms) where the hand-off was prepared.
	prepared := map[int]int64{}
	waitUntil(t, "the next hand-offs prepared on a majority (key expiry beyond the TTL)", func() bool {
		if holders(t, cl, key, b.lock.Token()) != len(cl.Masters) {
			return false
		}
		clear(prepared)
		for i, m := range cl.Masters {
			at, err := m.Admin().PExpireTime(adminCtx(t), key).Result()
			if err == nil && at.Milliseconds()-masterMillis(t, m) > ttl.Milliseconds() {
				prepared[i] = at.Milliseconds()
			}
		}
		return len(prepared) >= 3
	})
	// Hold it long enough that the next holder's lock outlives the key a hand-off that
	// sets the TTL would log (had the hand-offs not been prepared, the check after the
	// crash fails), and well within the slack (1s at this TTL).
	time.Sleep(300 * time.Millisecond)
	handedC := release(b.lock)
	c := <-got
	if c.err != nil {
		t.Fatalf("second waiter: Acquire: %v", c.err)
	}
	time.Sleep(300 * time.Millisecond)
	handedD := release(c.lock)
	d := <-got
	if d.err != nil {
		t.Fatalf("third waiter: Acquire: %v", d.err)
	}
	if c.lock.Fence() <= b.lock.Fence() || d.lock.Fence() <= c.lock.Fence() {
		t.Fatalf("fences %d, %d, %d: want strictly increasing", b.lock.Fence(), c.lock.Fence(), d.lock.Fence())
	}
	waitUntil(t, "the third waiter's key on every master", func() bool { return holders(t, cl, key, d.lock.Token()) == 5 })
	for i, m := range cl.Masters {
		// The first hand-off was logged: the check below can see a logged hand-off.
		if !aofHas(t, m, b.lock.Token()) {
			t.Errorf("master %d: the AOF lacks the first waiter's token, handed over by a logged write", i)
		}
		// A prepared hand-off goes unlogged while the key it hands on has a TTL left, that
		// is within the slack of the logged one. On a busy machine a release can come later:
		// it is then logged, as it must be, and not counted against the hand-off; the
		// masters' clock after the release bounds when it happened.
		for j, w := range []waited{c, d} {
			at, ok := prepared[i]
			if !ok {
				continue
			}
			if late := []int64{handedC, handedD}[j] - (at - ttl.Milliseconds()); late > 0 {
				t.Logf("master %d: the hand-off to waiter %d may have come up to %dms after the slack: not checked", i, w.who, late)
				continue
			}
			if aofHas(t, m, w.lock.Token()) {
				t.Errorf("master %d: the prepared hand-off to waiter %d was logged (the AOF has its token): it paid an fsync", i, w.who)
			}
		}
	}

	crashAll(t, cl)
	for i, m := range cl.Masters {
		if valueOn(t, m, key) == "" {
			t.Fatalf("master %d: no key after the crash: the prepared hand-off was lost", i)
		}
		pttl, err := m.Admin().PTTL(adminCtx(t), key).Result()
		if left := time.Until(d.lock.Deadline()); err != nil || pttl < left {
			t.Errorf("master %d: restored key expires in %v (%v); the holder's lock is valid %v more: others could take it", i, pttl, err, left)
		}
		reg, err := strconv.ParseUint(valueOn(t, m, key+redlock.FenceSuffix), 10, 64)
		if err != nil || reg < d.lock.Fence() {
			t.Errorf("master %d: restored fencing register %d (%v) < the holder's fence %d", i, reg, err, d.lock.Fence())
		}
	}
	e := newClient(t, cl, redlock.Options{MaxRetries: 0})
	if _, err := e.TryAcquire(context.Background(), key, ttl); !errors.Is(err, redlock.ErrTaken) {
		t.Fatalf("another client's TryAcquire after the crash = %v; want ErrTaken", err)
	}
}
