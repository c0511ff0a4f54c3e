package redlock

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// queueing reports whether Acquire waits in the masters' wait queues.
func (c *Client) queueing() bool { return !c.opts.NoWaitQueue && !c.opts.NoNotifications }

// queueRenewal bounds the wait between a queued waiter's attempts: each renews its
// entry, and finds a hand-off whose notice was lost or a release by a client that
// publishes nothing. Attempts cost the masters a script run each (no fsync): waiters
// that only wait make them rarely.
func (c *Client) queueRenewal() time.Duration { return 2 * c.opts.RetryDelayMax }

// queueLease is how long a waiter's queue entry outlives its last renewal: a waiter that
// died is skipped by releases after at most this long.
func (c *Client) queueLease() time.Duration { return 3*c.queueRenewal() + time.Second }

// grantState is what a queued waiter knows about one master.
type grantState struct {
	ours bool
	// since: the key was set to our token there no earlier than this (monotonic), so it
	// holds it until since + ttl at least (less the drift allowance).
	since time.Time
	// raised: setting the key raised the register strictly, to fence; otherwise reg is the
	// register as read there (regOK).
	raised bool
	fence  uint64
	reg    uint64
	regOK  bool
}

// queuedWait is one Acquire waiting in the masters' wait queues.
type queuedWait struct {
	c      *Client
	key    string
	ttl    time.Duration
	cfg    lockConfig
	token  string
	tag    string // how the masters name our token (acquireQueuedScript)
	id     string // waiter id: "<client id>/<n>"
	ticket string // place in line: wall-clock microseconds of the first queued attempt
	w      *waiter
	grants []grantState
	queued []time.Time // per master: send time of the last attempt it answered "queued"
	sent   map[uint64]time.Time
	seq    uint64 // attempts sent
	// attempts counts the Acquire's attempts, the ones before it queued included.
	attempts int
	lastErr  error
	// unclear: since when we have held a minority of grants while another holder might
	// hold a majority only with the votes of masters that did not answer (zero: not so).
	unclear time.Time
}

// newQueuedWait starts a waiter for key; attempts counts the attempts made so far,
// lastErr is the last one's error.
func (c *Client) newQueuedWait(key string, ttl time.Duration, cfg lockConfig, attempts int, lastErr error) *queuedWait {
	ttl = ttl.Truncate(time.Millisecond)
	token := newToken()
	n := len(c.masters)
	return &queuedWait{c: c, key: key, ttl: ttl, cfg: cfg, token: token, tag: tokenTag(token),
		id:     c.id + "/" + strconv.FormatUint(c.seq.Add(1), 10),
		ticket: strconv.FormatInt(time.Now().UnixMicro(), 10),
		grants: make([]grantState, n), queued: make([]time.Time, n), sent: map[uint64]time.Time{},
		attempts: attempts, lastErr: lastErr}
}

// try makes one attempt and takes the lock when a majority of grants is live. stop: the
// wait is over, with the lock or with the error Acquire returns. Otherwise timer is set to
// the next attempt. splitCheck: look for a split (see isSplit) after the attempt.
func (qw *queuedWait) try(ctx context.Context, splitCheck bool, timer *time.Timer) (l *Lock, stop bool, err error) {
	c := qw.c
	qw.attempts++
	qw.drain() // notices that came before the attempt are older than its replies
	holders, unknown, freeIn, err := qw.attempt(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, true, qw.giveUp(ctx.Err())
		}
		if !retryable(err) {
			return nil, true, err
		}
		qw.lastErr = err
	}
	if l, err := qw.tryLock(ctx, qw.cfg); l != nil || err != nil {
		if err != nil && !retryable(err) {
			return nil, true, err
		}
		if l != nil {
			return l, true, nil
		}
		qw.lastErr = err
	}
	if splitCheck {
		if keeper, split := qw.isSplit(holders, unknown); split {
			qw.yield(keeper)
		}
	}
	if c.opts.MaxRetries > 0 && qw.attempts > c.opts.MaxRetries {
		return nil, true, qw.lastErr
	}
	if qw.cfg.onRetry != nil && qw.lastErr != nil {
		qw.cfg.onRetry(qw.attempts, qw.lastErr)
	}
	// The entry's lease is renewed by the next attempt; the wait also bounds how
	// late a release by a client that publishes nothing is noticed.
	wait := c.queueRenewal()/2 + rand.N(c.queueRenewal()/2+1)
	if freeIn > 0 && freeIn < wait {
		wait = freeIn + time.Millisecond
	}
	timer.Reset(wait)
	return nil, false, nil
}

// onGrant takes a hand-off notice: the lock when it completes a majority of grants, an
// error that ends the wait, or neither. A window for other clients sets timer to our turn.
func (qw *queuedWait) onGrant(ctx context.Context, g grantMsg, timer *time.Timer) (*Lock, error) {
	if g.turnIn > 0 {
		// A window for other clients: ours is the first turn after it.
		timer.Reset(g.turnIn)
		return nil, nil
	}
	qw.granted(g)
	qw.drain()
	l, err := qw.tryLock(ctx, qw.cfg)
	if l != nil {
		return l, nil
	}
	if err != nil {
		if !retryable(err) {
			return nil, err
		}
		qw.lastErr = err
	}
	return nil, nil
}

// giveUp is the error of a wait that stops for cause.
func (qw *queuedWait) giveUp(cause error) error {
	if qw.lastErr == nil {
		return cause
	}
	return fmt.Errorf("redlock: acquire %q: %w (last attempt: %w)", qw.key, cause, qw.lastErr)
}

// attempt runs acquireQueuedScript on every master and records what each said. It
// returns how many masters each other holder has (by tag), how many did not answer, and
// when the key expires on enough masters to make a majority possible.
func (qw *queuedWait) attempt(ctx context.Context) (holders map[string]int, unknown int, wait time.Duration, err error) {
	c := qw.c
	t := queuedTally{fencing: !c.opts.NoFencing, holders: map[string]int{}}
	if t.fencing {
		t.proposed = c.fences.get(qw.key) + 1
	}
	nodeTimeout := c.opts.nodeTimeout(qw.ttl)
	qw.seq++
	t.sent = time.Now()
	qw.sent[qw.seq] = t.sent
	delete(qw.sent, qw.seq-sentKept)
	rd := c.broadcast(OpAcquire, qw.key, t.sent.Add(nodeTimeout), scriptCall(acquireQueuedScript,
		[]string{qw.key, qw.key + FenceSuffix, qw.key + QueueSuffix}, qw.token, qw.ttl.Milliseconds(),
		strconv.FormatUint(t.proposed, 10), qw.id, qw.ticket, c.queueLease().Milliseconds(), qw.seq))
	ctxErr := rd.gather(ctx, &c.timers, t.sent.Add(nodeTimeout), func(req *request) bool {
		qw.record(&t, req)
		return false
	})
	if t.fencing {
		c.fences.see(qw.key, t.seenMax)
	}
	unknown = rd.pending
	c.straggle(rd, c.reportAcquireReply(qw.key, t.fencing))
	if ctxErr != nil {
		return t.holders, unknown, 0, ctxErr
	}
	if t.foreign != nil {
		return t.holders, unknown, 0, t.foreign // never retried: the key is not ours to use
	}
	live := qw.live(time.Now())
	if live >= c.quorum {
		return t.holders, unknown, 0, nil
	}
	if len(t.errs) == 0 && unknown == 0 || len(t.refused) > len(c.masters)-c.quorum {
		wait = freeIn(t.pttls, c.quorum-live, nodeTimeout)
		return t.holders, unknown, wait, &TakenError{Key: qw.key, Refused: t.refused, Votes: live, Quorum: c.quorum, FreeIn: wait}
	}
	return t.holders, unknown, 0, c.unavailable(OpAcquire, qw.key, live, len(t.refused), t.errs, rd)
}

// queuedTally is what one attempt's replies said (besides the grants, which go to
// queuedWait.grants).
type queuedTally struct {
	fencing  bool
	proposed uint64    // the optimistic fence (fencing only)
	sent     time.Time // when the attempt was sent
	holders  map[string]int
	refused  []int
	pttls    []time.Duration
	errs     []MasterError
	seenMax  uint64
	foreign  *ForeignQueueError
}

// record takes one master's reply to the attempt.
func (qw *queuedWait) record(t *queuedTally, req *request) {
	c := qw.c
	i := req.master.index
	rep, holder := parseQueuedReply(req)
	c.masterEvent(OpAcquire, qw.key, req, rep.ok, rep.err)
	switch {
	case rep.err != nil:
		if fq := asForeignQueue(rep.err, qw.key+QueueSuffix, i); fq != nil {
			t.foreign = fq
		}
		t.errs = append(t.errs, masterError(req, rep.err))
	case rep.ok && holder == "new":
		g := grantState{ours: true, since: t.sent, reg: rep.register, regOK: rep.registerErr == nil}
		if t.fencing && g.regOK && rep.register < t.proposed {
			g.raised, g.fence = true, t.proposed
		}
		qw.grants[i] = g
		t.seenMax = max(t.seenMax, rep.register)
	case rep.ok:
		// Handed to us by a release after the last attempt this master answered
		// "queued" (or after our first attempt).
		if !qw.grants[i].ours {
			qw.grants[i] = grantState{ours: true, since: qw.queued[i], reg: rep.register, regOK: rep.registerErr == nil}
		}
		if t.fencing && rep.handed > 0 && (!qw.grants[i].raised || qw.grants[i].fence != rep.handed) {
			// The fence of the hand-off that set the key as it is now, from the
			// master's note of it (which the script checks against the key): a fence
			// recorded from an older hand-off there is stale. since stays: the older
			// hand-off's lower bound holds for a later one too.
			qw.grants[i].raised, qw.grants[i].fence = true, rep.handed
		}
		t.seenMax = max(t.seenMax, rep.register)
	default:
		qw.queued[i] = t.sent
		qw.grants[i] = grantState{} // ours no more (expired), if it was
		t.refused = append(t.refused, i)
		t.pttls = append(t.pttls, rep.pttl)
		t.holders[holder]++
		t.seenMax = max(t.seenMax, rep.register)
	}
}

// sentKept is how many attempts' send times a waiter remembers: a hand-off notice names
// the attempt that last renewed the entry, one of the latest few.
const sentKept = 64

// drain records the hand-off notices already delivered.
func (qw *queuedWait) drain() {
	for {
		select {
		case g := <-qw.w.grants:
			qw.granted(g)
		default:
			return
		}
	}
}

// granted records a hand-off notice. The release that sent it ran after the attempt it
// names (that attempt had renewed our entry there): the key has been ours there since
// that attempt was sent at least. A notice naming an attempt we no longer remember is
// dropped (the next attempt finds the key).
//
// Notices are late, duplicated or lost, and what we recorded before may be stale (the
// key expired, or a restart lost it): so a notice counts only when its hand-off is the
// latest we know of there. One that names an attempt older than the last attempt the
// master answered "queued" ran before that answer (a hand-off after it would name that
// attempt or a later one): it is stale and dropped. One that names a later attempt than
// the grant we hold replaces it, fence and all: it is a newer hand-off of a key we had
// lost there (an older grant must not make us ignore it, nor keep its fence).
func (qw *queuedWait) granted(g grantMsg) {
	if g.master < 0 || g.master >= len(qw.grants) || g.turnIn > 0 {
		return
	}
	n, err := strconv.ParseUint(g.attempt, 10, 64)
	since, ok := qw.sent[n]
	if err != nil || !ok || since.Before(qw.queued[g.master]) {
		return
	}
	st := grantState{ours: true, since: since}
	if read, ok := strings.CutPrefix(g.fence, "r"); ok {
		if f, err := parseRegister(read); err == nil {
			st.reg, st.regOK = f, true
		}
	} else if f, err := parseRegister(g.fence); err == nil {
		st.raised, st.fence, st.reg, st.regOK = true, f, f, true
	}
	if cur := qw.grants[g.master]; cur.ours && (since.Before(cur.since) || since.Equal(cur.since) && (cur.raised || !st.raised)) {
		return // a later hand-off, or this one with as much information, is known
	}
	qw.grants[g.master] = st
}

// live counts the grants whose key cannot have expired yet.
func (qw *queuedWait) live(now time.Time) int {
	c := qw.c
	validFor := qw.ttl - c.opts.drift(qw.ttl)
	k := 0
	for _, g := range qw.grants {
		if g.ours && g.since.Add(validFor).After(now) {
			k++
		}
	}
	return k
}

// tryLock turns a majority of live grants into a Lock: the deadline is when fewer than a
// majority of them can still hold; the fence is the value a majority of them raised the
// register to, when they agree, else one fence round above every register read.
func (qw *queuedWait) tryLock(ctx context.Context, cfg lockConfig) (*Lock, error) {
	c := qw.c
	now := time.Now()
	validFor := qw.ttl - c.opts.drift(qw.ttl)
	var since []time.Time
	raised := map[uint64]int{}
	var readMax uint64
	reads := 0
	for _, g := range qw.grants {
		if !g.ours || !g.since.Add(validFor).After(now) {
			continue
		}
		since = append(since, g.since)
		if g.raised {
			raised[g.fence]++
		}
		if g.regOK {
			reads++
			readMax = max(readMax, g.reg)
		}
	}
	if len(since) < c.quorum {
		return nil, nil
	}
	slices.SortFunc(since, func(a, b time.Time) int { return b.Compare(a) })
	deadline := since[c.quorum-1].Add(validFor)
	var fence uint64
	if !c.opts.NoFencing {
		for f, k := range raised {
			if k >= c.quorum && f > fence {
				fence = f
			}
		}
		if fence == 0 {
			if reads < c.quorum {
				return nil, nil // wait for better information (the next attempt reads them)
			}
			var err error
			// A waiter holds the lock while others may wait: the round reserves fences
			// for the hand-offs after it, as a logged hand-off does (lua.ChainFences).
			fence, err = c.fence(ctx, qw.key, qw.token, readMax+1, lua.ChainFences-1, c.opts.nodeTimeout(qw.ttl), deadline)
			if err != nil {
				if errors.Is(err, ErrLost) {
					qw.grants = make([]grantState, len(qw.grants)) // look again
					return nil, fmt.Errorf("%w: acquire %q: %w", ErrTaken, qw.key, err)
				}
				return nil, err
			}
		}
		if fence >= fenceLimit {
			return nil, fmt.Errorf("%w: acquire %q: the fencing register reached the limit 2^53: fences are exhausted for this lock name; use another name", ErrInvalid, qw.key)
		}
		c.fences.see(qw.key, fence)
	}
	if !time.Now().Before(deadline) {
		return nil, nil
	}
	l := c.newHold(qw.key, qw.token, qw.ttl, fence, len(since), deadline, cfg)
	l.h.waiter, l.h.ticket = qw.id, qw.ticket // read by Release only, after this returns
	return l, nil
}

// isSplit reports whether we hold a minority of grants while no other holder can hold a
// majority either (releases handed the key to different waiters on different masters):
// then all but one of them step back, the one whose token's tag sorts first (keeper)
// keeping its grants; the others hand theirs to it.
//
// Masters that do not answer (stopped, partitioned) can hide a split: two waiters that
// hold two masters each while the fifth is stopped each see that the other might hold
// three. A holder that does hold a majority releases it in time; when the picture has
// not changed for a renewal period, the same rule applies, so such waiters do not wait
// for their keys to expire. A waiter that steps back from a real holder only loses its
// place to the next in line.
func (qw *queuedWait) isSplit(holders map[string]int, unknown int) (keeper string, split bool) {
	c := qw.c
	now := time.Now()
	if live := qw.live(now); live == 0 || live >= c.quorum {
		qw.unclear = time.Time{}
		return "", false
	}
	top := 0
	first := qw.tag
	for tag, k := range holders {
		top = max(top, k)
		if tag < first {
			first = tag
		}
	}
	switch {
	case top >= c.quorum:
		qw.unclear = time.Time{}
		return "", false // someone holds it: its release will come
	case top+unknown >= c.quorum:
		if qw.unclear.IsZero() {
			qw.unclear = now
		}
		if now.Sub(qw.unclear) < c.queueRenewal() {
			return "", false // someone may hold it
		}
	default:
		qw.unclear = time.Time{}
	}
	return first, first != qw.tag
}

// yield hands our grants to the keeper of a split (the waiter whose token has that tag;
// to the next in line where it is not queued): we leave the queue and come back at the
// next attempt with a new token (no notice of a grant we gave back can be mistaken for a
// new one) and a new ticket, at the back of the line. Keeping our place would let the
// waiters ahead of the keeper in line pass the keys given back among themselves, each
// stepping back in turn, where the keeper is not queued.
func (qw *queuedWait) yield(keeper string) {
	qw.unclear = time.Time{}
	qw.leaveTo(keeper)
	qw.ticket = strconv.FormatInt(time.Now().UnixMicro(), 10)
	qw.token = newToken()
	qw.tag = tokenTag(qw.token)
	qw.c.notify.retoken(qw.w, qw.token)
	qw.grants = make([]grantState, len(qw.grants))
	now := time.Now()
	for i := range qw.queued {
		qw.queued[i] = now
	}
}

// leave takes us out of the queue on every master, releasing (and handing on) a lock a
// release gave us meanwhile; a lock given back without a hand-off wakes the others.
func (qw *queuedWait) leave() { qw.leaveTo("") }

// leaveTo is leave, handing a lock we were handed to the waiter whose token has the tag
// keeper when it is in line ("": the first).
func (qw *queuedWait) leaveTo(keeper string) {
	c := qw.c
	mode := "leave"
	if keeper != "" {
		mode += " " + keeper
	}
	rd := c.broadcast(OpCleanup, qw.key, time.Now().Add(c.opts.CleanupTimeout),
		c.releaseCall(qw.key, qw.token, qw.key+ReleaseChannelSuffix, qw.token, 0, qw.id, qw.ticket, mode))
	c.straggleVotes(rd, OpCleanup, qw.key, parseRelease)
}

// tokenTag is how the masters name a holder's token in refusals: the first 8 hex digits
// of its SHA-1 (acquireQueuedScript).
func tokenTag(token string) string {
	sum := sha1.Sum([]byte(token))
	return hex.EncodeToString(sum[:4])
}
