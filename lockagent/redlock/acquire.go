package redlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// Acquire acquires the lock name for ttl, waiting while another client holds it. Between
// attempts it sleeps until the holder releases (release notification), the key expires on
// enough masters (from PTTL), or a random delay in [RetryDelayMin, RetryDelayMax] passes,
// whichever comes first; notifications only shorten the wait. It gives up when ctx ends
// (the error then matches ctx's error and the last attempt's error) or after
// Options.MaxRetries retries (the last attempt's error).
func (c *Client) Acquire(ctx context.Context, name string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	start := time.Now()
	cfg := lockConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	l, attempts, err := c.acquire(ctx, name, ttl, cfg)
	c.reportAcquire(name, start, attempts, l, err)
	return l, err
}

func (c *Client) acquire(ctx context.Context, name string, ttl time.Duration, cfg lockConfig) (*Lock, int, error) {
	key, err := c.keyFor(name, ttl)
	if err != nil {
		return nil, 0, err
	}
	notify := !c.opts.NoNotifications
	var (
		w         *waiter
		confirmed <-chan struct{}
		lastErr   error
		freeIn    time.Duration
		attempt   int
		// collisions counts failed attempts right after a release notification from
		// another process: waiters elsewhere woke too. The jitter window doubles with
		// each, so a crowd of waiters spreads out in a few rounds.
		collisions int
		remoteWake bool
	)
	defer func() {
		if w != nil {
			c.notify.leave(w)
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	giveUp := func(cause error) (*Lock, int, error) {
		if lastErr == nil {
			return nil, attempt, cause
		}
		return nil, attempt, fmt.Errorf("redlock: acquire %q: %w (last attempt: %w)", key, cause, lastErr)
	}
	if cfg.owner != "" {
		// A re-entrant holder must never queue behind waiters for its own lock.
		if l, ok, err := c.reenter(ctx, key, ttl, cfg); ok || err != nil {
			return l, 1, err
		}
	}
	if c.queueing() && c.notify.hot(key) {
		// Contended lately: an attempt in the wait queue takes the key when it is free and
		// queues otherwise, without a first attempt to clean up after.
		return c.acquireQueued(ctx, key, ttl, cfg, 0, nil)
	}
	// Queue behind this Client's waiters for the key rather than overtake them (with the
	// wait queue, the masters' queue orders them).
	waitFirst := notify && !c.queueing() && c.notify.queued(key)
	if waitFirst {
		w, confirmed = c.notify.join(key)
	}
	for {
		if !waitFirst {
			attempt++
			l, fi, err := c.tryAcquire(ctx, name, ttl, cfg)
			if err == nil {
				return l, attempt, nil
			}
			if !retryable(err) {
				return nil, attempt, err
			}
			lastErr, freeIn = err, fi
			if remoteWake {
				collisions = min(collisions+1, 6)
			}
			remoteWake = false
			if c.opts.MaxRetries > 0 && attempt > c.opts.MaxRetries {
				return nil, attempt, err
			}
			if cfg.onRetry != nil {
				cfg.onRetry(attempt, err)
			}
			if c.queueing() && errors.Is(err, ErrTaken) {
				// Wait in the masters' queue: the lock is handed to us when our turn comes.
				if w != nil {
					c.notify.leave(w)
					w = nil
				}
				return c.acquireQueued(ctx, key, ttl, cfg, attempt, err)
			}
			if notify && w == nil && errors.Is(err, ErrTaken) {
				// Subscribe, then try again at once: the holder may have released between
				// the refusal and the subscription, and that notification is lost.
				w, confirmed = c.notify.join(key)
				c.awaitConfirm(ctx, confirmed, c.opts.nodeTimeout(ttl))
				continue
			}
		}
		waitFirst = false

		wait := c.retryDelay()
		var wake <-chan bool
		if w != nil {
			select {
			case <-confirmed:
				// Notifications work: the timer only guards against lost ones and
				// holders that publish nothing, so it need not fire often.
				wait = c.opts.RetryDelayMax/2 + rand.N(c.opts.RetryDelayMax/2+1)
			default:
			}
			wake = w.wake
			c.notify.idle(w)
		}
		if freeIn > 0 && freeIn < wait {
			wait = freeIn + time.Millisecond // PTTL is rounded down
		}
		freeIn = 0
		timer.Reset(wait)
		select {
		case local := <-wake:
			// Released. By this Client: this waiter is the only one woken, go now. By
			// another process: go after a jitter small enough to keep the hand-off fast
			// and large enough that waiters in other processes do not all arrive at once.
			if local {
				break
			}
			remoteWake = true
			if j := rand.N(min(notifyJitter<<collisions, c.opts.RetryDelayMax) + 1); j > 0 {
				timer.Reset(j)
				select {
				case <-timer.C:
				case <-ctx.Done():
					return giveUp(ctx.Err())
				}
			}
		case <-timer.C:
			if w != nil {
				c.notify.attempting(w)
			}
		case <-ctx.Done():
			return giveUp(ctx.Err())
		case <-c.closing:
			return giveUp(ErrClosed)
		}
	}
}

// awaitConfirm waits a little for a subscription to be confirmed, so that the attempt
// that follows cannot miss the release it is waiting for.
func (c *Client) awaitConfirm(ctx context.Context, confirmed <-chan struct{}, bound time.Duration) {
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-confirmed:
	case <-t.C:
	case <-ctx.Done():
	}
}

// notifyJitter is the jitter window after a release notification from another process,
// doubled after each collision with other waiters.
const notifyJitter = time.Millisecond

// retryable reports whether another attempt may succeed. A denial (wrong password,
// missing ACL permission) never heals by itself: it is returned at once.
func retryable(err error) bool {
	if errors.Is(err, ErrDenied) {
		return false
	}
	return errors.Is(err, ErrTaken) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrExpired) || errors.Is(err, ErrLost)
}

// retryDelay is a random delay in [RetryDelayMin, RetryDelayMax]: competing clients fall
// out of step.
func (c *Client) retryDelay() time.Duration {
	lo, hi := c.opts.RetryDelayMin, c.opts.RetryDelayMax
	if hi <= lo {
		return lo
	}
	return lo + rand.N(hi-lo+1)
}

// TryAcquire makes one attempt to acquire the lock name for ttl. It returns *TakenError
// when another client holds it, *UnavailableError when too few masters answered, an
// error matching ErrExpired when the majority came too late to leave any validity, and
// ctx's error when ctx ended first (the keys it may have set are released in the
// background).
func (c *Client) TryAcquire(ctx context.Context, name string, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	start := time.Now()
	cfg := lockConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	l, _, err := c.tryAcquire(ctx, name, ttl, cfg)
	c.reportAcquire(name, start, 1, l, err)
	return l, err
}

func (c *Client) reportAcquire(name string, start time.Time, attempts int, l *Lock, err error) {
	e := OperationEvent{Op: OpAcquire, Key: c.opts.KeyPrefix + name, Attempts: attempts, Elapsed: time.Since(start), Err: err}
	if l != nil {
		e.Validity = time.Until(l.Deadline())
		e.Fence = l.Fence()
		e.Votes = l.h.votes
	}
	c.opts.Hooks.Operation(e)
}

// tryAcquire is one attempt; freeIn estimates when the key will be free on a majority
// (from PTTL) when the attempt was refused.
func (c *Client) tryAcquire(ctx context.Context, name string, ttl time.Duration, cfg lockConfig) (*Lock, time.Duration, error) {
	key, err := c.keyFor(name, ttl)
	if err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if cfg.owner != "" {
		if l, ok, err := c.reenter(ctx, key, ttl, cfg); ok || err != nil {
			return l, 0, err
		}
	}
	ttl = ttl.Truncate(time.Millisecond) // PX is in milliseconds: never claim more than the key gets
	token := newToken()
	n := len(c.masters)
	nodeTimeout := c.opts.nodeTimeout(ttl)
	fencing := !c.opts.NoFencing
	fenceKey := key + FenceSuffix
	var (
		proposed uint64 // the optimistic fence: one more than the largest this Client has seen
		calls    []call
	)
	if fencing {
		proposed = c.fences.get(key) + 1
		calls = []call{scriptCall(acquireScript, []string{key, fenceKey}, token, ttl.Milliseconds(), strconv.FormatUint(proposed, 10))}
	} else {
		calls = []call{{args: []any{"set", key, token, "nx", "px", ttl.Milliseconds()}}, {args: []any{"pttl", key}}}
	}
	t1 := time.Now()
	lockDeadline := t1.Add(ttl - c.opts.drift(ttl))
	rd := c.broadcast(OpAcquire, key, t1.Add(nodeTimeout), calls...)

	var (
		granted, refused []int
		errs             []MasterError
		fenceReads       int    // grants whose register could be read
		fenceMax         uint64 // largest register read where the SET succeeded
		seenMax          uint64 // largest register read anywhere (a hint for the cache)
		raised           int    // grants whose register was below the proposal: it now holds it
		pttls            []time.Duration
		grace            bool // a majority granted; waiting briefly for the proposal's majority
	)
	decided := func() bool {
		switch {
		case len(refused) > n-c.quorum:
			return true
		case !fencing:
			return len(granted) >= c.quorum
		case raised >= c.quorum:
			return true
		case fenceReads < c.quorum:
			return false
		default:
			// A majority granted, but the proposal is not yet on a majority: stop, unless
			// in the grace period and the masters still to answer could make it.
			return !grace || raised+rd.pending < c.quorum
		}
	}
	onReply := func(req *request) bool {
		i := req.master.index
		rep := parseAcquire(req, fencing)
		c.masterEvent(OpAcquire, key, req, rep.ok, rep.err)
		switch {
		case rep.err != nil:
			errs = append(errs, masterError(req, rep.err))
		case rep.ok:
			granted = append(granted, i)
			if !fencing {
				break
			}
			if rep.registerErr != nil {
				// The SET succeeded but this master's vote is unusable: it counts as an
				// error, not a confirmation.
				errs = append(errs, MasterError{Master: i, Addr: req.master.addr, Err: fmt.Errorf("reading the fencing register %s: %w", fenceKey, rep.registerErr)})
				break
			}
			fenceReads++
			fenceMax = max(fenceMax, rep.register)
			seenMax = max(seenMax, rep.register)
			if rep.register < proposed {
				raised++
			}
		default:
			refused = append(refused, i)
			pttls = append(pttls, rep.pttl)
			seenMax = max(seenMax, rep.register)
		}
		return decided()
	}
	ctxErr := rd.gather(ctx, &c.timers, t1.Add(nodeTimeout), onReply)
	if ctxErr == nil && fencing && raised < c.quorum && fenceReads >= c.quorum && raised+rd.pending >= c.quorum {
		// The replies of one round arrive close together; the fallback would cost a whole
		// round trip. Wait for the remaining masters at most as long as the majority took:
		// never much more than the fallback round, usually much less.
		grace = true
		ctxErr = rd.gather(ctx, &c.timers, minTime(time.Now().Add(time.Since(t1)), t1.Add(nodeTimeout)), onReply)
	}
	if fencing {
		c.fences.see(key, seenMax)
	}
	if ctxErr != nil {
		c.cleanup(key, token, rd, 0)
		return nil, 0, ctxErr
	}
	if len(granted) < c.quorum || (fencing && fenceReads < c.quorum) {
		var err error
		var wait time.Duration
		if len(refused) > n-c.quorum {
			wait = freeIn(pttls, c.quorum-len(granted), nodeTimeout)
			err = &TakenError{Key: key, Refused: refused, Votes: len(granted), Quorum: c.quorum, FreeIn: wait}
		} else {
			votes := len(granted)
			if fencing {
				votes = fenceReads // a grant whose register could not be read is in errs
			}
			err = c.unavailable(OpAcquire, key, votes, len(refused), errs, rd) // before cleanup takes the stragglers
		}
		c.cleanup(key, token, rd, nodeTimeout)
		return nil, wait, err
	}
	// Replies that come after the majority are reported to the hooks only: the key is
	// ours on those masters too, and Release/Extend go to every master anyway.
	c.straggle(rd, c.reportAcquireReply(key, fencing))
	if !time.Now().Before(lockDeadline) {
		c.cleanup(key, token, nil, nodeTimeout)
		return nil, 0, fmt.Errorf("%w: acquire %q: the majority answered after the validity ran out (ttl %v)", ErrExpired, key, ttl)
	}

	var fence uint64
	if fencing {
		if raised >= c.quorum {
			// The proposal is stored on a majority of masters, each of which held less
			// when our SET succeeded there: it is larger than every earlier holder's fence.
			fence = proposed
		} else {
			// Some register was already at or above the proposal (another Client moved the
			// fence on, or this Client never saw it): propose above every register read
			// where our SET succeeded, confirmed by a second round.
			fence, err = c.fence(ctx, key, token, fenceMax+1, 0, nodeTimeout, lockDeadline)
			if err != nil {
				wait := nodeTimeout
				if ctx.Err() != nil {
					wait = 0 // cancelled: return at once, the release goes on in the background
				}
				c.cleanup(key, token, nil, wait)
				return nil, 0, err
			}
			if !time.Now().Before(lockDeadline) {
				c.cleanup(key, token, nil, nodeTimeout)
				return nil, 0, fmt.Errorf("%w: acquire %q: the fencing round ended after the validity ran out (ttl %v)", ErrExpired, key, ttl)
			}
		}
		c.fences.see(key, fence)
	}
	return c.newHold(key, token, ttl, fence, len(granted), lockDeadline, cfg), 0, nil
}

// fence runs the fallback fence round: write max(stored, proposed) on every master
// that still holds our token; the fence is ours when a majority confirmed.
func (c *Client) fence(ctx context.Context, key, token string, proposed, reserve uint64, nodeTimeout time.Duration, lockDeadline time.Time) (uint64, error) {
	deadline := time.Now().Add(nodeTimeout)
	if lockDeadline.Before(deadline) {
		deadline = lockDeadline
	}
	rd := c.broadcast(OpFence, key, deadline, scriptCall(fenceScript, []string{key, key + FenceSuffix}, token, strconv.FormatUint(proposed, 10),
		strconv.FormatUint(reserve, 10)))
	parse := func(req *request) (bool, error) {
		if req.err != nil {
			return false, req.err
		}
		v, err := req.cmds[0].Int64()
		if err != nil {
			return false, err
		}
		return v >= 0, nil
	}
	v, ctxErr := c.gatherVotes(ctx, rd, OpFence, key, deadline, parse)
	var err error
	switch {
	case ctxErr != nil:
		err = ctxErr
	case v.confirmed >= c.quorum:
	case c.majorityRefused(v):
		err = fmt.Errorf("%w: acquire %q: the key changed hands during the fencing round", ErrLost, key)
	default:
		err = c.unavailable(OpFence, key, v.confirmed, v.refused, v.errs, rd)
	}
	c.straggleVotes(rd, OpFence, key, parse)
	if err != nil {
		return 0, err
	}
	return proposed, nil
}

// reportAcquireReply returns the handler of acquisition replies that come after the
// caller stopped waiting: they go to the hooks, and their registers to the fence cache.
func (c *Client) reportAcquireReply(key string, fencing bool) func(*request) {
	return func(req *request) {
		rep := parseAcquire(req, fencing)
		c.masterEvent(OpAcquire, key, req, rep.ok, rep.err)
		if fencing && rep.err == nil && rep.registerErr == nil {
			c.fences.see(key, rep.register)
		}
	}
}

// freeIn estimates when the key is free on enough masters for a majority: the need-th
// smallest remaining TTL among the refusals. Keys without a TTL (-1: another client's
// mistake) never free up; unknown values count as "soon".
func freeIn(pttls []time.Duration, need int, fallback time.Duration) time.Duration {
	if need <= 0 || need > len(pttls) {
		return 0
	}
	ds := make([]time.Duration, 0, len(pttls))
	for _, p := range pttls {
		switch {
		case p == -time.Millisecond: // no TTL
		case p < 0:
			ds = append(ds, 0) // key gone since (-2)
		default:
			ds = append(ds, p)
		}
	}
	if need > len(ds) {
		return fallback
	}
	for i := 1; i < len(ds); i++ { // insertion sort: at most N values
		for j := i; j > 0 && ds[j] < ds[j-1]; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
	return ds[need-1]
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// acquireQueued waits for key in the masters' wait queues after a refused attempt (see
// "Waiting across processes" in doc.go). attempt counts the attempts made so far.
func (c *Client) acquireQueued(ctx context.Context, key string, ttl time.Duration, cfg lockConfig, attempt int, lastErr error) (*Lock, int, error) {
	ttl = ttl.Truncate(time.Millisecond)
	token := newToken()
	n := len(c.masters)
	qw := &queuedWait{c: c, key: key, ttl: ttl, token: token, tag: tokenTag(token),
		id:     c.id + "/" + strconv.FormatUint(c.seq.Add(1), 10),
		ticket: strconv.FormatInt(time.Now().UnixMicro(), 10),
		grants: make([]grantState, n), queued: make([]time.Time, n), sent: map[uint64]time.Time{}, lastErr: lastErr}
	nodeTimeout := c.opts.nodeTimeout(ttl)
	w, confirmed := c.notify.joinQueued(key, token)
	qw.w = w
	acquired := false
	defer func() {
		c.notify.leave(w)
		if !acquired {
			qw.leave()
		}
	}()
	// A release that hands us the lock before we hear of it is found by the next attempt.
	c.awaitConfirm(ctx, confirmed, nodeTimeout)
	first := time.Now()
	for i := range qw.queued {
		qw.queued[i] = first // no entry of ours can be older than the first queued attempt
	}
	giveUp := func(cause error) (*Lock, int, error) {
		if qw.lastErr == nil {
			return nil, attempt, cause
		}
		return nil, attempt, fmt.Errorf("redlock: acquire %q: %w (last attempt: %w)", key, cause, qw.lastErr)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var (
		split   <-chan time.Time // armed while we hold a minority of grants
		splitAt *time.Timer
	)
	defer func() {
		if splitAt != nil {
			splitAt.Stop()
		}
	}()
	attemptNow, splitCheck := true, false
	for {
		if attemptNow {
			attempt++
			qw.drain() // notices that came before the attempt are older than its replies
			holders, unknown, freeIn, err := qw.attempt(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return giveUp(ctx.Err())
				}
				if !retryable(err) {
					return nil, attempt, err
				}
				qw.lastErr = err
			}
			if l, err := qw.tryLock(ctx, cfg); l != nil || err != nil {
				if err != nil && !retryable(err) {
					return nil, attempt, err
				}
				if l != nil {
					acquired = true
					return l, attempt, nil
				}
				qw.lastErr = err
			}
			if splitCheck {
				if keeper, split := qw.isSplit(holders, unknown); split {
					qw.yield(keeper)
				}
			}
			splitCheck = false
			if c.opts.MaxRetries > 0 && attempt > c.opts.MaxRetries {
				return nil, attempt, qw.lastErr
			}
			if cfg.onRetry != nil && qw.lastErr != nil {
				cfg.onRetry(attempt, qw.lastErr)
			}
			// The entry's lease is renewed by the next attempt; the wait also bounds how
			// late a release by a client that publishes nothing is noticed.
			wait := c.queueRenewal()/2 + rand.N(c.queueRenewal()/2+1)
			if freeIn > 0 && freeIn < wait {
				wait = freeIn + time.Millisecond
			}
			timer.Reset(wait)
			attemptNow = false
		}
		if split == nil && qw.live(time.Now()) > 0 {
			// A minority of grants: the rest usually follow within the release round. If
			// they do not, the next attempt looks at who holds the others.
			splitAt = time.NewTimer(nodeTimeout + rand.N(nodeTimeout+1))
			split = splitAt.C
		}
		c.notify.idle(w) // release notifications may wake it now
		select {
		case g := <-w.grants:
			if g.turnIn > 0 {
				// A window for other clients: ours is the first turn after it.
				timer.Reset(g.turnIn)
				break
			}
			qw.granted(g)
			qw.drain()
			l, err := qw.tryLock(ctx, cfg)
			if l != nil {
				acquired = true
				return l, attempt, nil
			}
			if err != nil {
				if !retryable(err) {
					return nil, attempt, err
				}
				qw.lastErr = err
			}
		case <-w.wake:
			// Released without a hand-off (the queue was empty or unreadable there, or the
			// holder's client does not hand off): try now.
			attemptNow = true
		case <-timer.C:
			attemptNow = true
		case <-split:
			split, splitAt = nil, nil
			attemptNow, splitCheck = true, true
		case <-ctx.Done():
			return giveUp(ctx.Err())
		case <-c.closing:
			return giveUp(ErrClosed)
		}
	}
}
