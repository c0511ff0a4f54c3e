package redlock

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
