package redlock_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestReplayedReleaseAfterCrashKeepsHandOff shows, script by script on real masters, why
// New refuses a go-redis client that may resend a command (RetryingClientError): a
// release replayed after a crash with an immediate restart frees the key that an unlogged
// hand-off gave to the next waiter. go-redis resends a command whose reply it lost on a
// connection error (io.EOF) unless the client is built with MaxRetries -1 (its default
// is 3 retries): when the master crashed after it ran the release and before the reply
// left, the resend runs on the restarted master. Each master, step by step, the replay
// run as go-redis sends it (the same script and arguments):
//
//  1. H releases; a logged hand-off gives waiter X the key (fence fH+1) and a note.
//  2. X releases; the note proves X's key: an unlogged hand-off gives it to waiter Y
//     (fence fH+2, the key keeps X's expiry). Y holds a majority (every master).
//  3. The master crashes and restarts at once: the unlogged hand-off is lost, and the key
//     is X's again from the AOF (the doc's argument: it refuses everyone until Y's key
//     would have expired).
//  4. X's release is replayed: the restored key is X's, so it is deleted.
//  5. Z acquires the lock while Y's hand-off is well within its TTL: two holders.
//
// The scripts cannot tell a replay from a release, so the unlogged case reproduces the
// two holders (asserted: it is what New's refusal prevents, and what
// TestReplayedReleaseThroughGoRedis shows through the library when the refusal is
// bypassed). The control (durable): X's release is logged, so is its hand-off, the
// restarted master holds Y's key and the replay finds nothing of X's to delete; Z is
// refused.
func TestReplayedReleaseAfterCrashKeepsHandOff(t *testing.T) {
	t.Run("unlogged hand-off: a replayed release frees it", func(t *testing.T) {
		if !replayedReleaseSetUp(t, false) {
			t.Error("Z was refused after the replayed release: the replay no longer frees an unlogged hand-off, so the test shows nothing (see the package doc on MaxRetries -1)")
		}
	})
	t.Run("logged hand-off: a replayed release finds nothing of the releaser's", func(t *testing.T) {
		if replayedReleaseSetUp(t, true) {
			t.Error("Z acquired after Y was handed the lock by a logged hand-off on every master: two holders")
		}
	})
}

// replayedReleaseSetUp is replayedRelease, run again on new masters while a hand-off's note
// was not read back (retryWhileNoteLost).
func replayedReleaseSetUp(t *testing.T, durable bool) (twoHolders bool) {
	retryWhileNoteLost(t, func() bool {
		var setUp bool
		twoHolders, setUp = replayedRelease(t, durable)
		return setUp
	})
	return twoHolders
}

// replayedRelease runs the steps above and reports whether Z acquired while Y's
// hand-off held (two holders); setUp is false when a hand-off's note was not read back
// (noteLost), so that the steps could not be set up.
func replayedRelease(t *testing.T, durable bool) (twoHolders, setUp bool) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	ctx := context.Background()
	const key = "replayed-release"
	const xTTL, yTTL = 30 * time.Second, 20 * time.Second
	h := newClient(t, cl, redlock.Options{})
	now := strconv.FormatInt(time.Now().UnixMicro(), 10)
	x := scriptWaiter{key: key, token: redlock.NewToken(), id: "x/1", ttl: xTTL, ticket: now}
	y := scriptWaiter{key: key, token: redlock.NewToken(), id: "y/1", ttl: yTTL, ticket: now + "1"} // later ticket

	lh := acquireEverywhere(t, h, cl, key)
	for _, w := range []*scriptWaiter{&x, &y} {
		for _, m := range cl.Masters {
			if r := w.attempt(t, m); r.flag != 0 {
				t.Fatalf("%s's first attempt on %s: %+v, want queued", w.id, m.Addr, r)
			}
		}
	}
	outsideWindow(t, cl.Masters[0])
	if err := lh.Release(ctx); err != nil { // step 1
		t.Fatal(err)
	}
	// Release returns once a majority answered: wait for every master's hand-off before
	// reading each one.
	waitUntil(t, "H's release applied on every master", func() bool {
		for _, m := range cl.Masters {
			if m.Admin().Get(ctx, key).Val() == lh.Token() {
				return false
			}
		}
		return true
	})
	fx := lh.Fence() + 1
	for _, m := range cl.Masters {
		r := x.attempt(t, m)
		if noteLost(r) || windowed(r) {
			t.Logf("X after H's release on %s: %+v: the note was not read back (noteLost), or a window left the key free", m.Addr, r)
			return false, false
		}
		if r.flag != 2 || r.handed != strconv.FormatUint(fx, 10) {
			t.Fatalf("X after H's release on %s: %+v, want ours with fence %d", m.Addr, r, fx)
		}
	}
	release := func(m *redistest.Master) int64 {
		t.Helper()
		v, err := m.Admin().Eval(ctx, redlock.ReleaseScript(durable),
			[]string{key, key + redlock.FenceSuffix, key + redlock.QueueSuffix},
			x.token, "", x.token, strconv.FormatUint(fx, 10), x.id, "drop").Int64()
		if err != nil {
			t.Fatalf("X's release on %s: %v", m.Addr, err)
		}
		return v
	}
	outsideWindow(t, cl.Masters[0])
	yFrom := time.Now()            // Y's hand-offs run after this: its validity lasts until yFrom+yTTL at least
	for _, m := range cl.Masters { // step 2
		outsideWindow(t, m)
		switch v := release(m); {
		case v == 1:
			// The release fell in a window for polling clients (a busy machine kept it from
			// running when outsideWindow chose): the key is free, not handed on.
			t.Logf("X's release on %s opened a window instead of handing on: again on new masters", m.Addr)
			return false, false
		case v != 2:
			t.Fatalf("X's release on %s returned %d, want 2 (handed on)", m.Addr, v)
		}
		r := y.attempt(t, m)
		if noteLost(r) {
			t.Logf("Y after X's release on %s: %+v: the note was not read back (noteLost)", m.Addr, r)
			return false, false
		}
		f, _ := strconv.ParseUint(r.handed, 10, 64)
		// Unlogged: the releaser's fence + 1; logged: above the register.
		if r.flag != 2 || !durable && f != fx+1 || f <= fx {
			t.Fatalf("Y after X's release on %s: %+v, want ours with fence %d (durable %v: above it)", m.Addr, r, fx+1, durable)
		}
	}
	for _, m := range cl.Masters { // step 3
		if err := m.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := m.Restart(); err != nil {
			t.Fatal(err)
		}
		want := x.token // the reproduction: the hand-off to Y was not logged
		if durable {
			want = y.token
		}
		if v := valueOn(t, m, key); v != want {
			t.Fatalf("after the crash %s holds %q, want %q (X %q, Y %q)", m.Addr, v, want, x.token, y.token)
		}
	}
	for _, m := range cl.Masters { // step 4: the replay
		release(m)
	}
	z := newClient(t, cl, redlock.Options{}) // step 5
	lz, err := tryAnswered(ctx, t, z, key, time.Second)
	at := time.Now()
	if err == nil {
		defer func() { _ = lz.Release(ctx) }()
	} else if !errors.Is(err, redlock.ErrTaken) {
		t.Fatalf("Z's TryAcquire: %v, want the lock or ErrTaken", err)
	}
	if at.After(yFrom.Add(yTTL / 2)) {
		t.Fatalf("the steps took %v, too long to tell whether Y's hand-off still held", at.Sub(yFrom))
	}
	if err == nil {
		t.Logf("Z acquired (fence %d) %v after Y was handed the lock (TTL %v) on every master",
			lz.Fence(), at.Sub(yFrom).Round(time.Millisecond), yTTL)
	}
	return err == nil, true
}
