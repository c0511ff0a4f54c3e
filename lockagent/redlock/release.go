package redlock

// Releases: Lock.Release, the cleanup after a failed or cancelled acquisition, and the
// release round they share (the release script, lua/release.lua).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Release gives the lock up: the compare-and-delete script runs on every master. With
// re-entrant holds, only the last handle's Release touches the masters. It returns nil
// when a majority confirmed; ErrExpired when the validity had run out before the release,
// or before a majority answered it (the work may have overlapped another holder; a release
// kept on its way past Deadline, by a busy machine or a paused master, may just find the
// keys expired); ErrLost when a majority refused within the validity (their answers came
// back before Deadline: the key was no longer ours there, held by another token or by
// none); *UnavailableError when too few answered; ErrReleased on a second call.
// Releasing is not cut short by ctx beyond the wait: the deletes are sent regardless.
func (l *Lock) Release(ctx context.Context) error {
	if !l.released.CompareAndSwap(false, true) {
		return ErrReleased
	}
	start := time.Now()
	l.cancel(ErrReleased)
	err := l.h.release(ctx)
	l.h.c.opts.Hooks.Operation(OperationEvent{Op: OpRelease, Key: l.h.key, Attempts: 1, Elapsed: time.Since(start),
		Fence: l.h.fence, Err: err})
	return err
}

func (h *hold) release(ctx context.Context) error {
	c := h.c
	h.mu.Lock()
	if h.holds > 1 {
		h.holds--
		h.mu.Unlock()
		return nil
	}
	h.mu.Unlock()
	// The last handle: no extension may be in flight when the release goes out, or its
	// script (which sets the key again where it is missing) could reach a master after
	// the delete and block everyone for a TTL. Taking extendMu waits for a running
	// extension; once done is set, none starts.
	h.extendMu.Lock()
	h.mu.Lock()
	h.holds--
	if h.holds > 0 { // a re-entry came in meanwhile
		h.mu.Unlock()
		h.extendMu.Unlock()
		return nil
	}
	deadline := h.deadline
	lostCause := error(nil)
	if h.done {
		lostCause = context.Cause(h.ctx)
	}
	h.finishLocked(ErrReleased)
	h.mu.Unlock()
	h.extendMu.Unlock()

	start := time.Now()
	// A waiter of this Client may take the lock at once: its SET queues behind the release
	// on every master. After a few such hand-offs in a row the next one waits for the
	// release to complete and competes with other processes' waiters (see notifier).
	handOff := c.notify.handOff(h.key, h.token)
	rd := c.releaseRound(OpRelease, h.key, h.token, h.fence, h.waiter, h.ticket, handOff, start.Add(c.opts.CleanupTimeout))
	if handOff {
		c.notify.wakeLocal(h.key)
	} else {
		defer c.notify.wakeAfterRelease(h.key)
	}
	// Wait for the majority up to the cleanup bound rather than the node timeout: the
	// answer only reports what happened (the key expires anyway), and a slow but healthy
	// master should not turn a good release into an error. A stopped minority costs
	// nothing: the call returns at the majority.
	t, ctxErr := c.gatherTimed(ctx, rd, OpRelease, h.key, deadline, start.Add(c.opts.CleanupTimeout), parseRelease)
	var err error
	switch {
	case lostCause != nil && errors.Is(lostCause, ErrLost):
		err = lostCause
	case !start.Before(deadline):
		err = fmt.Errorf("%w: release %q: the validity had ended %v before the release", ErrExpired, h.key, start.Sub(deadline).Round(time.Millisecond))
	case ctxErr != nil:
		err = ctxErr
	default:
		err = c.releaseOutcome(h.key, t, start, deadline, rd)
	}
	c.straggleVotes(rd, OpRelease, h.key, parseRelease)
	return err
}

// timedTally is a round's votes, and when its refusals came back.
type timedTally struct {
	votes
	refusedInTime int       // refusals whose answer came back before the lock's deadline
	lastRefusal   time.Time // when the last refusal taken came back
}

// gatherTimed collects a round's answers as gatherVotes does (until its own deadline),
// noting when each refusal came back against the lock's deadline. A refusal (a release or
// fence script finding another token, or none) means the key was not ours when the script
// ran there. Only a refusal whose answer came back before the lock's deadline proves the
// key gone within the validity (the script ran before its answer came back). A script sent
// before the deadline can run on the masters well after it (this process, or the masters,
// kept off the CPU), when the keys have just expired (and a release script hands each free
// key to the next waiter), and an answer that came in time can still be taken after it
// (gather takes the replies already in when its timer fires): such a refusal says nothing
// about the validity.
func (c *Client) gatherTimed(ctx context.Context, rd *round, op Op, key string, deadline, until time.Time, parse func(*request) (bool, error)) (timedTally, error) {
	var t timedTally
	var err error
	t.votes, err = c.gatherVotes(ctx, rd, op, key, until, func(req *request) (bool, error) {
		ok, err := parse(req)
		if err == nil && !ok {
			at := req.completedAt()
			if at.Before(deadline) {
				t.refusedInTime++
			}
			if at.After(t.lastRefusal) {
				t.lastRefusal = at
			}
		}
		return ok, err
	})
	return t, err
}

// releaseOutcome is the error of a release round sent at start, before deadline, that
// ended without ctx's error: nil when a majority confirmed; ErrLost when a majority
// refused within the validity; ErrExpired when a majority refused, but only once the
// validity was over (the keys may just have expired on the way); else *UnavailableError.
func (c *Client) releaseOutcome(key string, t timedTally, start, deadline time.Time, rd *round) error {
	switch {
	case t.confirmed >= c.quorum:
		return nil
	case c.majorityRefused(votes{refused: t.refusedInTime}):
		return fmt.Errorf("%w: release %q: %d masters no longer held its token (another token or none) within the validity", ErrLost, key, t.refusedInTime)
	case c.majorityRefused(t.votes):
		return fmt.Errorf("%w: release %q: sent %v before the deadline, but a majority answered only %v after it: %d masters no longer held its token (expired, or another token)",
			ErrExpired, key, deadline.Sub(start).Round(time.Millisecond), t.lastRefusal.Sub(deadline).Round(time.Millisecond), t.refused)
	}
	return c.unavailable(OpRelease, key, t.confirmed, t.refused, t.errs, rd)
}

// cleanup releases token on every master after a failed or cancelled acquisition,
// including masters that timed out: their reply may be lost after the key was set. The
// release is not cut short by the caller's context; it is bounded by
// Options.CleanupTimeout. The caller waits up to wait for it (one node timeout, so
// that its next attempt does not race its own leftovers); the rest completes in the
// background.
func (c *Client) cleanup(key, token string, acquire *round, wait time.Duration) {
	if acquire != nil {
		acquire.abandonUnseen()
		c.straggle(acquire, c.reportAcquireReply(key, !c.opts.NoFencing))
	}
	rd := c.releaseRound(OpCleanup, key, token, 0, "", "", false, time.Now().Add(c.opts.CleanupTimeout))
	report := func(req *request) {
		ok, err := parseRelease(req)
		c.masterEvent(OpCleanup, key, req, ok, err)
	}
	if wait > 0 {
		deadline := time.Now().Add(wait)
		_ = rd.gather(context.Background(), &c.timers, deadline, func(req *request) bool { report(req); return false })
	}
	c.straggle(rd, report)
}

// releaseRound broadcasts the release script; fence is the holder's (0: none, or not a
// lock yet), which a hand-off raises the register above; waiter is the id of the
// wait-queue entries the acquisition may have left on masters it did not need (they go,
// so that no later release hands the key to a finished acquisition); handedOff says that
// a waiter of this Client takes the lock next (the notification tells other processes so).
func (c *Client) releaseRound(op Op, key, token string, fence uint64, waiter, ticket string, handedOff bool, sendBy time.Time) *round {
	channel, msg := "", token
	if !c.opts.NoNotifications {
		channel = key + ReleaseChannelSuffix
	}
	if handedOff {
		msg = token + handedOffMark
	}
	mode := ""
	if waiter != "" {
		mode = "drop" // the entries the acquisition left on masters it did not need
	}
	return c.broadcast(op, key, sendBy, c.releaseCall(key, token, channel, msg, fence, waiter, ticket, mode))
}

// releaseCall is the release script with its arguments (see lua/release.lua).
func (c *Client) releaseCall(key, token, channel, msg string, fence uint64, waiter, ticket, mode string) call {
	s := releaseScript
	if c.opts.DurableRelease {
		s = durableReleaseScript
	}
	return scriptCall(s, []string{key, key + FenceSuffix, key + QueueSuffix}, token, channel, msg, strconv.FormatUint(fence, 10), waiter, mode, ticket)
}
