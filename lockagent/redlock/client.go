package redlock

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Key suffixes of the siblings a lock key may have. They are reserved: a lock name ending
// in FenceSuffix or QueueSuffix is refused.
const (
	// FenceSuffix names the fencing register of a lock: key+FenceSuffix, a plain integer
	// string with no TTL.
	FenceSuffix = ":fence"
	// ReleaseChannelSuffix names the pub/sub channel a release publishes on.
	ReleaseChannelSuffix = ":released"
	// QueueSuffix names the wait queue of a lock: key+QueueSuffix, a string key with a TTL
	// written only by this package's scripts, never logged (see doc.go).
	QueueSuffix = ":waitq"
	// GrantChannelInfix names the channel on which a release tells a Client that it handed
	// the lock to one of its waiters: key+GrantChannelInfix+<the Client's id>.
	GrantChannelInfix = ":granted:"
)

// Client runs Redlock over independent masters. It is safe for concurrent use by many
// goroutines: operations on the same master share round trips (one pipeline per master
// at a time), which is what makes many concurrent lockers cheap.
type Client struct {
	opts    Options
	masters []*master
	quorum  int

	closed    atomic.Bool
	closeOnce sync.Once
	closing   chan struct{}
	bg        sync.WaitGroup // background work: renewals

	reentrantMu sync.Mutex
	reentrant   map[string]*hold // key -> hold acquired WithReentrant

	notify *notifier
	id     string        // names this Client's waiters in the wait queues and its grant channels
	seq    atomic.Uint64 // numbers its waiters
	fences *fenceCache   // largest fence seen per key: the optimistic proposal
	timers sync.Pool     // *time.Timer for the rounds' waits

	beforeExtendSend func() // tests only: runs in extend just before the broadcast
}

// New returns a Client over masters, one go-redis client per independent master (no
// replicas, no Cluster). The caller keeps ownership of the clients and closes them after
// Client.Close. Client options that help: ContextTimeoutEnabled (a stuck master then
// frees its connection at the pipeline bound). MaxRetries -1 is required: go-redis must
// not replay a script the server may have run (a replayed release can undo an unlogged
// hand-off after the master restarts: see the package doc). New refuses a client that
// may resend a command with a *RetryingClientError.
func New(masters []redis.UniversalClient, opts Options) (*Client, error) {
	if len(masters) == 0 {
		return nil, fmt.Errorf("%w: no masters: pass one client per independent Redis master (N odd, >= 3; 5 is the reference)", ErrInvalid)
	}
	for i, m := range masters {
		if m == nil {
			return nil, fmt.Errorf("%w: masters[%d] is nil", ErrInvalid, i)
		}
	}
	if err := refuseRetryingClients(masters); err != nil {
		return nil, err
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	// The same master twice would count its vote twice: refuse it.
	seen := map[string]int{}
	for i, rdb := range masters {
		if cl, ok := rdb.(*redis.Client); ok {
			addr := cl.Options().Addr
			if j, dup := seen[addr]; dup {
				return nil, fmt.Errorf("%w: masters[%d] and masters[%d] both connect to %s: pass each independent master once", ErrInvalid, j, i, addr)
			}
			seen[addr] = i
		}
	}
	c := &Client{opts: opts, quorum: len(masters)/2 + 1, reentrant: map[string]*hold{}, closing: make(chan struct{}),
		fences: newFenceCache(fenceCacheSize), id: newToken()[:16]}
	for i, rdb := range masters {
		c.masters = append(c.masters, newMaster(i, addrOf(rdb, i), rdb, opts))
	}
	c.notify = newNotifier(c)
	return c, nil
}

func addrOf(rdb redis.UniversalClient, i int) string {
	if cl, ok := rdb.(*redis.Client); ok {
		return cl.Options().Addr
	}
	return "master-" + strconv.Itoa(i)
}

// Quorum is the number of masters that must agree: N/2+1.
func (c *Client) Quorum() int { return c.quorum }

// Close stops the client: new calls fail with ErrClosed, auto-renewals stop, queued
// cleanups are still sent (bounded by Options.CleanupTimeout), then the batchers and
// subscriptions end. Locks still held are not released (they expire); release them first.
// The go-redis clients given to New are not closed.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.closing) // stops auto-renewals
		c.bg.Wait()
		c.notify.close()
		for _, m := range c.masters {
			m.close()
		}
	})
	return nil
}

// keyFor validates a lock request and returns the Redis key.
func (c *Client) keyFor(name string, ttl time.Duration) (string, error) {
	if c.closed.Load() {
		return "", ErrClosed
	}
	if name == "" {
		return "", fmt.Errorf("%w: empty lock name: pass the name of the resource to lock", ErrInvalid)
	}
	key := c.opts.KeyPrefix + name
	if strings.HasSuffix(key, FenceSuffix) {
		return "", fmt.Errorf("%w: lock name %q ends in %q, which names fencing registers: choose another name", ErrInvalid, name, FenceSuffix)
	}
	if strings.HasSuffix(key, QueueSuffix) {
		return "", fmt.Errorf("%w: lock name %q ends in %q, which names wait queues: choose another name", ErrInvalid, name, QueueSuffix)
	}
	if err := c.checkTTL(ttl); err != nil {
		return "", err
	}
	return key, nil
}

func (c *Client) checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: ttl %v: a lock needs a positive TTL of at least 1ms (Redis expires in milliseconds)", ErrInvalid, ttl)
	}
	if ttl > c.opts.MaxTTL {
		return fmt.Errorf("%w: ttl %v exceeds Options.MaxTTL %v: use a shorter ttl and keep the lock with Extend or WithAutoRenew, or raise MaxTTL (never above the deployment's max_lock_ttl, which the restart delay is sized for)",
			ErrTTLTooLong, ttl, c.opts.MaxTTL)
	}
	return nil
}

// newToken returns 20 random bytes from crypto/rand, URL-safe base64 (27 characters).
func newToken() string {
	var b [20]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand crashes the program instead)
	return base64.RawURLEncoding.EncodeToString(b[:])
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

// acquireReply is one master's answer to an acquisition.
type acquireReply struct {
	ok          bool          // the key was set with our token
	pttl        time.Duration // refused: the key's remaining TTL (-1ms: none; other negatives: unknown)
	register    uint64        // fencing only: the register before the optimistic write
	registerErr error         // the register could not be read (ok stays true)
	handed      uint64        // queued attempt, key already ours: the fence its hand-off gave (0: unknown)
	err         error         // no usable answer
}

// parseAcquire reads one master's reply: the acquire script's with fencing, else the
// pipeline SET NX PX, PTTL.
func parseAcquire(req *request, fencing bool) acquireReply {
	if req.err != nil {
		return acquireReply{err: req.err}
	}
	if fencing {
		return parseAcquireScript(req.cmds[0])
	}
	var rep acquireReply
	switch v, e := req.cmds[0].Result(); {
	case e == nil && v == "OK":
		rep.ok = true
	case errors.Is(e, redis.Nil):
	case e != nil:
		return acquireReply{err: e}
	default:
		return acquireReply{err: fmt.Errorf("unexpected SET reply %v", v)}
	}
	rep.pttl = parsePTTL(req.cmds[1].Int64())
	return rep
}

func parsePTTL(ms int64, err error) time.Duration {
	if err != nil {
		return -1 // unknown
	}
	return time.Duration(ms) * time.Millisecond
}

// parseAcquireScript reads {1, register} (set) or {0, pttl, register} (held).
func parseAcquireScript(cmd *redis.Cmd) acquireReply {
	vals, err := cmd.Slice()
	if err != nil {
		return acquireReply{err: err}
	}
	var flag int64 = -1
	if len(vals) > 0 {
		flag, _ = vals[0].(int64)
	}
	switch {
	case len(vals) == 2 && flag == 1:
		rep := acquireReply{ok: true}
		rep.register, rep.registerErr = parseRegister(vals[1])
		return rep
	case len(vals) == 3 && flag == 0:
		ms, ok := vals[1].(int64)
		rep := acquireReply{pttl: -1}
		if ok {
			rep.pttl = time.Duration(ms) * time.Millisecond
		}
		rep.register, _ = parseRegister(vals[2]) // only a hint for the cache
		return rep
	default:
		return acquireReply{err: fmt.Errorf("unexpected acquire script reply %v", vals)}
	}
}

// parseRegister reads a fencing register as the script returned it.
func parseRegister(v any) (uint64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("fencing register came back as %T, not a string", v)
	}
	f, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("fencing register holds %q, not a number", s)
	}
	if f >= fenceLimit {
		// Lua numbers are exact below 2^53 only, and one more would not fit anyway: a fence
		// handed out from it could be equal to or below an earlier one.
		return 0, fmt.Errorf("fencing register holds %d, at or above the limit 2^53: fences are exhausted for this lock name; use another name", f)
	}
	return f, nil
}

// fenceLimit bounds fencing registers: a register at or above it is an error, so every
// fence handed out is at most 2^53 and exact in the scripts.
const fenceLimit = 1 << 53

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
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

// unavailable builds the error for a round that got too few confirmations. Every master
// is counted once: votes, refusals, then one error per master (errs, plus a node
// timeout, or the connection error its last pipeline ended with, for every master that
// did not answer in time).
func (c *Client) unavailable(op Op, key string, votes, refused int, errs []MasterError, rd *round) error {
	seen := make([]bool, len(c.masters))
	out := make([]MasterError, 0, len(c.masters))
	for _, me := range errs {
		if me.Master >= 0 && me.Master < len(seen) {
			if seen[me.Master] {
				continue
			}
			seen[me.Master] = true
		}
		me.Err = describe(me.Err)
		out = append(out, me)
	}
	for i := range rd.reqs {
		if rd.reqs[i].seen || seen[i] {
			continue
		}
		var err error = ErrNodeTimeout
		if f := c.masters[i].recentFailure(2 * c.opts.CleanupTimeout); f != nil {
			err = &unansweredError{last: f}
		}
		out = append(out, MasterError{Master: i, Addr: c.masters[i].addr, Err: err})
	}
	return &UnavailableError{Op: string(op), Key: key, Votes: votes, Refused: refused, Masters: len(c.masters), Quorum: c.quorum, Errors: out}
}

// unansweredError is a master that did not answer within the node timeout while its
// previous pipeline had failed with a connection error (go-redis retries a refused dial
// for longer than a node timeout): that error is the cause. It matches ErrNodeTimeout
// only when that error was a timeout.
type unansweredError struct{ last error }

func (e *unansweredError) Error() string {
	return e.last.Error() + " (still failing: no reply within the node timeout)"
}

func (e *unansweredError) Unwrap() error { return e.last }

// masterError is one master's failure in a round, with its cause named (describe).
func masterError(req *request, err error) MasterError {
	return MasterError{Master: req.master.index, Addr: req.master.addr, Err: describe(err)}
}

// cleanup releases token on every master after a failed or cancelled acquisition,
// including masters that timed out: their reply may be lost after the key was set. The
// release is not cut short by the caller's context; it is bounded by
// Options.CleanupTimeout. The caller waits up to wait for it (one node timeout, so
// that its next attempt does not race its own leftovers); the rest completes in the
// background.
func (c *Client) cleanup(key, token string, acquire *round, wait time.Duration) {
	if acquire != nil {
		acquire.abandonUnseen()
		c.straggle(acquire, c.reportAcquireReply(key, !c.opts.NoFencing))
	}
	rd := c.releaseRound(OpCleanup, key, token, 0, "", false, time.Now().Add(c.opts.CleanupTimeout))
	report := func(req *request) {
		ok, err := parseRelease(req)
		c.masterEvent(OpCleanup, key, req, ok, err)
	}
	if wait > 0 {
		deadline := time.Now().Add(wait)
		_ = rd.gather(context.Background(), &c.timers, deadline, func(req *request) bool { report(req); return false })
	}
	c.straggle(rd, report)
}

// releaseRound broadcasts the release script; fence is the holder's (0: none, or not a
// lock yet), which a hand-off raises the register above; waiter is the id of the
// wait-queue entries the acquisition may have left on masters it did not need (they go,
// so that no later release hands the key to a finished acquisition); handedOff says that
// a waiter of this Client takes the lock next (the notification tells other processes so).
func (c *Client) releaseRound(op Op, key, token string, fence uint64, waiter string, handedOff bool, sendBy time.Time) *round {
	channel, msg := "", token
	if !c.opts.NoNotifications {
		channel = key + ReleaseChannelSuffix
	}
	if handedOff {
		msg = token + handedOffMark
	}
	mode := ""
	if waiter != "" {
		mode = "drop" // the entries the acquisition left on masters it did not need
	}
	return c.broadcast(op, key, sendBy, c.releaseCall(key, token, channel, msg, fence, waiter, mode))
}

// releaseCall is the release script with its arguments (see releaseBody).
func (c *Client) releaseCall(key, token, channel, msg string, fence uint64, waiter, mode string) call {
	s := releaseScript
	if c.opts.DurableRelease {
		s = durableReleaseScript
	}
	return scriptCall(s, []string{key, key + FenceSuffix, key + QueueSuffix}, token, channel, msg, strconv.FormatUint(fence, 10), waiter, mode)
}

func parseRelease(req *request) (bool, error) {
	if req.err != nil {
		return false, req.err
	}
	v, err := req.cmds[0].Int64()
	if err != nil {
		return false, err
	}
	return v >= 1, nil
}

func (c *Client) masterEvent(op Op, key string, req *request, vote bool, err error) {
	c.opts.Hooks.MasterReply(MasterEvent{Op: op, Key: key, Master: req.master.index, Addr: req.master.addr,
		Latency: req.latency, Vote: vote, Err: err})
}
