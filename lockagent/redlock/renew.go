package redlock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// AutoRenew starts keeping the lock alive in the background (see WithAutoRenew). Calling
// it again, or on a lock acquired WithAutoRenew, does nothing. Renewal stops when the
// lock is released or lost, at Options.MaxExtensions, or when the Client is closed.
func (l *Lock) AutoRenew() { l.h.startRenew() }

func (h *hold) startRenew() {
	h.mu.Lock()
	if h.renewing || h.done {
		h.mu.Unlock()
		return
	}
	h.renewing = true
	h.mu.Unlock()
	c := h.c
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		h.renewLoop()
	}()
}

// renewLoop extends the lock each time a third of its TTL has passed since the last
// successful (re)start, so two attempts fit before the validity ends. A master outage
// (*UnavailableError) is retried until the validity runs out; anything else ends renewal.
func (h *hold) renewLoop() {
	c := h.c
	interval := h.ttl / 3
	retry := max(c.opts.nodeTimeout(h.ttl), h.ttl/20)
	next := interval
	timer := time.NewTimer(next)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-h.ctx.Done():
			return
		case <-c.closing:
			return
		}
		h.mu.Lock()
		deadline := h.deadline
		h.mu.Unlock()
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		start := time.Now()
		err := h.extend(ctx, h.ttl)
		cancel()
		c.opts.Hooks.Operation(OperationEvent{Op: OpExtend, Key: h.key, Attempts: 1, Elapsed: time.Since(start),
			Fence: h.fence, Err: err})
		switch {
		case err == nil:
			timer.Reset(interval - time.Since(start))
			continue
		case errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded):
			if time.Until(deadline) > retry {
				timer.Reset(retry)
				continue
			}
		}
		why := fmt.Errorf("%w (auto-renewal stopped: %w)", ErrExpired, err)
		if errors.Is(err, ErrLost) {
			h.finish(err) // the context ends now, not at the deadline
			return
		}
		// The lock stays valid until its deadline; the context then ends with why.
		h.mu.Lock()
		h.expiryWhy = why
		h.mu.Unlock()
		return
	}
}
