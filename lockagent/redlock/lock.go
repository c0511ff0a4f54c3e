package redlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// hold is one acquisition on the masters; re-entrant handles share it.
type hold struct {
	c      *Client
	key    string
	token  string
	ttl    time.Duration
	fence  uint64
	owner  string // re-entrant owner, "" when not re-entrant
	waiter string // id of the wait-queue entries the acquisition may have left behind
	ticket string // their ticket (place in line)
	votes  int
	ctx    context.Context
	cancel context.CancelCauseFunc

	extendMu sync.Mutex // one extension at a time

	mu         sync.Mutex
	deadline   time.Time // validity end (monotonic)
	extensions int
	holds      int  // live handles
	done       bool // released or lost: no further extension
	timer      *time.Timer
	expiryWhy  error // cause given to the context when the validity runs out
	renewing   bool
}

// Lock is a handle on an acquired lock. Its methods are safe for concurrent use.
type Lock struct {
	h        *hold
	ctx      context.Context
	cancel   context.CancelCauseFunc
	released atomic.Bool
}

// newHold records an acquisition and returns its first handle. The hold is complete
// (one live handle, votes set, timer assigned) before a re-entrant caller can find it in
// c.reentrant: a same-owner re-entry and release in between must not drop it to zero
// holds under the first caller.
func (c *Client) newHold(key, token string, ttl time.Duration, fence uint64, votes int, deadline time.Time, cfg lockConfig) *Lock {
	h := &hold{c: c, key: key, token: token, ttl: ttl, fence: fence, owner: cfg.owner, votes: votes,
		deadline: deadline, expiryWhy: ErrExpired, holds: 1}
	h.ctx, h.cancel = context.WithCancelCause(context.Background())
	l := h.newHandle()
	// onTimer takes h.mu: with almost no validity left the timer may fire at once, and
	// must find h.timer assigned.
	h.mu.Lock()
	h.timer = time.AfterFunc(time.Until(deadline), h.onTimer)
	h.mu.Unlock()
	if cfg.owner != "" {
		c.reentrantMu.Lock()
		c.reentrant[key] = h
		c.reentrantMu.Unlock()
	}
	if cfg.autoRenew {
		h.startRenew()
	}
	return l
}

// newHandle returns a new handle on h; the caller has counted it in h.holds.
func (h *hold) newHandle() *Lock {
	l := &Lock{h: h}
	l.ctx, l.cancel = context.WithCancelCause(h.ctx)
	return l
}

// onTimer cancels the context when the validity ran out; an extension that won the race
// moved the deadline, then the timer is re-armed.
func (h *hold) onTimer() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if d := time.Until(h.deadline); d > 0 {
		h.timer.Reset(d)
		return
	}
	h.finishLocked(h.expiryWhy)
}

// finishLocked ends the hold: no more extensions, the context is cancelled with cause.
func (h *hold) finishLocked(cause error) {
	if h.done {
		return
	}
	h.done = true
	h.timer.Stop()
	h.cancel(cause)
	if h.owner != "" {
		h.c.reentrantMu.Lock()
		if h.c.reentrant[h.key] == h {
			delete(h.c.reentrant, h.key)
		}
		h.c.reentrantMu.Unlock()
	}
}

func (h *hold) finish(cause error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.finishLocked(cause)
}

// Key returns the Redis key of the lock (Options.KeyPrefix + name).
func (l *Lock) Key() string { return l.h.key }

// Token returns the random value stored under the key on the masters.
func (l *Lock) Token() string { return l.h.token }

// Fence returns the fencing token of this acquisition: larger than the fence of every
// earlier holder of the key (see the package doc for the exact guarantee). Re-entrant
// handles share their acquisition's fence. 0 when Options.NoFencing is set.
func (l *Lock) Fence() uint64 { return l.h.fence }

// Deadline returns the end of the lock's validity on the local monotonic clock: the
// holder may rely on the lock until then, not for the whole TTL. Extensions move it.
func (l *Lock) Deadline() time.Time {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	return l.h.deadline
}

// Context returns a context that is cancelled when the validity runs out, when the lock
// is lost or released, or when auto-renewal fails. context.Cause tells which (ErrExpired,
// ErrLost, ErrReleased, possibly wrapping the renewal error). Run the protected work
// under it.
func (l *Lock) Context() context.Context { return l.ctx }

// Extend resets the lock's TTL to ttl on every master (and sets it again on a master that
// lost it). It succeeds only when a majority confirmed before the current validity ran
// out; the new deadline is start + ttl - drift, which may be earlier than the current
// one (a shorter ttl shortens the lock). Errors: ErrInvalid (ttl leaves no validity once
// the drift is subtracted: nothing is sent), ErrExpired (validity already over, or the
// majority answered after the new validity ran out), ErrLost (another holder has the key
// on enough masters; the context is then cancelled), ErrExtensionLimit,
// *UnavailableError, ErrReleased, ctx's error (nothing is sent when ctx has already
// ended).
//
// A failed Extend may still have changed the TTL on the masters that received it (and
// on those that timed out: their reply may be lost after the PEXPIRE ran), so on every
// failure after the request was sent the deadline becomes min(current deadline, start +
// ttl - drift): a failed extension never lengthens the validity, but a shorter ttl may
// shorten it, and when that bound has already passed the context is cancelled with
// ErrExpired at once.
func (l *Lock) Extend(ctx context.Context, ttl time.Duration) error {
	if l.released.Load() {
		return ErrReleased
	}
	start := time.Now()
	err := l.h.extend(ctx, ttl)
	l.h.c.opts.Hooks.Operation(OperationEvent{Op: OpExtend, Key: l.h.key, Attempts: 1, Elapsed: time.Since(start),
		Validity: time.Until(l.Deadline()), Fence: l.h.fence, Err: err})
	return err
}

func (h *hold) extend(ctx context.Context, ttl time.Duration) error {
	c := h.c
	if err := c.checkTTL(ttl); err != nil {
		return err
	}
	ttl = ttl.Truncate(time.Millisecond)
	if drift := c.opts.drift(ttl); ttl <= drift {
		// The deadline would be at or before the start: the extension could never succeed,
		// and sending it would cut the TTL on the masters to almost nothing.
		return fmt.Errorf("%w: extend %q: ttl %v leaves no validity after the clock drift allowance %v (ttl*DriftFactor + 2ms): use a longer ttl, or Release the lock", ErrInvalid, h.key, ttl, drift)
	}
	if err := ctx.Err(); err != nil {
		return err // nothing sent
	}
	h.extendMu.Lock()
	defer h.extendMu.Unlock()

	h.mu.Lock()
	oldDeadline, extensions, done := h.deadline, h.extensions, h.done
	h.mu.Unlock()
	t1 := time.Now()
	switch {
	case done && context.Cause(h.ctx) != nil && !errors.Is(context.Cause(h.ctx), ErrExpired):
		return context.Cause(h.ctx)
	case !t1.Before(oldDeadline):
		return fmt.Errorf("%w: extend %q: the validity ended %v ago", ErrExpired, h.key, t1.Sub(oldDeadline).Round(time.Millisecond))
	case extensions >= c.opts.MaxExtensions:
		return fmt.Errorf("%w: extend %q: already extended %d times (Options.MaxExtensions)", ErrExtensionLimit, h.key, extensions)
	}
	nodeTimeout := c.opts.nodeTimeout(ttl)
	waitUntil := t1.Add(nodeTimeout)
	if oldDeadline.Before(waitUntil) {
		waitUntil = oldDeadline
	}
	if c.beforeExtendSend != nil {
		c.beforeExtendSend()
	}
	rd := c.broadcast(OpExtend, h.key, waitUntil, scriptCall(extendScript, []string{h.key}, h.token, ttl.Milliseconds()))
	parse := func(req *request) (bool, error) {
		if req.err != nil {
			return false, req.err
		}
		v, err := req.cmds[0].Int64()
		return v > 0, err
	}
	v, ctxErr := c.gatherVotes(ctx, rd, OpExtend, h.key, waitUntil, parse)
	end := time.Now()
	newDeadline := t1.Add(ttl - c.opts.drift(ttl))
	var err error
	switch {
	case ctxErr != nil:
		err = ctxErr
	case c.majorityRefused(v):
		err = fmt.Errorf("%w: extend %q: %d masters hold another token", ErrLost, h.key, v.refused)
		h.finish(err)
	case v.confirmed < c.quorum:
		err = c.unavailable(OpExtend, h.key, v.confirmed, v.refused, v.errs, rd)
	case !end.Before(newDeadline):
		err = fmt.Errorf("%w: extend %q: the majority answered after the new validity ran out", ErrExpired, h.key)
	}
	c.straggle(rd, func(req *request) {
		ok, err := parse(req)
		c.masterEvent(OpExtend, h.key, req, ok, err)
	})
	return h.settleExtend(err, end, newDeadline)
}

// settleExtend applies the outcome of an extension round that ended at end: on success
// the deadline moves to newDeadline; on failure it never moves later than that.
func (h *hold) settleExtend(err error, end, newDeadline time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil && (h.done || !end.Before(h.deadline)) {
		// The validity ran out (or the lock was released) while we waited: the keys we
		// just extended are not a lock anyone may rely on.
		err = fmt.Errorf("%w: extend %q: the validity ran out before a majority confirmed", ErrExpired, h.key)
	}
	if err != nil {
		// The request went out: masters that ran it (including those whose reply was lost
		// or late) now expire the key at newDeadline at the latest, however the round
		// ended. Never rely on the lock past that.
		h.shortenLocked(newDeadline)
		return err
	}
	h.deadline = newDeadline
	h.extensions++
	h.timer.Reset(time.Until(newDeadline))
	return nil
}

// shortenLocked moves the deadline to d when d is earlier, re-arming the timer, and ends
// the hold (ErrExpired) when d has already passed.
func (h *hold) shortenLocked(d time.Time) {
	if h.done || !d.Before(h.deadline) {
		return
	}
	h.deadline = d
	if wait := time.Until(d); wait > 0 {
		h.timer.Reset(wait)
		return
	}
	h.finishLocked(h.expiryWhy)
}

// reenter returns a new handle on the hold owner already has on key, if any.
//
// The re-entry extends the lock (one round, counted in MaxExtensions) only when ttl would
// move the deadline later by more than a tenth of ttl: a nested acquisition with the
// same TTL shortly after the outer one costs no round and no extension. When the
// extension limit is reached the re-entry still succeeds, on the current deadline (the
// outer holder bounds the nested work; Deadline tells how long is left). WithAutoRenew
// on a re-entry starts auto-renewal of the shared hold.
func (c *Client) reenter(ctx context.Context, key string, ttl time.Duration, cfg lockConfig) (*Lock, bool, error) {
	c.reentrantMu.Lock()
	h := c.reentrant[key]
	c.reentrantMu.Unlock()
	if h == nil || h.owner != cfg.owner {
		return nil, false, nil
	}
	h.mu.Lock()
	if h.done || !time.Now().Before(h.deadline) {
		h.mu.Unlock()
		return nil, false, nil
	}
	h.holds++ // keep it from being released while we extend
	deadline, atLimit := h.deadline, h.extensions >= c.opts.MaxExtensions
	h.mu.Unlock()
	l := h.newHandle()
	want := time.Now().Add(ttl - c.opts.drift(ttl))
	if !atLimit && want.After(deadline.Add(ttl/reentryMargin)) {
		if err := h.extend(ctx, ttl); err != nil && !errors.Is(err, ErrExtensionLimit) {
			l.released.Store(true)
			l.cancel(ErrReleased)
			_ = h.release(context.Background()) // drop our hold; the outer holder keeps the lock
			return nil, true, err
		}
	}
	if cfg.autoRenew {
		h.startRenew()
	}
	return l, true, nil
}

// reentryMargin: a re-entry extends when it would move the deadline by more than
// ttl/reentryMargin.
const reentryMargin = 10
