package redlock_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// protocolDuration bounds TestProtocolStateMachine: about a minute and a half by default
// (CI); `make fuzz-protocol DURATION=1h` sets PROTOCOL_FUZZ_DURATION for long runs.
func protocolDuration(t *testing.T) time.Duration {
	v := os.Getenv("PROTOCOL_FUZZ_DURATION")
	if v == "" {
		return 90 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("PROTOCOL_FUZZ_DURATION=%q: want a Go duration such as 90s or 1h", v)
	}
	return d
}

// protocolTTL is the TTL of every lock in the state machine: short, so that a pause past
// it is a step and not a wait, and longer than a restart of every master, so that a
// waiter's grants outlive a fence round that failed because the masters restarted.
const protocolTTL = 2 * time.Second

// protocolMachine drives the wait queue's protocol on real masters one move at a time
// (protocolMoves): a holder and the clients that acquire and release around it, a queued
// waiter whose attempts, received hand-off notices and fence rounds are separate moves,
// and the faults. After every acquisition and every move the invariants are checked: no
// two holders within their reported validity, fences strictly increasing in acquisition
// order, and the reported validity never past the key's life on a majority of the masters.
type protocolMachine struct {
	cl     *redistest.Cluster
	key    string
	holder *redlock.Client // the holder, and the other clients that acquire and release
	wc     *redlock.Client // the waiter's Client
	waiter *redlock.StepWaiter
	held   *redlock.Lock // the holder's lock
	wheld  *redlock.Lock // the waiter's lock
	fences []uint64      // in acquisition order
}

func (pm *protocolMachine) ctx() context.Context { return context.Background() }

// acquired checks the invariants at an acquisition and records it. Every master is
// running (moves that stop masters start them again before they report acquisitions).
func (pm *protocolMachine) acquired(t *rapid.T, who string, l *redlock.Lock) {
	now := time.Now()
	if n := len(pm.fences); n > 0 && l.Fence() <= pm.fences[n-1] {
		t.Fatalf("%s acquired with fence %d after an acquisition with fence %d (fences in acquisition order: %v)", who, l.Fence(), pm.fences[n-1], pm.fences)
	}
	for _, o := range []*redlock.Lock{pm.held, pm.wheld} { // the holders that have not released
		if o != nil && o != l && o.Deadline().After(now) {
			t.Fatalf("%s acquired while another holder (fence %d) is valid for %v more", who, o.Fence(), o.Deadline().Sub(now))
		}
	}
	pm.fences = append(pm.fences, l.Fence())
	t.Logf("%s acquired: fence %d, valid for %v", who, l.Fence(), l.Deadline().Sub(now).Round(time.Millisecond))
	// The key's life on a majority: present (ours, or a key a restart restored that
	// refuses everyone) until at least the reported deadline. A deadline already past
	// claims nothing.
	deadline := l.Deadline()
	deadlineMs := time.Now().Add(time.Until(deadline)).UnixMilli() // monotonic deadline, in wall-clock ms
	live := 0
	for _, m := range pm.cl.Masters {
		at, err := m.Admin().Do(pm.ctx(), "PEXPIRETIME", pm.key).Int64()
		if err == nil && at >= deadlineMs-1 {
			live++
		}
	}
	if live < len(pm.cl.Masters)/2+1 && time.Now().Before(deadline) {
		t.Fatalf("%s reports validity until %s but the key lives that long on %d masters only",
			who, deadline.Format("15:04:05.000"), live)
	}
}

// Check runs after every move: never two holders within their validity.
func (pm *protocolMachine) Check(t *rapid.T) {
	now := time.Now()
	if pm.held != nil && pm.wheld != nil && pm.held.Deadline().After(now) && pm.wheld.Deadline().After(now) {
		t.Fatalf("two holders within their validity: fences %d and %d", pm.held.Fence(), pm.wheld.Fence())
	}
}

// checkClient is a Client for one check, over its own connections (closed with it).
func checkClient(t *rapid.T, cl *redistest.Cluster, opts redlock.Options) *redlock.Client {
	var rdbs []redis.UniversalClient
	for _, r := range cl.LockClients() {
		rdbs = append(rdbs, r)
	}
	opts.NodeTimeout = testNodeTimeout
	c, err := redlock.New(rdbs, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestProtocolStateMachine checks the hand-off protocol's invariants on random move
// sequences (protocolMoves) against real masters, for protocolDuration; a failure is
// shrunk to a minimal sequence and printed by rapid (-rapid.shrinktime bounds the
// shrinking: each try reruns a sequence on real masters, seconds each).
//
// Its negative control is the stale-note hole (a hand-off's note that an AOF rewrite
// persisted and a restart brought back, trusted by the token's tag alone): with the
// expiry check in the acquire_queued script's note lookup reverted to the tag check, a
// 300s run found it in its fourth sequence (about 40s in) and printed, shrunk:
//
//	move: "lock cycle"
//	  holder acquired: fence 1 (the waiter queues behind it)
//	  fault while held: "none"              (the release hands the lock to the waiter: fence 2, a note)
//	  fault after the release: "rewrite", masters: "all"
//	  waiter paused: "past its TTL"
//	  meanwhile another client: "acquires and releases"   (fence 102)
//	  meanwhile a fault: "rewrite", masters: "all"
//	  its hand-off notices: "late"
//	  masters restarting in its fence round: "crash", masters: "all"
//	  its hand-off notices: "delivered"     (its next attempt: the key is its own again)
//	  masters restarting in its fence round: "clean", masters: "0"
//	waiter acquired with fence 2 after an acquisition with fence 102 (fences in acquisition order: [1 102])
//
// (Shrinking on real masters keeps a few choices that timing made it unable to drop: the
// second rewrite, the notices' fates, the last restart of one master.) A second run found
// it in its first sequence, in the last of seven moves.
//
// It does not look for the replayed-release hole (New refuses the clients that would
// replay): masters stop only between commands here, so no command is lost after it ran,
// and go-redis has nothing to resend; run past that refusal with go-redis's default
// options (3 retries) it passed. TestReplayedReleaseThroughGoRedis crashes a master
// between a release and its reply.
func TestProtocolStateMachine(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	// Each check is one sequence on real masters, seconds long: one per rapid.Check, so
	// that the duration bounds the run, and sequences of about six moves (a lock cycle is
	// several steps), unless the flags say otherwise.
	setDefaultFlag("rapid.checks", "100", "1")
	setDefaultFlag("rapid.steps", "30", "6")
	end := time.Now().Add(protocolDuration(t))
	round, sequences := 0, 0
	for time.Now().Before(end) && !t.Failed() {
		round++
		rapid.Check(t, func(rt *rapid.T) {
			sequences++
			// The waiter's queue entry (and a hand-off's note with it) lives for its lease
			// (3*2*RetryDelayMax + 1s: 13s here) after its last attempt: longer than a lock
			// cycle, as for a waiter whose TTL is short beside its retry delay.
			holder, wc := checkClient(rt, cl, redlock.Options{}), checkClient(rt, cl, redlock.Options{RetryDelayMax: 2 * time.Second})
			defer holder.Close()
			defer wc.Close()
			key := "protocol-" + strconv.Itoa(round) + "-" + fmt.Sprint(time.Now().UnixNano())
			pm := &protocolMachine{cl: cl, key: key, holder: holder, wc: wc}
			pm.waiter = redlock.NewStepWaiter(context.Background(), wc, key, protocolTTL)
			defer func() {
				pm.waiter.Leave()
				for _, l := range []*redlock.Lock{pm.held, pm.wheld} {
					if l != nil {
						_ = l.Release(context.Background())
					}
				}
			}()
			rt.Repeat(map[string]func(*rapid.T){"": pm.Check, "move": pm.move})
		})
	}
	t.Logf("%d move sequences in %d rapid runs", sequences, round)
}

// setDefaultFlag sets flag name to value when it still has its default (not given on the
// command line).
func setDefaultFlag(name, dflt, value string) {
	if f := flag.Lookup(name); f != nil && f.Value.String() == dflt {
		_ = flag.Set(name, value)
	}
}
