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
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for attempt := 1; ; attempt++ {
		l, freeIn, err := c.tryAcquire(ctx, name, ttl, cfg)
		if err == nil {
			return l, attempt, nil
		}
		if !retryable(err) {
			return nil, attempt, err
		}
		if c.opts.MaxRetries > 0 && attempt > c.opts.MaxRetries {
			return nil, attempt, err
		}
		wait := c.retryDelay()
		if freeIn > 0 && freeIn < wait {
			wait = freeIn + time.Millisecond // PTTL is rounded down
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil, attempt, fmt.Errorf("redlock: acquire %q: %w (last attempt: %w)", c.opts.KeyPrefix+name, ctx.Err(), err)
		}
	}
}

// retryable reports whether another attempt may succeed.
func retryable(err error) bool {
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
