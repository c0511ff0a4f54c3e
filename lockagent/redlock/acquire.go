package redlock

// The acquisition paths, in the order a call takes them: Acquire waits (acquire: an
// attempt, then the release notification, PTTL or a random delay) or, where the masters
// keep a wait queue, queues (acquireQueued, with the waiter in waitqueue.go); TryAcquire
// makes one attempt (tryAcquire; its round and fence in attempt.go).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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
	a := &acquirer{c: c, key: key, timer: time.NewTimer(time.Hour)}
	defer a.stop()
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
	notify := !c.opts.NoNotifications
	waitFirst := notify && !c.queueing() && c.notify.queued(key)
	if waitFirst {
		a.w, a.confirmed = c.notify.join(key)
	}
	for {
		if !waitFirst {
			a.attempt++
			l, fi, err := c.tryAcquire(ctx, name, ttl, cfg)
			if err == nil {
				return l, a.attempt, nil
			}
			if !retryable(err) {
				return nil, a.attempt, err
			}
			a.refused(err, fi)
			if c.opts.MaxRetries > 0 && a.attempt > c.opts.MaxRetries {
				return nil, a.attempt, err
			}
			if cfg.onRetry != nil {
				cfg.onRetry(a.attempt, err)
			}
			if c.queueing() && errors.Is(err, ErrTaken) {
				// Wait in the masters' queue: the lock is handed to us when our turn comes.
				a.leave()
				return c.acquireQueued(ctx, key, ttl, cfg, a.attempt, err)
			}
			if notify && a.w == nil && errors.Is(err, ErrTaken) {
				// Subscribe, then try again at once: the holder may have released between
				// the refusal and the subscription, and that notification is lost.
				a.w, a.confirmed = c.notify.join(key)
				c.awaitConfirm(ctx, a.confirmed, c.opts.nodeTimeout(ttl))
				continue
			}
		}
		waitFirst = false
		if cause := a.sleep(ctx); cause != nil {
			return nil, a.attempt, a.giveUp(cause)
		}
	}
}

// acquireQueued waits for key in the masters' wait queues after a refused attempt (see
// "Waiting across processes" in doc.go). attempt counts the attempts made so far.
func (c *Client) acquireQueued(ctx context.Context, key string, ttl time.Duration, cfg lockConfig, attempt int, lastErr error) (*Lock, int, error) {
	qw := c.newQueuedWait(key, ttl, cfg, attempt, lastErr)
	nodeTimeout := c.opts.nodeTimeout(qw.ttl)
	w, confirmed := c.notify.joinQueued(key, qw.token)
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
			l, stop, err := qw.try(ctx, splitCheck, timer)
			if stop {
				acquired = l != nil
				return l, qw.attempts, err
			}
			attemptNow, splitCheck = false, false
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
			l, err := qw.onGrant(ctx, g, timer)
			if l != nil || err != nil {
				acquired = l != nil
				return l, qw.attempts, err
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
			return nil, qw.attempts, qw.giveUp(ctx.Err())
		case <-c.closing:
			return nil, qw.attempts, qw.giveUp(ErrClosed)
		}
	}
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
	a := c.sendAcquire(key, ttl)
	if err := a.gather(ctx); err != nil {
		c.cleanup(key, a.token, a.rd, 0)
		return nil, 0, err
	}
	if !a.won() {
		wait, err := a.refusal() // before cleanup takes the stragglers
		c.cleanup(key, a.token, a.rd, a.nodeTimeout)
		return nil, wait, err
	}
	// Replies that come after the majority are reported to the hooks only: the key is
	// ours on those masters too, and Release/Extend go to every master anyway.
	c.straggle(a.rd, c.reportAcquireReply(key, a.fencing))
	if !time.Now().Before(a.lockDeadline) {
		c.cleanup(key, a.token, nil, a.nodeTimeout)
		return nil, 0, fmt.Errorf("%w: acquire %q: the majority answered after the validity ran out (ttl %v)", ErrExpired, key, ttl)
	}
	fence, err := a.fence(ctx)
	if err != nil {
		return nil, 0, err
	}
	return c.newHold(key, a.token, ttl, fence, len(a.granted), a.lockDeadline, cfg), 0, nil
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

// acquirer is the state of one Acquire between its attempts (without the wait queue).
type acquirer struct {
	c         *Client
	key       string
	w         *waiter // subscribed to the key's release notifications (nil: not)
	confirmed <-chan struct{}
	timer     *time.Timer
	lastErr   error
	freeIn    time.Duration
	attempt   int
	// collisions counts failed attempts right after a release notification from
	// another process: waiters elsewhere woke too. The jitter window doubles with
	// each, so a crowd of waiters spreads out in a few rounds.
	collisions int
	remoteWake bool
}

func (a *acquirer) stop() {
	a.timer.Stop()
	a.leave()
}

// leave ends the subscription, if any.
func (a *acquirer) leave() {
	if a.w != nil {
		a.c.notify.leave(a.w)
		a.w = nil
	}
}

// refused records a failed attempt that may be retried.
func (a *acquirer) refused(err error, freeIn time.Duration) {
	a.lastErr, a.freeIn = err, freeIn
	if a.remoteWake {
		a.collisions = min(a.collisions+1, 6)
	}
	a.remoteWake = false
}

// giveUp is the error of an Acquire that stops waiting for cause.
func (a *acquirer) giveUp(cause error) error {
	if a.lastErr == nil {
		return cause
	}
	return fmt.Errorf("redlock: acquire %q: %w (last attempt: %w)", a.key, cause, a.lastErr)
}

// sleep waits before the next attempt: until the holder releases (notification), the key
// expires on enough masters (from PTTL) or a random delay passes. It returns why Acquire
// must stop instead (ctx's error, ErrClosed), else nil.
func (a *acquirer) sleep(ctx context.Context) error {
	c := a.c
	wait := c.retryDelay()
	var wake <-chan bool
	if a.w != nil {
		select {
		case <-a.confirmed:
			// Notifications work: the timer only guards against lost ones and
			// holders that publish nothing, so it need not fire often.
			wait = c.opts.RetryDelayMax/2 + rand.N(c.opts.RetryDelayMax/2+1)
		default:
		}
		wake = a.w.wake
		c.notify.idle(a.w)
	}
	if a.freeIn > 0 && a.freeIn < wait {
		wait = a.freeIn + time.Millisecond // PTTL is rounded down
	}
	a.freeIn = 0
	a.timer.Reset(wait)
	select {
	case local := <-wake:
		// Released. By this Client: this waiter is the only one woken, go now. By
		// another process: go after a jitter small enough to keep the hand-off fast
		// and large enough that waiters in other processes do not all arrive at once.
		if local {
			break
		}
		a.remoteWake = true
		if j := rand.N(min(notifyJitter<<a.collisions, c.opts.RetryDelayMax) + 1); j > 0 {
			a.timer.Reset(j)
			select {
			case <-a.timer.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	case <-a.timer.C:
		if a.w != nil {
			c.notify.attempting(a.w)
		}
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closing:
		return ErrClosed
	}
	return nil
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
// missing ACL permission) never heals by itself: it is returned at once when the masters
// that denied leave too few others for a majority. A denial by fewer is one failed master
// among others, retried like a timeout: a new master whose lock users are not let in yet
// (a rolling replacement seeds its fences first) must not end every contended wait.
func retryable(err error) bool {
	if errors.Is(err, ErrDenied) && !deniedByMinority(err) {
		return false
	}
	return errors.Is(err, ErrTaken) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrExpired) || errors.Is(err, ErrLost)
}

// deniedByMinority reports whether err is an *UnavailableError whose denying masters
// leave a majority of others.
func deniedByMinority(err error) bool {
	var u *UnavailableError
	if !errors.As(err, &u) {
		return false
	}
	masters := u.Masters
	if masters == 0 {
		masters = u.Votes + u.Refused + len(u.Errors)
	}
	denied := 0
	for _, me := range u.Errors {
		if errors.Is(me.Err, ErrDenied) {
			denied++
		}
	}
	return masters-denied >= u.Quorum
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
