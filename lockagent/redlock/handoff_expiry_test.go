package redlock_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// handOffHops is how many unlogged hand-offs the expiry tests chain: well inside the
// register's headroom after a logged hand-off (CHAIN_FENCES).
const handOffHops = 60

// TestUnloggedHandOffKeepsExpiryExactly: a chain of unlogged hand-offs (each release proven
// by the note of the one before) gives every next holder's key the released key's expiry
// to the millisecond (PEXPIRETIME, then SET PXAT), hop after hop; before, each hop read
// PTTL and set PX later, and the expiry crept later by a millisecond now and then (3 ms
// over 99 hops, measured). The scripts run as a user with exactly the lock users' rights
// (and EVAL, to run them here without the function library).
func TestUnloggedHandOffKeepsExpiryExactly(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1})
	m := cl.Masters[0]
	c := scriptUser(t, m, "handoff", true)
	hops := chainHandOffs(t, m, c, "exact")
	for i, h := range hops {
		if !h.unlogged {
			t.Fatalf("hop %d was logged (register %s -> %s): the note of the hop before was not recognised", i+1, h.regBefore, h.regAfter)
		}
		if h.expiry != h.released {
			t.Errorf("hop %d: the new holder's key expires at %d, the released key at %d (%+d ms)", i+1, h.expiry, h.released, h.expiry-h.released)
		}
	}
}

// TestUnloggedHandOffWithoutPEXPIRETIME: a lock user whose ACL predates PEXPIRETIME (an
// earlier version's) still gets hand-offs; the expiry is then read as TIME + PTTL and an
// unlogged hop never moves it later (a logged one may: it is logged).
func TestUnloggedHandOffWithoutPEXPIRETIME(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1})
	m := cl.Masters[0]
	c := scriptUser(t, m, "handoff-old", false)
	if err := c.Do(context.Background(), "pexpiretime", "x").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("PEXPIRETIME as the user without it: %v, want NOPERM (the control)", err)
	}
	unlogged := 0
	for i, h := range chainHandOffs(t, m, c, "fallback") {
		if !h.unlogged {
			continue
		}
		unlogged++
		if h.expiry > h.released {
			t.Errorf("unlogged hop %d: the new holder's key expires at %d, %d ms after the released key (%d)", i+1, h.expiry, h.expiry-h.released, h.released)
		}
	}
	if unlogged == 0 {
		t.Fatal("no hop was unlogged: nothing was checked")
	}
}

// scriptUser is a user with the lock users' rights (with PEXPIRETIME or without) plus EVAL.
func scriptUser(t *testing.T, m *redistest.Master, name string, pexpiretime bool) *redis.Client {
	t.Helper()
	args := []any{"acl", "setuser", name, "on", ">pw-" + name, "~*", "&*", "-@all", "+eval"}
	for _, cmd := range redisconf.LockUserCommands {
		if cmd == "+pexpiretime" && !pexpiretime {
			continue
		}
		args = append(args, cmd)
	}
	if err := m.Admin().Do(context.Background(), args...).Err(); err != nil {
		t.Fatal(err)
	}
	c := m.ClientAs(name, "pw-"+name)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

type handOffHop struct {
	released, expiry    int64 // PEXPIRETIME of the released key, and of the new holder's
	unlogged            bool  // the register did not move
	regBefore, regAfter string
}

// chainHandOffs hands a key along handOffHops waiters by running the release and acquire
// scripts as c: a first waiter gets it by a logged hand-off (which prepares the chain),
// then each holder releases to the next queued one. It reports each hop after the first.
func chainHandOffs(t *testing.T, m *redistest.Master, c *redis.Client, key string) []handOffHop {
	t.Helper()
	ctx := context.Background()
	keys := []string{key, key + redlock.FenceSuffix, key + redlock.QueueSuffix}
	ticket := time.Now().UnixMicro()
	waiter := func(i int, ttl time.Duration) *scriptWaiter {
		return &scriptWaiter{key: key, token: redlock.NewToken(), id: "w/" + strconv.Itoa(i), ttl: ttl,
			ticket: strconv.FormatInt(ticket+int64(i), 10)}
	}
	attempt := func(w *scriptWaiter) queuedReply {
		t.Helper()
		w.seq++
		v, err := c.Eval(ctx, redlock.AcquireQueuedScript(), keys, w.token, w.ttl.Milliseconds(), "1",
			w.id, w.ticket, 60000, w.seq).Slice()
		if err != nil {
			t.Fatalf("acquire_queued: %v", err)
		}
		r := queuedReply{flag: v[0].(int64)}
		if r.flag == 2 && len(v) == 3 {
			r.handed = v[2].(string)
		}
		return r
	}
	release := func(w *scriptWaiter, fence string) {
		t.Helper()
		outsideWindow(t, m) // a release in a window leaves the key free instead
		if err := c.Eval(ctx, redlock.ReleaseScript(false), keys, w.token, "", w.token, fence, "", "").Err(); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	expiry := func() int64 {
		t.Helper()
		at, err := m.Admin().Do(ctx, "pexpiretime", key).Int64()
		if err != nil || at <= 0 {
			t.Fatalf("PEXPIRETIME %s: %d %v", key, at, err)
		}
		return at
	}
	register := func() string { return m.Admin().Get(ctx, key+redlock.FenceSuffix).Val() }

	first := waiter(0, 20*time.Second)
	if r := attempt(first); r.flag != 1 {
		t.Fatalf("the first attempt on the free key: %+v, want set", r)
	}
	holder := waiter(1, 20*time.Second)
	if r := attempt(holder); r.flag != 0 {
		t.Fatalf("the second waiter: %+v, want queued", r)
	}
	release(first, "0")
	r := attempt(holder)
	if r.flag != 2 || r.handed == "" {
		t.Fatalf("after the logged hand-off: %+v, want ours with the note's fence", r)
	}
	fence := r.handed
	var hops []handOffHop
	for i := 2; i < 2+handOffHops; i++ {
		next := waiter(i, time.Second)
		if r := attempt(next); r.flag != 0 {
			t.Fatalf("waiter %d: %+v, want queued", i, r)
		}
		h := handOffHop{released: expiry(), regBefore: register()}
		release(holder, fence)
		r := attempt(next)
		if r.flag != 2 {
			t.Fatalf("waiter %d after the release: %+v, want ours", i, r)
		}
		h.expiry, h.regAfter = expiry(), register()
		h.unlogged = h.regAfter == h.regBefore
		hops = append(hops, h)
		if fence = r.handed; fence == "" {
			// The note was not read back (the fallback, on a loaded master): the chain goes
			// on from a logged hand-off, with the fence the next one is given.
			fence = "0"
		}
		holder = next
	}
	return hops
}
