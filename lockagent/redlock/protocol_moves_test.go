package redlock_test

import (
	"errors"
	"sync"
	"time"

	"pgregory.net/rapid"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// The state machine's moves are the protocol's real moves, whole turns of its actors
// with the faults that can strike during them drawn as their parameters (every choice
// lists its quiet option first, so that rapid shrinks towards it):
//
//   - a lock cycle: the holder acquires, the waiter queues behind it (an attempt and a
//     tryLock: it must not get the lock), a fault may strike while the lock is held
//     (after which the waiter queues again), the holder releases outside the window for
//     polling clients (the release hands the lock to the waiter where it is queued:
//     logged, or unlogged when a note proves the holder's key), a fault may strike, and
//     the waiter takes two turns.
//   - the waiter's turn: it may first be paused past its TTL (its grants expire) while
//     another client acquires and releases and a fault strikes; the hand-off notices it
//     received are delivered, duplicated, dropped or left late; then it attempts and,
//     when it has grants, runs its fence round, during which masters may restart (a
//     crash, or a clean SHUTDOWN without a rewrite, restarted at once): the round fails,
//     the error is retryable and the waiter keeps its grants, as Acquire does. A waiter
//     that holds the lock releases it first, and a new waiter queues.
//   - another client acquires and releases.
//   - a fault: an AOF rewrite (auto-rewrite runs at any moment; a rewrite persists every
//     key, the queue's notes included), masters restarting at once (crash or clean), or a
//     crash with the restart hold (down past every TTL).
//
// Whole turns keep the sequences that matter short enough for a bounded run to draw: the
// stale-note hole (a hand-off, a rewrite, the waiter paused while another client holds,
// its fence round failed by a restart of a majority, its next attempt) is one lock
// cycle with five of its choices made; as single steps it would be eight or more moves,
// which a run of a few minutes on real masters would not draw in order.
var protocolMoves = []string{"lock cycle", "lock cycle", "waiter's turn", "fault", "other client"}

// protocolFaults are the faults a fault slot draws from ("none" first: rapid shrinks
// towards it; a rewrite twice as likely as the others).
var protocolFaults = []string{"none", "rewrite", "rewrite", "rewrite", "crash", "clean", "crash with hold"}

// move draws a move and runs it.
func (pm *protocolMachine) move(t *rapid.T) {
	switch m := rapid.SampledFrom(protocolMoves).Draw(t, "move"); m {
	case "lock cycle":
		pm.lockCycle(t)
	case "waiter's turn":
		pm.waiterTurn(t)
	case "fault":
		pm.fault(t, rapid.SampledFrom(protocolFaults[1:]).Draw(t, "fault"))
	case "other client":
		pm.otherClient(t)
	default:
		t.Fatalf("unknown move %q", m)
	}
}

// lockCycle is a lock cycle (see protocolMoves).
func (pm *protocolMachine) lockCycle(t *rapid.T) {
	pm.waiterLetGo(t)
	l, err := pm.holder.TryAcquire(pm.ctx(), pm.key, protocolTTL)
	stepErr(t, "holder acquire", err)
	if l != nil {
		pm.held = l
		pm.acquired(t, "holder", l)
	}
	pm.queue(t)
	if fault := rapid.SampledFrom(protocolFaults).Draw(t, "fault while held"); fault != "none" {
		pm.fault(t, fault)
		pm.queue(t)
	}
	if l != nil {
		outsideWindow(t, pm.cl.Masters[0])
		stepErr(t, "holder release", l.Release(pm.ctx()))
		pm.held = nil
	}
	pm.fault(t, rapid.SampledFrom(protocolFaults).Draw(t, "fault after the release"))
	pm.waiterTurn(t)
	pm.waiterTurn(t)
}

// fault runs one fault on the masters it draws ("none": nothing).
func (pm *protocolMachine) fault(t *rapid.T, kind string) {
	switch kind {
	case "none":
	case "rewrite":
		for _, m := range pm.masters(t) {
			rewriteAOF(t, m)
		}
	case "crash", "clean":
		ms := pm.masters(t)
		stopMasters(t, ms, kind)
		startMasters(t, ms)
	case "crash with hold":
		m := pm.cl.Masters[rapid.IntRange(0, len(pm.cl.Masters)-1).Draw(t, "master")]
		stopMasters(t, []*redistest.Master{m}, "crash")
		time.Sleep(pastTTL)
		startMasters(t, []*redistest.Master{m})
	default:
		t.Fatalf("unknown fault %q", kind)
	}
}

// pastTTL is a pause past every TTL and a hand-off's slack (a quarter of the TTL).
const pastTTL = protocolTTL * 3 / 2

// masters draws the masters a fault hits: all, a majority, or one.
func (pm *protocolMachine) masters(t *rapid.T) []*redistest.Master {
	switch rapid.SampledFrom([]string{"all", "all", "0 and 1", "0"}).Draw(t, "masters") {
	case "all":
		return pm.cl.Masters
	case "0 and 1":
		return pm.cl.Masters[:2]
	default:
		return pm.cl.Masters[:1]
	}
}

// stepErr fails on an error the protocol never returns for these moves.
func stepErr(t *rapid.T, what string, err error) {
	if err == nil || errors.Is(err, redlock.ErrTaken) || errors.Is(err, redlock.ErrUnavailable) ||
		errors.Is(err, redlock.ErrLost) || errors.Is(err, redlock.ErrExpired) || errors.Is(err, redlock.ErrReleased) {
		return
	}
	t.Fatalf("%s: %v", what, err)
}

// waiterLetGo: a waiter that holds the lock releases it, and a new waiter queues.
func (pm *protocolMachine) waiterLetGo(t *rapid.T) {
	if pm.wheld == nil {
		return
	}
	stepErr(t, "waiter release", pm.wheld.Release(pm.ctx()))
	pm.wheld = nil
	pm.waiter.Leave()
	pm.waiter = redlock.NewStepWaiter(pm.ctx(), pm.wc, pm.key, protocolTTL)
}

// waiterTurn is the waiter's turn (see protocolMoves).
func (pm *protocolMachine) waiterTurn(t *rapid.T) {
	pm.waiterLetGo(t)
	if rapid.SampledFrom([]string{"no", "past its TTL"}).Draw(t, "waiter paused") != "no" {
		time.Sleep(pastTTL)
		if rapid.SampledFrom([]string{"nothing", "acquires and releases", "acquires and releases", "acquires and releases"}).Draw(t, "meanwhile another client") != "nothing" {
			pm.otherClient(t)
		}
		pm.fault(t, rapid.SampledFrom(protocolFaults).Draw(t, "meanwhile a fault"))
	}
	for range 3 {
		if pm.waiterAttempt(t) {
			return
		}
	}
}

// waiterAttempt is one attempt of the waiter's turn and its tryLock; it reports whether
// the turn is over (false: the fence round failed, and Acquire would attempt again).
func (pm *protocolMachine) waiterAttempt(t *rapid.T) (over bool) {
	if n := pm.waiter.Receive(); n > 0 {
		fate := rapid.SampledFrom([]string{"delivered", "dropped", "duplicated", "late"}).Draw(t, "its hand-off notices")
		for i := n - 1; i >= 0 && fate != "late"; i-- {
			switch fate {
			case "delivered":
				pm.waiter.Deliver(i, false)
			case "duplicated":
				pm.waiter.Deliver(i, true)
				pm.waiter.Deliver(i, false)
			default:
				pm.waiter.Drop(i)
			}
		}
	}
	fault := rapid.SampledFrom([]string{"none", "crash", "clean"}).Draw(t, "masters restarting in its fence round")
	var down []*redistest.Master
	if fault != "none" {
		down = pm.masters(t)
	}
	stepErr(t, "waiter attempt", pm.waiter.Attempt(pm.ctx()))
	stopMasters(t, down, fault)
	l, err := pm.waiter.TryLock(pm.ctx())
	startMasters(t, down)
	stepErr(t, "waiter tryLock", err)
	if l != nil {
		pm.wheld = l
		pm.acquired(t, "waiter", l)
	}
	return err == nil
}

// queue is the waiter's attempt while the lock is held (it queues) and its tryLock, as
// Acquire runs them: it must not get the lock while the holder's validity runs.
func (pm *protocolMachine) queue(t *rapid.T) {
	if pm.wheld != nil {
		return
	}
	stepErr(t, "waiter attempt", pm.waiter.Attempt(pm.ctx()))
	l, err := pm.waiter.TryLock(pm.ctx())
	stepErr(t, "waiter tryLock", err)
	if l != nil {
		pm.wheld = l
		pm.acquired(t, "waiter", l)
	}
}

// otherClient: another client acquires and releases (its release hands the lock to the
// waiter where it is queued).
func (pm *protocolMachine) otherClient(t *rapid.T) {
	l, err := pm.holder.TryAcquire(pm.ctx(), pm.key, protocolTTL)
	stepErr(t, "other client's acquire", err)
	if l == nil {
		return
	}
	pm.held = l
	pm.acquired(t, "another client", l)
	stepErr(t, "other client's release", l.Release(pm.ctx()))
	pm.held = nil
}

// stopMasters stops ms together: a crash (SIGKILL: no shutdown) or a clean SHUTDOWN (the
// AOF fsynced, not rewritten). kind "none" stops nothing.
func stopMasters(t *rapid.T, ms []*redistest.Master, kind string) {
	if kind == "none" {
		return
	}
	eachMaster(t, ms, func(m *redistest.Master) error {
		if kind == "crash" {
			return m.Kill()
		}
		return m.Shutdown()
	})
}

// startMasters starts ms again together, at once (no restart hold).
func startMasters(t *rapid.T, ms []*redistest.Master) {
	eachMaster(t, ms, (*redistest.Master).Restart)
}

// eachMaster runs f on every master of ms concurrently and fails on the first error once
// all are done.
func eachMaster(t *rapid.T, ms []*redistest.Master, f func(*redistest.Master) error) {
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(m)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}
