package redlock_test

import (
	"cmp"
	"context"
	"fmt"
	"pgregory.net/rapid"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
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
	checked := 0
	for i, h := range chainHandOffs(t, m, c, "exact") {
		if !h.prepared || !h.inTime {
			// A window left the key free before this hop, or it was the first; or the hop
			// came once the released key had less than the next TTL left (a busy machine):
			// that hop is logged by design (and prepares the next ones).
			continue
		}
		checked++
		if !h.unlogged {
			t.Errorf("hop %d was logged (register %s -> %s): the note of the hop before was not recognised", i+1, h.regBefore, h.regAfter)
		}
		if h.expiry != h.released {
			t.Errorf("hop %d: the new holder's key expires at %d, the released key at %d (%+d ms)", i+1, h.expiry, h.released, h.expiry-h.released)
		}
	}
	if checked < handOffHops/2 {
		t.Fatalf("only %d of %d hops were prepared hand-offs in time: too few checked", checked, handOffHops)
	}
	t.Logf("%d of %d hops checked (prepared, and within the slack)", checked, handOffHops)
}

// TestLibraryForgetsARefusalBetweenCalls: the function library defines the queue's helpers
// once for every call, so the refusal of PEXPIRETIME that one call remembers (queue.lua's
// pxt) must not outlive that call. Before every release of a chain run through the library
// as a user with PEXPIRETIME, a user without it releases a lock of its own (PEXPIRETIME
// refused); the chain's hand-offs must still be unlogged, their expiry read exactly. With
// the scripts' "pxt = true" taken out, no hop's note is proven (every hop is logged) and
// the test fails.
func TestLibraryForgetsARefusalBetweenCalls(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1})
	m := cl.Masters[0]
	c := scriptUser(t, m, "handoff-new", true)
	old := scriptUser(t, m, "handoff-old", false)
	ctx := context.Background()
	lib := lua.FunctionLibrary()
	refused := 0
	oldRelease := func() {
		keys := []string{"old", "old" + redlock.FenceSuffix, "old" + redlock.QueueSuffix}
		if err := old.Set(ctx, "old", "old-token", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		n, err := old.FCall(ctx, lib.Function("release"), keys, "old-token", "", "old-token", "0", "", "").Int64()
		if err != nil || n != 1 {
			t.Fatalf("the old user's release: %d %v, want 1", n, err)
		}
		refused++
	}
	checked := 0
	hops := chainHandOffsWith(t, m, func(int) *redis.Client { return c }, "library", handOffHops, chainOptions{library: true, beforeRelease: oldRelease})
	for i, h := range hops {
		if !h.prepared || !h.inTime {
			continue // as in TestUnloggedHandOffKeepsExpiryExactly
		}
		checked++
		if !h.unlogged {
			t.Errorf("hop %d was logged (register %s -> %s) after the old user's call: its refusal outlived it", i+1, h.regBefore, h.regAfter)
		}
	}
	if checked < handOffHops/2 {
		t.Fatalf("only %d of %d hops were prepared hand-offs in time: too few checked", checked, handOffHops)
	}
	t.Logf("%d of %d hops checked, each after a call whose PEXPIRETIME was refused (%d)", checked, handOffHops, refused)
}

// TestHandOffWithoutPEXPIRETIME: a lock user whose ACL predates PEXPIRETIME (an earlier
// version's) still gets hand-offs, each of them logged: its expiry readings (TIME + PTTL)
// are not exact, and only an exact one proves a note. The refusal costs one error reply per
// script call, not one per key read.
func TestHandOffWithoutPEXPIRETIME(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1})
	m := cl.Masters[0]
	c := scriptUser(t, m, "handoff-old", false)
	ctx := context.Background()
	if err := c.Do(ctx, "pexpiretime", "x").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("PEXPIRETIME as the user without it: %v, want NOPERM (the control)", err)
	}
	errorReplies := func() int64 {
		t.Helper()
		info, err := m.Admin().InfoMap(ctx, "stats").Result()
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.ParseInt(info["Stats"]["total_error_replies"], 10, 64)
		return n
	}
	before := errorReplies()
	hops := chainHandOffs(t, m, c, "fallback")
	errs := errorReplies() - before
	for i, h := range hops {
		if h.unlogged {
			t.Errorf("hop %d was unlogged (register stayed %s) on an expiry read as TIME + PTTL", i+1, h.regAfter)
		}
	}
	// Per hop: the next waiter's queued attempt, the release, its attempt after it; at most
	// one refusal each (the script remembers it).
	if limit := int64(3 * (len(hops) + 2)); errs > limit {
		t.Errorf("%d error replies over %d hops, more than one per script call (%d)", errs, len(hops), limit)
	}
	t.Logf("%d hops, all logged; %d error replies (PEXPIRETIME refused)", len(hops), errs)
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
	prepared            bool  // the releaser held by a hand-off with a note (its fence from it)
	unlogged            bool  // handed over, and the register did not move
	inTime              bool  // the released key had the next TTL left after the release returned
	regBefore, regAfter string
}

// chainHandOffs hands a key along handOffHops waiters by running the release and acquire
// scripts as c: a first waiter gets it by a logged hand-off (which prepares the chain),
// then each holder releases to the next queued one. A release that falls in a window for
// polling clients leaves the key free instead (reply 1): the next waiter takes it when the
// window ends, and the chain goes on from there. It reports each hop after the first.
func chainHandOffs(t *testing.T, m *redistest.Master, c *redis.Client, key string) []handOffHop {
	t.Helper()
	return chainHandOffsAs(t, m, func(int) *redis.Client { return c }, key, handOffHops)
}

// tb is what the chain needs of a *testing.T or a *rapid.T.
type tb interface {
	Helper()
	Fatal(...any)
	Fatalf(string, ...any)
}

// chainHandOffsAs is chainHandOffs over hops hops, the scripts of hop i (its release and
// the next waiter's attempts) run as as(i).
func chainHandOffsAs(t tb, m *redistest.Master, as func(hop int) *redis.Client, key string, hops int) []handOffHop {
	t.Helper()
	return chainHandOffsWith(t, m, as, key, hops, chainOptions{})
}

// chainOptions changes how a chain of hand-offs runs its scripts.
type chainOptions struct {
	// library: run the scripts as the function library's functions (FCALL), as lock users
	// do, instead of by EVAL of their source.
	library bool
	// beforeRelease runs before each release of the chain.
	beforeRelease func()
}

// chainHandOffsWith is chainHandOffsAs with options.
func chainHandOffsWith(t tb, m *redistest.Master, as func(hop int) *redis.Client, key string, hops int, o chainOptions) []handOffHop {
	t.Helper()
	c := as(0)
	run := func(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
		if o.library {
			return c.FCall(ctx, lua.FunctionLibrary().Function(script), keys, args...)
		}
		src := redlock.AcquireQueuedScript()
		if script == "release" {
			src = redlock.ReleaseScript(false)
		}
		return c.Eval(ctx, src, keys, args...)
	}
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
		v, err := run(ctx, "acquire_queued", keys, w.token, w.ttl.Milliseconds(), "1",
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
	release := func(w *scriptWaiter, fence string) int64 {
		t.Helper()
		if o.beforeRelease != nil {
			o.beforeRelease()
		}
		outsideWindow(t, m) // a release in a window leaves the key free instead
		n, err := run(ctx, "release", keys, w.token, "", w.token, fence, "", "").Int64()
		if err != nil {
			t.Fatalf("release: %v", err)
		}
		return n
	}
	// take: the waiter's attempts until it holds the key (after a window: once it ended);
	// its fence for the release, "0" when it set the key itself or no note named one.
	take := func(w *scriptWaiter) string {
		t.Helper()
		for tries := 0; ; tries++ {
			r := attempt(w)
			switch {
			case r.flag == 2:
				return cmp.Or(r.handed, "0")
			case r.flag == 1:
				return "0"
			case tries == 100:
				t.Fatalf("waiter %s: still refused after a release (%+v)", w.id, r)
			}
			time.Sleep(5 * time.Millisecond) // a window lasts at most 5 ms of the master's clock
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
	fence := take(holder)
	var out []handOffHop
	for i := 2; i < 2+hops; i++ {
		c = as(i - 1)
		// A TTL of 4s: a logged hop prepares the next ones for its slack (1s), which
		// a busy machine's hops (up to 100ms each, outsideWindow) do not run through at once.
		next := waiter(i, 4*time.Second)
		if r := attempt(next); r.flag != 0 {
			t.Fatalf("waiter %d: %+v, want queued", i, r)
		}
		h := handOffHop{released: expiry(), regBefore: register(), prepared: fence != "0"}
		handed := release(holder, fence) == 2
		// The release ran before the master's clock read after it: when the released key
		// had at least the next TTL left then, it had it when the release ran.
		now, err := m.Admin().Time(ctx).Result()
		if err != nil {
			t.Fatalf("TIME: %v", err)
		}
		h.inTime = h.released-now.UnixMilli() >= next.ttl.Milliseconds()
		if !handed {
			h.prepared = false // a window: no hand-off; the next waiter set the key itself
		}
		fence = take(next)
		h.expiry, h.regAfter = expiry(), register()
		h.unlogged = handed && h.regAfter == h.regBefore
		out = append(out, h)
		holder = next
	}
	return out
}

// TestNoteMatchesOnlyTheExactExpiry: a note proves a key only when the key's expiry is the
// note's to the millisecond. After a logged hand-off to X, the key is set again with X's
// token and an expiry 1 ms either side of the note's: X's attempt is not given the note's
// fence; with the note's own expiry (the control) it is.
func TestNoteMatchesOnlyTheExactExpiry(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1})
	m := cl.Masters[0]
	ctx := context.Background()
	const key = "note-exact"
	keys := []string{key, key + redlock.FenceSuffix, key + redlock.QueueSuffix}
	a := scriptWaiter{key: key, token: redlock.NewToken(), id: "a/1", ttl: 20 * time.Second, ticket: "1"}
	x := scriptWaiter{key: key, token: redlock.NewToken(), id: "x/1", ttl: 20 * time.Second, ticket: "2"}
	if r := a.attempt(t, m); r.flag != 1 {
		t.Fatalf("A on the free key: %+v", r)
	}
	if r := x.attempt(t, m); r.flag != 0 {
		t.Fatalf("X queued: %+v", r)
	}
	outsideWindow(t, m)
	if n, err := m.Admin().Eval(ctx, redlock.ReleaseScript(false), keys, a.token, "", a.token, "0", "", "").Int64(); err != nil || n != 2 {
		t.Fatalf("A's release: %d %v, want handed", n, err)
	}
	at, err := m.Admin().Do(ctx, "pexpiretime", key).Int64()
	if err != nil {
		t.Fatal(err)
	}
	var fence string
	for _, d := range []int64{1, -1, 0} {
		if err := m.Admin().Set(ctx, key, x.token, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := m.Admin().Do(ctx, "pexpireat", key, at+d).Err(); err != nil {
			t.Fatal(err)
		}
		r := x.attempt(t, m)
		if r.flag != 2 {
			t.Fatalf("X's attempt (expiry %+d ms): %+v, want ours", d, r)
		}
		switch {
		case d != 0 && r.handed != "":
			t.Errorf("a key expiring %+d ms from the note's: X was given the note's fence %s", d, r.handed)
		case d == 0:
			fence = r.handed
		}
	}
	if fence == "" {
		t.Error("the key with the note's own expiry: no fence from the note (the control)")
	}
}

// TestHandOffExpiryAcrossVersions: a property over chains whose hops run as users with and
// without PEXPIRETIME in any order (masters and clients half-way through the ACL
// migration): an unlogged hop never moves the key's expiry, and a hop that a user without
// PEXPIRETIME released is never unlogged (its reading proves no note). Its negative
// control: with noted taking an inexact reading within a millisecond again, it fails at
// once ("hop 1 was unlogged, released by a user without PEXPIRETIME", shrunk to one hop,
// both users without it).
func TestHandOffExpiryAcrossVersions(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1})
	m := cl.Masters[0]
	users := map[bool]*redis.Client{true: scriptUser(t, m, "handoff-new", true), false: scriptUser(t, m, "handoff-old", false)}
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		run++
		hops := rapid.IntRange(1, 12).Draw(rt, "hops")
		withPXT := rapid.SliceOfN(rapid.Bool(), hops+1, hops+1).Draw(rt, "hop's user has PEXPIRETIME")
		key := fmt.Sprintf("versions-%d", run)
		for i, h := range chainHandOffsAs(rt, m, func(i int) *redis.Client { return users[withPXT[i]] }, key, hops) {
			hop := i + 1 // hop i's release and the next attempts ran as withPXT[hop]
			switch {
			case h.unlogged && h.expiry != h.released:
				rt.Fatalf("hop %d (PEXPIRETIME %v) was unlogged and moved the expiry %+d ms", hop, withPXT[hop], h.expiry-h.released)
			case h.unlogged && !withPXT[hop]:
				rt.Fatalf("hop %d was unlogged, released by a user without PEXPIRETIME", hop)
			}
		}
	})
}
