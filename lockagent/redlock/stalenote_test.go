package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// TestStaleNoteAfterRewriteAndRestart is the stale-note hole, step by step on real
// masters, the waiter's attempts run as its client runs them (the acquire_queued script):
//
//  1. A releases; a logged hand-off gives waiter X fence fA+1 and leaves a note.
//  2. An AOF rewrite copies the note into the AOF's base.
//  3. X is paused past its TTL: its handed keys expire (the test ends their TTL with
//     PEXPIRE, so that no step depends on the machine being quick within a short TTL).
//  4. B acquires (fence fB > fA+1) and releases.
//  5. X's attempt finds the key free and sets it (logged); the note is cleared in memory.
//  6. The masters restart at once (clean SHUTDOWN without a rewrite, or a crash).
//  7. The key is X's again (its logged SET) and the old note is back from the base.
//  8. X's next attempt must not report the note's fence: X would hold with fA+1 after B
//     held with fB.
//
// Before the fix the script trusted the note by the token's tag alone and step 8 reported
// fA+1 on every master.
func TestStaleNoteAfterRewriteAndRestart(t *testing.T) {
	for _, restart := range []string{"clean", "crash"} {
		t.Run("restart="+restart, func(t *testing.T) {
			retryWhileNoteLost(t, func() bool { return staleNoteAfterRewrite(t, restart) })
		})
	}
}

// staleNoteAfterRewrite runs the steps above on new masters; false when the hand-off's note
// was not read back in step 1 (noteLost), so that the steps could not be set up.
func staleNoteAfterRewrite(t *testing.T, restart string) (setUp bool) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	ctx := context.Background()
	const key = "stale-note"
	// Long enough that no key expires while a loaded machine runs the steps; step 3
	// ends it on purpose.
	const xTTL = 30 * time.Second
	a, b := newClient(t, cl, redlock.Options{}), newClient(t, cl, redlock.Options{})
	x := scriptWaiter{key: key, token: redlock.NewToken(), id: "x/1", ttl: xTTL,
		ticket: strconv.FormatInt(time.Now().UnixMicro(), 10)}

	la := acquireEverywhere(t, a, cl, key)
	for _, m := range cl.Masters {
		if r := x.attempt(t, m); r.flag != 0 {
			t.Fatalf("X's first attempt on %s: %+v, want queued", m.Addr, r)
		}
	}
	outsideWindow(t, cl.Masters[0])
	if err := la.Release(ctx); err != nil { // step 1
		t.Fatal(err)
	}
	// Release returns once a majority answered: wait for every master's hand-off
	// before reading each one.
	waitUntil(t, "A's release applied on every master", func() bool {
		for _, m := range cl.Masters {
			if m.Admin().Get(ctx, key).Val() == la.Token() {
				return false
			}
		}
		return true
	})
	for _, m := range cl.Masters {
		r := x.attempt(t, m)
		if noteLost(r) || windowed(r) {
			t.Logf("X's attempt after the hand-off on %s: %+v: the note was not read back (noteLost), or a window left the key free", m.Addr, r)
			return false
		}
		if r.flag != 2 || r.handed != strconv.FormatUint(la.Fence()+1, 10) {
			// The control: a note that describes the key is read.
			t.Fatalf("X's attempt after the hand-off on %s: %+v, want ours with fence %d", m.Addr, r, la.Fence()+1)
		}
	}
	for _, m := range cl.Masters { // step 2
		rewriteAOF(t, m)
	}
	for _, m := range cl.Masters { // step 3
		if err := m.Admin().PExpire(ctx, key, time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "X's handed keys expired", func() bool {
		for _, m := range cl.Masters {
			if m.Admin().Exists(ctx, key).Val() != 0 {
				return false
			}
		}
		return true
	})
	lb, err := tryAnswered(ctx, t, b, key, 5*time.Second) // step 4
	if err != nil {
		t.Fatal(err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// B's TryAcquire and Release return at a majority: on a busy master B's SET, fence
	// round and release can all still be on the way, and a free key there ("B's release
	// applied") proves nothing. Such a release, landing after X's attempt below found B's
	// key and queued X, hands the key to X (logged, with the register's next fence), and X's
	// next attempt finds it ours (flag 2): a CI failure reported it as the stale note's
	// fence, but it was this hand-off's, made in step 5 with step 5's TTL. Closing B's
	// Client waits until each master's commands were sent and answered or dropped unsent
	// (master.close), so the masters' state no longer changes under the test. B's round
	// may have left its key where its release was dropped: ended as its TTL would end it
	// (Redlock allows such a key; it is not the state this step is about). Anyone else's
	// key fails the test.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, m := range cl.Masters {
		endAbandonedWrite(t, m, key, lb.Token())
		if v := valueOn(t, m, key); v != "" {
			t.Fatalf("after B's release %s holds %q, want the key free", m.Addr, v)
		}
	}
	// Step 3 cut X's handed key short by hand; a key that expires by itself is set again
	// no earlier than its expiry, so the new one outlasts the note by a whole TTL. Here X's
	// new key would expire when the stale note says if step 5 came exactly a slack (1 s)
	// after step 1, as on a loaded machine it once did: a longer TTL rules that out.
	x.ttl = xTTL + 5*time.Second
	for _, m := range cl.Masters { // step 5
		if r := x.attempt(t, m); r.flag != 1 {
			t.Fatalf("X's attempt on the free key on %s: %+v, want set", m.Addr, r)
		}
	}
	for _, m := range cl.Masters { // step 6
		stop := m.Shutdown
		if restart == "crash" {
			stop = m.Kill
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if err := m.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range cl.Masters { // step 7: the sequence is reproduced
		if v := m.Admin().Get(ctx, key).Val(); v != x.token {
			t.Fatalf("after the restart %s holds %q, want X's token", m.Addr, v)
		}
		if q := m.Admin().Get(ctx, key+redlock.QueueSuffix).Val(); !strings.Contains(q, redlock.TokenTag(x.token)+":") {
			t.Fatalf("after the restart the queue on %s is %q: the note did not come back from the rewrite", m.Addr, q)
		}
	}
	for _, m := range cl.Masters { // step 8
		r := x.attempt(t, m)
		if r.flag != 2 {
			t.Fatalf("X's attempt after the restart on %s: %+v, want ours", m.Addr, r)
		}
		if r.handed != "" {
			if f, _ := strconv.ParseUint(r.handed, 10, 64); f <= lb.Fence() {
				t.Errorf("%s reports the stale note's fence %d to X after B held with %d", m.Addr, f, lb.Fence())
			}
		}
	}
	return true
}

// TestForeignQueueKeyRefused: a value at the queue's key, or at one of its pages (the queue
// key + ":<n>"), that is not a queue (another application's) is never read as one nor
// overwritten: a waiter that would join it gets a ForeignQueueError naming that key, and a
// release still releases (the queue ends there).
func TestForeignQueueKeyRefused(t *testing.T) {
	for name, c := range map[string]struct {
		set  func(ctx context.Context, m *redistest.Master, q string) error // q: the queue key
		page string                                                         // the foreign key after q
	}{
		"string": {set: func(ctx context.Context, m *redistest.Master, q string) error {
			return m.Admin().Set(ctx, q, "not a queue", 0).Err()
		}},
		"hash": {set: func(ctx context.Context, m *redistest.Master, q string) error {
			return m.Admin().HSet(ctx, q, "f", "v").Err()
		}},
		"a page": {page: ":1", set: func(ctx context.Context, m *redistest.Master, q string) error {
			if err := m.Admin().Set(ctx, q, "0 +1-1\n", time.Minute).Err(); err != nil {
				return err
			}
			return m.Admin().Set(ctx, q+":1", "not a page", 0).Err()
		}},
	} {
		t.Run(name, func(t *testing.T) {
			cl := redistest.Start(t, redistest.Options{Masters: 3})
			ctx := context.Background()
			const key = "foreign-queue"
			q := key + redlock.QueueSuffix
			foreign := q + c.page
			for _, m := range cl.Masters {
				if err := c.set(ctx, m, q); err != nil {
					t.Fatal(err)
				}
			}
			dumps := func() (out []string) {
				for _, m := range cl.Masters {
					out = append(out, dumpOf(t, m, q), dumpOf(t, m, foreign))
				}
				return out
			}
			before := dumps()
			holder, waiter := newClient(t, cl, redlock.Options{}), newClient(t, cl, redlock.Options{})
			l, err := tryAnswered(ctx, t, holder, key, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			actx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_, err = waiter.Acquire(actx, key, time.Second)
			var fq *redlock.ForeignQueueError
			if !errors.As(err, &fq) || !errors.Is(err, redlock.ErrInvalid) || fq.Key != foreign {
				t.Fatalf("Acquire with a foreign value at %s: %v, want a ForeignQueueError (redlock.ErrInvalid) naming it", foreign, err)
			}
			if err := l.Release(ctx); err != nil {
				t.Fatalf("Release with a foreign value at %s: %v", foreign, err)
			}
			// Release returns at a majority's answers: the last master's may come later.
			waitUntil(t, "the key released on every master", func() bool { return keysOn(t, cl, key) == 0 })
			if after := dumps(); !slices.Equal(after, before) {
				t.Errorf("the queue or the foreign value at %s changed", foreign)
			}
		})
	}
}

// TestForeignValueWhereANewPageGoes: a waiter whose line would start a new page refuses a
// value there that is not a page (another application's key, say another Redlock
// library's lock named like a page) instead of overwriting it. Found by review: it was
// overwritten.
func TestForeignValueWhereANewPageGoes(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1})
	m := cl.Masters[0]
	ctx := context.Background()
	const key = "foreign-new-page"
	q := key + redlock.QueueSuffix
	tok := strings.Repeat("t", lua.QueueBytes*4/10) // two lines fill the front, a third starts a page
	if err := m.Admin().Set(ctx, key, "holder", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	// A full front, no page yet.
	if err := m.Admin().Set(ctx, q, "0\nA/1 200 "+tok+" 99999999999999 1000 1\nB/1 300 "+tok+" 99999999999999 1000 1\n", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"someone else's lock", ""} {
		if v == "" {
			if err := m.Admin().Del(ctx, q+":1").Err(); err != nil {
				t.Fatal(err)
			}
			if err := m.Admin().RPush(ctx, q+":1", "a list").Err(); err != nil {
				t.Fatal(err)
			}
		} else if err := m.Admin().Set(ctx, q+":1", v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		before := dumpOf(t, m, q+":1")
		script := redis.NewScript(redlock.AcquireQueuedScript())
		err := script.Run(ctx, m.Admin(), []string{key, key + redlock.FenceSuffix, q}, "x-"+tok, 10000, "0", "X/1", 400, 30000, 1).Err()
		if err == nil || !strings.HasPrefix(err.Error(), lua.ForeignQueueCode+" "+q+":1 ") {
			t.Errorf("a join that would start a page over a foreign value: %v, want an error naming %s", err, q+":1")
		}
		if dumpOf(t, m, q+":1") != before {
			t.Errorf("the foreign value at %s changed", q+":1")
		}
	}
}

// TestUnreadableLastLineEndsTheQueue: a queue whose last line is cut short (no line break)
// ends before that line, as any unreadable line ends it: a waiter joining goes in before it
// instead of the script failing (it raised "arithmetic on nil" while looking for the
// line's end).
func TestUnreadableLastLineEndsTheQueue(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1})
	m := cl.Masters[0]
	ctx := context.Background()
	const key, cut = "cut-queue", "x 1 t 99999999999999 5 1"
	keys := []string{key, key + redlock.FenceSuffix, key + redlock.QueueSuffix}
	if err := m.Admin().Set(ctx, key, "holder-token", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := m.Admin().Set(ctx, keys[2], "0\n"+cut, 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	ticket := strconv.FormatInt(time.Now().UnixMicro(), 10)
	v, err := m.Admin().Eval(ctx, redlock.AcquireQueuedScript(), keys, "w-token", 1000, "0", "c/1", ticket, 60000, 1).Slice()
	if err != nil {
		t.Fatalf("a waiter joining a queue whose last line is cut short: %v", err)
	}
	if v[0].(int64) != 0 {
		t.Fatalf("reply %v, want queued (the key is held)", v)
	}
	q := m.Admin().Get(ctx, keys[2]).Val()
	if !strings.HasPrefix(q, "0\nc/1 "+ticket+" w-token ") || !strings.HasSuffix(q, "\n"+cut) {
		t.Fatalf("queue %q: want the waiter's line, then the cut line as it was", q)
	}
}

// acquireEverywhere acquires key with a key on every master (acquireHeldOn).
func acquireEverywhere(t *testing.T, c *redlock.Client, cl *redistest.Cluster, key string) *redlock.Lock {
	t.Helper()
	return acquireHeldOn(t, cl, key, len(cl.Masters), func() *redlock.Lock {
		l, err := c.Acquire(context.Background(), key, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return l
	})
}

// endAbandonedWrite deletes key on m if it still holds token: a late SET of a round its
// client abandoned, ended as its TTL would end it.
func endAbandonedWrite(t *testing.T, m *redistest.Master, key, token string) {
	t.Helper()
	const delIfHeld = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0`
	if err := m.Admin().Eval(context.Background(), delIfHeld, []string{key}, token).Err(); err != nil {
		t.Fatalf("ending the abandoned write on %s: %v", m.Addr, err)
	}
}

// dumpOf is DUMP of k on m: equal dumps, equal values.
func dumpOf(t *testing.T, m *redistest.Master, k string) string {
	t.Helper()
	v, err := m.Admin().Dump(context.Background(), k).Result()
	if err != nil {
		t.Fatalf("DUMP %s on %s: %v", k, m.Addr, err)
	}
	return v
}

// scriptWaiter is a waiter of the wait queue whose attempts the test runs one master at a
// time, with the arguments queuedWait.attempt sends.
type scriptWaiter struct {
	key, token, id, ticket string
	ttl                    time.Duration
	seq                    int
}

// queuedReply is acquireQueuedScript's reply: flag 1 set, 2 ours (handed: the note's
// fence, "" without one), 0 refused.
type queuedReply struct {
	flag   int64
	reg    string
	handed string
	holder string
}

func (w *scriptWaiter) attempt(t *testing.T, m *redistest.Master) queuedReply {
	t.Helper()
	w.seq++
	v, err := m.Admin().Eval(context.Background(), redlock.AcquireQueuedScript(),
		[]string{w.key, w.key + redlock.FenceSuffix, w.key + redlock.QueueSuffix}, w.token, w.ttl.Milliseconds(), "1",
		w.id, w.ticket, 60000, w.seq).Slice()
	if err != nil {
		t.Fatalf("acquire_queued on %s: %v", m.Addr, err)
	}
	r := queuedReply{flag: v[0].(int64), reg: fmt.Sprint(v[1])}
	if r.flag == 2 && len(v) == 3 {
		r.handed = fmt.Sprint(v[2])
	}
	if r.flag == 0 {
		r.holder = fmt.Sprint(v[3])
	}
	return r
}

// rewriteAOF runs BGREWRITEAOF on m and waits until it is done (t: a *testing.T or a
// *rapid.T).
func rewriteAOF(t interface {
	Helper()
	Fatalf(string, ...any)
}, m *redistest.Master) {
	t.Helper()
	ctx := context.Background()
	if err := m.Admin().BgRewriteAOF(ctx).Err(); err != nil {
		t.Fatalf("BGREWRITEAOF on %s: %v", m.Addr, err)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		info := m.Admin().Info(ctx, "persistence").Val()
		if strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0") &&
			strings.Contains(info, "aof_last_bgrewrite_status:ok") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for the AOF rewrite on %s", m.Addr)
		}
	}
}

// outsideWindow waits, when needed, until the master's clock is clear of the windows a
// release opens for polling clients (see the release script), so that a release hands over
// (t: a *testing.T or a *rapid.T).
func outsideWindow(t interface {
	Helper()
	Fatal(...any)
}, m *redistest.Master) {
	t.Helper()
	now, err := m.Admin().Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ms := now.UnixMilli() % 100; ms < 20 || ms > 70 {
		time.Sleep(time.Duration((145-ms)%100) * time.Millisecond)
	}
}

// noteLost: a waiter's attempt found the key handed to it (flag 2) but not the note's fence.
// The note is recognised by the key's expiry, PEXPIRETIME (exact); for a user without it,
// TIME + PTTL, which a master kept off the CPU between those two calls (a loaded machine)
// reads a few milliseconds off: the script then falls back, safely, to fence unknown and a
// logged hand-off. Such an attempt cannot set up a test that starts from a recognised note.
func noteLost(r queuedReply) bool { return r.flag == 2 && r.handed == "" }

// windowed: the release fell in a window for polling clients on that master (a busy
// machine kept it from running when outsideWindow chose) and handed nothing over: the
// waiter's attempt after it set the key itself (flag 1), or, the window still open, was
// told to wait for its end (flag 0, "window"). Such an attempt cannot set up a test that
// starts from a hand-off either.
func windowed(r queuedReply) bool { return r.flag == 1 || (r.flag == 0 && r.holder == "window") }

// retryWhileNoteLost runs steps (each run on new masters) until a run could set itself up,
// at most three times: a note lost to the clock three times in a row is no longer a busy
// machine, and fails the test.
func retryWhileNoteLost(t *testing.T, steps func() (setUp bool)) {
	t.Helper()
	for try := 1; try <= 3; try++ {
		if steps() {
			return
		}
		t.Logf("try %d: the steps could not be set up (a hand-off's note not read back, see noteLost, or a release in a window): again on new masters", try)
	}
	t.Fatal("a hand-off's note was not read back in 3 tries: the note is no longer recognised (see noteLost)")
}
