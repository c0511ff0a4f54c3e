package redlock

import (
	"context"
	"sync"
	"time"
)

// round is one request per master, sent concurrently (through each master's batcher).
// The caller takes the completions from out (gather) until it has decided; the rest go
// to a handler set by straggle.
type round struct {
	op      Op
	key     string
	reqs    []request // one per master, in master order; allocated together
	out     chan *request
	pending int // completions the caller has not taken yet (caller's goroutine only)

	mu   sync.Mutex     // guards late against deliveries
	late func(*request) // set by straggle: completions go here instead of out
}

// broadcast sends calls to every master. The calls, and the argument slices they carry,
// are shared by the masters' requests and must not be modified afterwards. sendBy
// bounds when a request may still be sent; the caller's wait is bounded separately
// (gather's deadline).
func (c *Client) broadcast(op Op, key string, sendBy time.Time, calls ...call) *round {
	n := len(c.masters)
	r := &round{op: op, key: key, reqs: make([]request, n), out: make(chan *request, n), pending: n}
	for i, m := range c.masters {
		req := &r.reqs[i]
		req.calls, req.sendBy, req.round = calls, sendBy, r
		m.send(req)
	}
	return r
}

// deliver hands a completed request to the caller, or to the straggler handler once the
// caller stopped waiting.
func (r *round) deliver(req *request) {
	r.mu.Lock()
	late := r.late
	if late == nil {
		r.out <- req // buffered for every master: never blocks
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	late(req)
}

// gather hands every reply to onReply until it returns true (decided), every master has
// answered, the deadline passes or ctx ends. It returns ctx's error when ctx ended first.
func (r *round) gather(ctx context.Context, timers *sync.Pool, deadline time.Time, onReply func(*request) (decided bool)) error {
	if r.pending == 0 {
		return nil
	}
	timer := getTimer(timers, time.Until(deadline))
	defer putTimer(timers, timer)
	for r.pending > 0 {
		select {
		case req := <-r.out:
			r.pending--
			req.seen = true
			if onReply(req) {
				return nil
			}
		case <-timer.C:
			// select picks at random among ready cases: replies that arrived before the
			// deadline still count.
			for r.pending > 0 {
				select {
				case req := <-r.out:
					r.pending--
					req.seen = true
					if onReply(req) {
						return nil
					}
				default:
					return nil
				}
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// getTimer returns a running timer from the pool. Since Go 1.23 a stopped or reset timer
// never delivers a stale tick, so pooled timers are safe to reuse.
func getTimer(timers *sync.Pool, d time.Duration) *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func putTimer(timers *sync.Pool, t *time.Timer) {
	t.Stop()
	timers.Put(t)
}

// abandonUnseen tells the batchers not to send what they have not sent yet, for every
// master whose reply the caller has not seen.
func (r *round) abandonUnseen() {
	for i := range r.reqs {
		req := &r.reqs[i]
		if !req.seen && req.state.CompareAndSwap(statePending, stateAbandoned) {
			// The batcher skips it without completing it: nothing more to wait for.
			req.seen = true
			r.pending--
		}
	}
}

// straggle hands the replies that arrive after the caller stopped waiting to fn: those
// already delivered at once, the others as they complete, from the goroutine that
// completes them (a master's batcher). fn must be fast and safe for concurrent use, like
// Hooks. Requests abandoned before they were sent never complete; the others complete
// within the pipeline bound (Options.CleanupTimeout), and before Client.Close returns.
// After straggle the caller must not use the round.
func (c *Client) straggle(r *round, fn func(*request)) {
	if r.pending == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		select {
		case req := <-r.out:
			fn(req)
		default:
			r.late = fn
			return
		}
	}
}

// votes is the tally of a round whose replies are each a yes or a no from one master.
type votes struct {
	confirmed, refused int
	errs               []MasterError // masters that answered neither (timeouts, errors)
}

// gatherVotes collects the replies of rd until a majority confirmed, a majority refused,
// or the deadline or ctx ended, reporting each reply to the hooks.
func (c *Client) gatherVotes(ctx context.Context, rd *round, op Op, key string, deadline time.Time, parse func(*request) (bool, error)) (votes, error) {
	var v votes
	err := rd.gather(ctx, &c.timers, deadline, func(req *request) bool {
		ok, err := parse(req)
		c.masterEvent(op, key, req, ok, err)
		switch {
		case err != nil:
			v.errs = append(v.errs, masterError(req, err))
		case ok:
			v.confirmed++
		default:
			v.refused++
		}
		return v.confirmed >= c.quorum || c.majorityRefused(v)
	})
	return v, err
}

// straggleVotes hands the replies that come after the decision to the hooks.
func (c *Client) straggleVotes(rd *round, op Op, key string, parse func(*request) (bool, error)) {
	c.straggle(rd, func(req *request) {
		ok, err := parse(req)
		c.masterEvent(op, key, req, ok, err)
	})
}
