package redlock

import (
	"context"
	"time"
)

// round is one request per master, sent concurrently (through each master's batcher).
type round struct {
	op      Op
	key     string
	reqs    []*request
	out     chan *request
	pending int
}

// broadcast sends calls(i) to every master i. sendBy bounds when a request may still be
// sent; the caller's wait is bounded separately (gather's deadline).
func (c *Client) broadcast(op Op, key string, sendBy time.Time, calls func(i int) []call) *round {
	n := len(c.masters)
	r := &round{op: op, key: key, reqs: make([]*request, n), out: make(chan *request, n), pending: n}
	for i, m := range c.masters {
		r.reqs[i] = &request{calls: calls(i), sendBy: sendBy, out: r.out}
		m.send(r.reqs[i])
	}
	return r
}

// gather hands every reply to onReply until it returns true (decided), every master has
// answered, the deadline passes or ctx ends. It returns ctx's error when ctx ended first.
func (r *round) gather(ctx context.Context, deadline time.Time, onReply func(*request) (decided bool)) error {
	if r.pending == 0 {
		return nil
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for r.pending > 0 {
		select {
		case req := <-r.out:
			r.pending--
			req.seen = true
			if onReply(req) {
				return nil
			}
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// abandonUnseen tells the batchers not to send what they have not sent yet, for every
// master whose reply the caller has not seen. It returns, per master, whether the request
// is known never to have reached the master.
func (r *round) abandonUnseen() (notSent []bool) {
	notSent = make([]bool, len(r.reqs))
	for i, req := range r.reqs {
		if !req.seen && req.state.CompareAndSwap(statePending, stateAbandoned) {
			// The batcher skips it without completing it: nothing more to wait for.
			notSent[i] = true
			req.seen = true
			r.pending--
		}
	}
	return notSent
}

// straggle reports the replies that arrive after the caller stopped waiting to fn, in the
// background, until every master answered or the cleanup bound passes. The requests were
// already abandoned where possible, so a never-sent one completes at once or never.
func (c *Client) straggle(r *round, until time.Time, fn func(*request)) {
	if r.pending == 0 {
		return
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		timer := time.NewTimer(time.Until(until))
		defer timer.Stop()
		for r.pending > 0 {
			select {
			case req := <-r.out:
				r.pending--
				req.seen = true
				fn(req)
			case <-timer.C:
				return
			}
		}
	}()
}
