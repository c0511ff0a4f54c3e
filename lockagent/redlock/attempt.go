package redlock

// One attempt on every master: the round, its tally, and the fence of a won attempt.

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// acquireRound is one attempt's round on every master and the tally of its replies.
type acquireRound struct {
	c            *Client
	key, token   string
	ttl          time.Duration
	nodeTimeout  time.Duration
	fencing      bool
	proposed     uint64 // the optimistic fence: one more than the largest this Client has seen
	t1           time.Time
	lockDeadline time.Time
	rd           *round

	granted, refused []int
	errs             []MasterError
	fenceReads       int    // grants whose register could be read
	fenceMax         uint64 // largest register read where the SET succeeded
	seenMax          uint64 // largest register read anywhere (a hint for the cache)
	raised           int    // grants whose register was below the proposal: it now holds it
	pttls            []time.Duration
	grace            bool // a majority granted; waiting briefly for the proposal's majority
}

// sendAcquire sends the acquisition to every master: with fencing the acquire script
// (SET NX PX and the optimistic fence write), else SET NX PX and PTTL.
func (c *Client) sendAcquire(key string, ttl time.Duration) *acquireRound {
	a := &acquireRound{c: c, key: key, token: newToken(), ttl: ttl, nodeTimeout: c.opts.nodeTimeout(ttl), fencing: !c.opts.NoFencing}
	var calls []call
	if a.fencing {
		a.proposed = c.fences.get(key) + 1
		calls = []call{scriptCall(acquireScript, []string{key, key + FenceSuffix}, a.token, ttl.Milliseconds(), strconv.FormatUint(a.proposed, 10))}
	} else {
		calls = []call{{args: []any{"set", key, a.token, "nx", "px", ttl.Milliseconds()}}, {args: []any{"pttl", key}}}
	}
	a.t1 = time.Now()
	a.lockDeadline = a.t1.Add(ttl - c.opts.drift(ttl))
	a.rd = c.broadcast(OpAcquire, key, a.t1.Add(a.nodeTimeout), calls...)
	return a
}

// gather takes the replies until the outcome is decided, the node timeout passes or ctx
// ends (its error).
func (a *acquireRound) gather(ctx context.Context) error {
	c := a.c
	ctxErr := a.rd.gather(ctx, &c.timers, a.t1.Add(a.nodeTimeout), a.onReply)
	if ctxErr == nil && a.fencing && a.raised < c.quorum && a.fenceReads >= c.quorum && a.raised+a.rd.pending >= c.quorum {
		// The replies of one round arrive close together; the fallback would cost a whole
		// round trip. Wait for the remaining masters at most as long as the majority took:
		// never much more than the fallback round, usually much less.
		a.grace = true
		ctxErr = a.rd.gather(ctx, &c.timers, minTime(time.Now().Add(time.Since(a.t1)), a.t1.Add(a.nodeTimeout)), a.onReply)
	}
	if a.fencing {
		c.fences.see(a.key, a.seenMax)
	}
	return ctxErr
}

// onReply records one master's reply and reports whether the outcome is decided.
func (a *acquireRound) onReply(req *request) bool {
	c := a.c
	i := req.master.index
	rep := parseAcquire(req, a.fencing)
	c.masterEvent(OpAcquire, a.key, req, rep.ok, rep.err)
	switch {
	case rep.err != nil:
		a.errs = append(a.errs, masterError(req, rep.err))
	case rep.ok:
		a.granted = append(a.granted, i)
		if !a.fencing {
			break
		}
		if rep.registerErr != nil {
			// The SET succeeded but this master's vote is unusable: it counts as an
			// error, not a confirmation.
			a.errs = append(a.errs, MasterError{Master: i, Addr: req.master.addr, Err: fmt.Errorf("reading the fencing register %s: %w", a.key+FenceSuffix, rep.registerErr)})
			break
		}
		a.fenceReads++
		a.fenceMax = max(a.fenceMax, rep.register)
		a.seenMax = max(a.seenMax, rep.register)
		if rep.register < a.proposed {
			a.raised++
		}
	default:
		a.refused = append(a.refused, i)
		a.pttls = append(a.pttls, rep.pttl)
		a.seenMax = max(a.seenMax, rep.register)
	}
	return a.decided()
}

// decided: a majority refused, or granted (with fencing: and the proposal is on a
// majority, or can no longer get there in time).
func (a *acquireRound) decided() bool {
	c := a.c
	switch {
	case len(a.refused) > len(c.masters)-c.quorum:
		return true
	case !a.fencing:
		return len(a.granted) >= c.quorum
	case a.raised >= c.quorum:
		return true
	case a.fenceReads < c.quorum:
		return false
	default:
		// A majority granted, but the proposal is not yet on a majority: stop, unless
		// in the grace period and the masters still to answer could make it.
		return !a.grace || a.raised+a.rd.pending < c.quorum
	}
}

// won: a majority granted (with fencing: each with a register it could read).
func (a *acquireRound) won() bool {
	return len(a.granted) >= a.c.quorum && (!a.fencing || a.fenceReads >= a.c.quorum)
}

// refusal is the error of a round that was not won: *TakenError when a majority refused
// (with when the key is free on enough masters), else *UnavailableError.
func (a *acquireRound) refusal() (time.Duration, error) {
	c := a.c
	if len(a.refused) > len(c.masters)-c.quorum {
		wait := freeIn(a.pttls, c.quorum-len(a.granted), a.nodeTimeout)
		return wait, &TakenError{Key: a.key, Refused: a.refused, Votes: len(a.granted), Quorum: c.quorum, FreeIn: wait}
	}
	votes := len(a.granted)
	if a.fencing {
		votes = a.fenceReads // a grant whose register could not be read is in errs
	}
	return 0, c.unavailable(OpAcquire, a.key, votes, len(a.refused), a.errs, a.rd)
}

// fence is the won round's fencing token (0 without fencing): the proposal when a
// majority raised the register to it, else one fence round above every register read.
// On failure the keys are released.
func (a *acquireRound) fence(ctx context.Context) (uint64, error) {
	c := a.c
	if !a.fencing {
		return 0, nil
	}
	if a.raised >= c.quorum {
		// The proposal is stored on a majority of masters, each of which held less
		// when our SET succeeded there: it is larger than every earlier holder's fence.
		c.fences.see(a.key, a.proposed)
		return a.proposed, nil
	}
	// Some register was already at or above the proposal (another Client moved the
	// fence on, or this Client never saw it): propose above every register read
	// where our SET succeeded, confirmed by a second round.
	fence, err := c.fence(ctx, a.key, a.token, a.fenceMax+1, 0, a.nodeTimeout, a.lockDeadline)
	if err != nil {
		wait := a.nodeTimeout
		if ctx.Err() != nil {
			wait = 0 // cancelled: return at once, the release goes on in the background
		}
		c.cleanup(a.key, a.token, nil, wait)
		return 0, err
	}
	if !time.Now().Before(a.lockDeadline) {
		c.cleanup(a.key, a.token, nil, a.nodeTimeout)
		return 0, fmt.Errorf("%w: acquire %q: the fencing round ended after the validity ran out (ttl %v)", ErrExpired, a.key, a.ttl)
	}
	c.fences.see(a.key, fence)
	return fence, nil
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
	v, ctxErr := c.gatherTimed(ctx, rd, OpFence, key, lockDeadline, deadline, parse)
	err := ctxErr
	if err == nil {
		err = c.fenceOutcome(key, v, lockDeadline, rd)
	}
	c.straggleVotes(rd, OpFence, key, parse)
	if err != nil {
		return 0, err
	}
	return proposed, nil
}

// fenceOutcome is the error of a fence round that ended without ctx's error: nil when a
// majority confirmed; ErrLost when a majority refused within the validity (the key changed
// hands); ErrExpired when a majority refused, but only once the validity was over (with a
// validity of a few milliseconds, the keys expire before the round reaches them); else
// *UnavailableError.
func (c *Client) fenceOutcome(key string, t timedTally, lockDeadline time.Time, rd *round) error {
	switch {
	case t.confirmed >= c.quorum:
		return nil
	case c.majorityRefused(votes{refused: t.refusedInTime}):
		return fmt.Errorf("%w: acquire %q: the key changed hands during the fencing round", ErrLost, key)
	case c.majorityRefused(t.votes):
		return fmt.Errorf("%w: acquire %q: the fencing round's refusals came back %v after the validity ran out (the keys expired on the way)",
			ErrExpired, key, t.lastRefusal.Sub(lockDeadline).Round(time.Microsecond))
	}
	return c.unavailable(OpFence, key, t.confirmed, t.refused, t.errs, rd)
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
