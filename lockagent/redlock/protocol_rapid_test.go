package redlock_test

import (
	"context"
	"errors"
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

// protocolTTL is the TTL of every lock in the state machine: short, so that expiry is a
// step (a sleep past it) and not a wait.
const protocolTTL = 200 * time.Millisecond

// protocolMachine drives the wait queue's protocol on real masters one step at a time:
// a holder that acquires and releases (TryAcquire, Release), a queued waiter whose
// attempts, received hand-off notices (delivered, duplicated, dropped or left late) and
// tryLock are separate steps, and the faults: AOF rewrites, clean restarts, crashes with
// an immediate restart, crashes under the restart hold, and time passing (expiry, a
// waiter paused past its TTL). After every acquisition and every step the invariants
// are checked: no two holders within their reported validity, fences strictly
// increasing in acquisition order, and the reported validity never past the key's life
// on a majority of the masters.
type protocolMachine struct {
	cl     *redistest.Cluster
	key    string
	holder *redlock.Client
	wc     *redlock.Client
	waiter *redlock.StepWaiter
	held   *redlock.Lock // the holder's lock
	wheld  *redlock.Lock // the waiter's lock
	fences []uint64      // in acquisition order
}

func (pm *protocolMachine) ctx() context.Context { return context.Background() }

// acquired checks the invariants at an acquisition and records it.
func (pm *protocolMachine) acquired(t *rapid.T, who string, l *redlock.Lock) {
	now := time.Now()
	if n := len(pm.fences); n > 0 && l.Fence() <= pm.fences[n-1] {
		t.Fatalf("%s acquired with fence %d after an acquisition with fence %d (fences %v)", who, l.Fence(), pm.fences[n-1], pm.fences)
	}
	for _, o := range []*redlock.Lock{pm.held, pm.wheld} { // the holders that have not released
		if o != nil && o != l && o.Deadline().After(now) {
			t.Fatalf("%s acquired while another holder (fence %d) is valid for %v more", who, o.Fence(), o.Deadline().Sub(now))
		}
	}
	// The key's life on a majority: present (ours, or a key a restart restored that
	// refuses everyone) until at least the reported deadline.
	deadlineMs := now.Add(l.Deadline().Sub(now)).UnixMilli()
	live := 0
	for _, m := range pm.cl.Masters {
		if !m.Running() {
			continue
		}
		at, err := m.Admin().Do(pm.ctx(), "PEXPIRETIME", pm.key).Int64()
		if err == nil && at >= deadlineMs-1 {
			live++
		}
	}
	if live < len(pm.cl.Masters)/2+1 {
		t.Fatalf("%s reports validity until %d (master ms) but the key lives that long on %d masters only", who, deadlineMs, live)
	}
	pm.fences = append(pm.fences, l.Fence())
	t.Logf("%s acquired: fence %d", who, l.Fence())
}

// Check runs after every step: never two holders within their validity.
func (pm *protocolMachine) Check(t *rapid.T) {
	now := time.Now()
	valid := 0
	for _, l := range []*redlock.Lock{pm.held, pm.wheld} {
		if l != nil && l.Deadline().After(now) {
			valid++
		}
	}
	if valid > 1 {
		t.Fatalf("two holders within their validity: fences %d and %d", pm.held.Fence(), pm.wheld.Fence())
	}
}

// stepErr fails on an error the protocol never returns for these steps.
func stepErr(t *rapid.T, what string, err error) {
	if err == nil || errors.Is(err, redlock.ErrTaken) || errors.Is(err, redlock.ErrUnavailable) ||
		errors.Is(err, redlock.ErrLost) || errors.Is(err, redlock.ErrExpired) || errors.Is(err, redlock.ErrReleased) {
		return
	}
	t.Fatalf("%s: %v", what, err)
}

func (pm *protocolMachine) HolderAcquire(t *rapid.T) {
	if pm.held != nil {
		t.Skip("holding")
	}
	l, err := pm.holder.TryAcquire(pm.ctx(), pm.key, protocolTTL)
	stepErr(t, "holder acquire", err)
	if l != nil {
		pm.held = l
		pm.acquired(t, "holder", l)
	}
}

func (pm *protocolMachine) HolderRelease(t *rapid.T) {
	if pm.held == nil {
		t.Skip("not holding")
	}
	stepErr(t, "holder release", pm.held.Release(pm.ctx()))
	pm.held = nil
}

func (pm *protocolMachine) WaiterAttempt(t *rapid.T) {
	if pm.wheld != nil {
		t.Skip("holding")
	}
	stepErr(t, "waiter attempt", pm.waiter.Attempt(pm.ctx()))
}

// WaiterNotice: a received notice is delivered, delivered and kept (a duplicate
// follows), or dropped; the others stay late.
func (pm *protocolMachine) WaiterNotice(t *rapid.T) {
	n := pm.waiter.Receive()
	if n == 0 {
		t.Skip("no notice")
	}
	i := rapid.IntRange(0, n-1).Draw(t, "notice")
	switch rapid.SampledFrom([]string{"deliver", "duplicate", "drop"}).Draw(t, "fate") {
	case "deliver":
		pm.waiter.Deliver(i, false)
	case "duplicate":
		pm.waiter.Deliver(i, true)
	default:
		pm.waiter.Drop(i)
	}
}

func (pm *protocolMachine) WaiterTryLock(t *rapid.T) {
	if pm.wheld != nil {
		t.Skip("holding")
	}
	l, err := pm.waiter.TryLock(pm.ctx())
	stepErr(t, "waiter tryLock", err)
	if l != nil {
		pm.wheld = l
		pm.acquired(t, "waiter", l)
	}
}

// WaiterRelease releases the waiter's lock; a new waiter joins the queue.
func (pm *protocolMachine) WaiterRelease(t *rapid.T) {
	if pm.wheld == nil {
		t.Skip("not holding")
	}
	stepErr(t, "waiter release", pm.wheld.Release(pm.ctx()))
	pm.wheld = nil
	pm.waiter.Leave()
	pm.waiter = redlock.NewStepWaiter(pm.ctx(), pm.wc, pm.key, protocolTTL)
}

// masters draws the masters a fault hits: all, or one.
func (pm *protocolMachine) masters(t *rapid.T) []*redistest.Master {
	i := rapid.IntRange(-1, len(pm.cl.Masters)-1).Draw(t, "master (-1: all)")
	if i < 0 {
		return pm.cl.Masters
	}
	return pm.cl.Masters[i : i+1]
}

func (pm *protocolMachine) Rewrite(t *rapid.T) {
	for _, m := range pm.masters(t) {
		rewriteAOF(t, m)
	}
}

// Restart: a clean SHUTDOWN (no rewrite) or a crash, restarted at once.
func (pm *protocolMachine) Restart(t *rapid.T) {
	crash := rapid.Bool().Draw(t, "crash")
	for _, m := range pm.masters(t) {
		stop := m.Shutdown
		if crash {
			stop = m.Kill
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if err := m.Restart(); err != nil {
			t.Fatal(err)
		}
	}
}

// CrashHeld: a crash under the restart hold: down past every TTL (and slack).
func (pm *protocolMachine) CrashHeld(t *rapid.T) {
	m := pm.cl.Masters[rapid.IntRange(0, len(pm.cl.Masters)-1).Draw(t, "master")]
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * protocolTTL)
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
}

// Sleep lets time pass: past every TTL (keys expire, a paused waiter outlives its
// grants), or a quarter of it.
func (pm *protocolMachine) Sleep(t *rapid.T) {
	if rapid.Bool().Draw(t, "past the TTL") {
		time.Sleep(2 * protocolTTL)
	} else {
		time.Sleep(protocolTTL / 4)
	}
}

// checkClient is a Client for one check, over its own connections (closed with it).
func checkClient(t *rapid.T, cl *redistest.Cluster) *redlock.Client {
	var rdbs []redis.UniversalClient
	for _, r := range cl.LockClients() {
		rdbs = append(rdbs, r)
	}
	c, err := redlock.New(rdbs, redlock.Options{NodeTimeout: testNodeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestProtocolStateMachine checks the hand-off protocol's invariants on random step
// sequences against real masters, for protocolDuration; a failure is shrunk to a minimal
// sequence and printed by rapid.
func TestProtocolStateMachine(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	if f := flag.Lookup("rapid.checks"); f != nil && f.Value.String() == "100" {
		_ = flag.Set("rapid.checks", "5") // each check is one sequence on real masters
	}
	end := time.Now().Add(protocolDuration(t))
	round := 0
	for time.Now().Before(end) && !t.Failed() {
		round++
		rapid.Check(t, func(rt *rapid.T) {
			round++
			holder, wc := checkClient(rt, cl), checkClient(rt, cl)
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
			rt.Repeat(rapid.StateMachineActions(pm))
		})
	}
}
