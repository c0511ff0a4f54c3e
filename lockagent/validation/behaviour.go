package validation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// BehaviourCheck is one Redlock property exercised against the live deployment.
type BehaviourCheck struct {
	Name     string `json:"name"`
	OK       bool   `json:"ok"`
	Status   string `json:"status"` // ok, FAIL (evidence), INCONCLUSIVE, DENIED, not run
	Attempts int    `json:"attempts"`
	Detail   string `json:"detail"`
}

// behaviourTTLs are the lock TTLs of phase 2: a normal one, and a short one for the
// expiry check (both within the deployment's max TTL).
func behaviourTTLs(maxTTL time.Duration) (ttl, short time.Duration) {
	return min(maxTTL, 10*time.Second), min(maxTTL, 500*time.Millisecond)
}

// behaviour is phase 2: clients A and B (and a probe that only asks whether a key is
// held) exercise the Redlock properties one by one. Every check is decided by what the
// masters answered, never by timing; a check that got no decisive answer is inconclusive.
type behaviour struct {
	ctx           context.Context
	prefix        string
	a, b, probe   *validateLocker
	ttl, shortTTL time.Duration
	seq           int
	held          []*redlock.Lock // released at the end, whatever happened
	pair          *expiredPair    // from the expiry check, reused by the next checks
}

// expiredPair is a short lock of A that expired unreleased (stale) and B's lock on the
// same key, taken after it (successor).
type expiredPair struct {
	key               string
	stale, successor  *redlock.Lock
	successorReleased bool
}

// runBehaviour runs the checks in order. It stops at the first check that stays
// inconclusive or denied after its retries: the masters are not answering, and the
// remaining checks would only wait for them too.
func runBehaviour(ctx context.Context, o *validateOptions, prefix string, closing *sync.WaitGroup) ([]BehaviourCheck, error) {
	lockers, err := newValidateLockers(ctx, o, 3)
	if err != nil {
		return nil, err
	}
	defer closeLockers(lockers, closing)
	bh := &behaviour{ctx: ctx, prefix: prefix, a: lockers[0], b: lockers[1], probe: lockers[2]}
	bh.ttl, bh.shortTTL = behaviourTTLs(o.cfg.MaxLockTTL.Duration)
	defer func() {
		var wg sync.WaitGroup // at once: each may wait for masters that do not answer
		for _, l := range bh.held {
			wg.Add(1)
			go func() { defer wg.Done(); bh.releaseNow(l) }()
		}
		wg.Wait()
	}()
	checks := []struct {
		name string
		run  func() outcome
	}{
		{"acquire", bh.checkAcquire},
		{"exclusion", bh.checkExclusion},
		{"release", bh.checkRelease},
		{"expiry", bh.checkExpiry},
		{"extend", bh.checkExtend},
		{"owner-only release", bh.checkOwnerOnlyRelease},
		{"fencing", bh.checkFencing},
	}
	var out []BehaviourCheck
	stopped := ""
	for _, c := range checks {
		if stopped != "" {
			out = append(out, BehaviourCheck{Name: c.name, Status: string(statusNotRun),
				Detail: fmt.Sprintf("not run: the %s check could not be decided", stopped)})
			continue
		}
		res, attempts := bh.retry(c.run)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		detail := res.detail
		if attempts > 1 {
			detail = fmt.Sprintf("%s (after %d attempts)", detail, attempts)
		}
		out = append(out, BehaviourCheck{Name: c.name, OK: res.status == statusOK, Status: string(res.status), Attempts: attempts, Detail: detail})
		if res.status == statusInconclusive || res.status == statusDenied {
			stopped = c.name
		}
	}
	return out, nil
}

// retry runs one check until it is decided (ok, evidence, denied) or checkAttempts ran.
func (bh *behaviour) retry(check func() outcome) (outcome, int) {
	for n := 1; ; n++ {
		res := check()
		if res.status != statusInconclusive || n == checkAttempts || bh.ctx.Err() != nil {
			return res, n
		}
		bh.pair = nil // a retry starts from a fresh key
		if sleepCtx(bh.ctx, retryPause(n)) != nil {
			return res, n
		}
	}
}

// key names a new test key for check: every attempt works on its own key.
func (bh *behaviour) key(check string) string {
	bh.seq++
	return fmt.Sprintf("%s:%s:%d", bh.prefix, check, bh.seq)
}

// releaseNow releases l, best effort; the keys left behind are deleted by the cleanup.
func (bh *behaviour) releaseNow(l *redlock.Lock) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(bh.ctx), 2*time.Second)
	defer cancel()
	_ = l.Release(rctx)
}

// acquireFree takes a lock that should be free. An attempt can miss the majority when a
// busy master's fsync outlasts the node timeout, or be refused by the leftovers of such
// an attempt; that is availability, not safety, so it is retried a few times.
func (bh *behaviour) acquireFree(c *validateLocker, key string, ttl time.Duration) (*redlock.Lock, error) {
	var err error
	for n := 1; n <= stepAttempts; n++ {
		var l *redlock.Lock
		if l, err = c.TryAcquire(bh.ctx, key, ttl); err == nil {
			bh.held = append(bh.held, l)
			return l, nil
		}
		if errStatus(err) == statusDenied || n == stepAttempts || sleepCtx(bh.ctx, retryPause(n)) != nil {
			break
		}
	}
	return nil, err
}

// isTaken asks whether key is held on a majority: the probe tries to take it (and
// releases it at once when it can). A refusal is decisive only when no earlier attempt
// of the probe failed within the last short TTL: such an attempt may have left its own
// keys behind (its cleanup runs in the background), so the probe first waits them out.
func (bh *behaviour) isTaken(key string) (bool, error) {
	var (
		err            error
		leftoversUntil time.Time
	)
	for n := 1; n <= stepAttempts; n++ {
		var l *redlock.Lock
		l, err = bh.probe.TryAcquire(bh.ctx, key, bh.shortTTL)
		switch {
		case err == nil:
			bh.releaseNow(l)
			return false, nil
		case errors.Is(err, redlock.ErrTaken) && !time.Now().Before(leftoversUntil):
			return true, nil
		case errors.Is(err, redlock.ErrTaken):
			if err := sleepCtx(bh.ctx, time.Until(leftoversUntil)); err != nil {
				return false, err
			}
			continue
		case errStatus(err) == statusDenied:
			return false, err
		}
		leftoversUntil = time.Now().Add(bh.shortTTL + bh.shortTTL/10)
		if n < stepAttempts {
			if err := sleepCtx(bh.ctx, retryPause(n)); err != nil {
				return false, err
			}
		}
	}
	return false, err
}

// 1. acquire: client A takes a free lock, with a token and a validity within the TTL.
func (bh *behaviour) checkAcquire() outcome {
	key := bh.key("acquire")
	validateHook(bh.ctx, "acquire:acquire")
	l, err := bh.acquireFree(bh.a, key, bh.ttl)
	if err != nil {
		return undecided(err, "client A could not acquire a free lock: %v", err)
	}
	left := time.Until(l.Deadline())
	switch {
	case l.Token() == "":
		return evidence("client A's lock on %s has no token", key)
	case left > bh.ttl:
		return evidence("client A's lock on %s claims a validity of %v, more than its TTL %v", key, left, bh.ttl)
	case left <= 0:
		return inconclusive("client A's lock on %s expired before it could be checked (this process stalled for the TTL %v)", key, bh.ttl)
	}
	bh.releaseNow(l)
	return passed("client A held %s (TTL %v, validity left %v, fence %d)", key, bh.ttl, left.Round(time.Millisecond), l.Fence())
}

// 2. exclusion: while A holds the lock, B is refused by a majority.
func (bh *behaviour) checkExclusion() outcome {
	key := bh.key("exclusion")
	lockA, err := bh.acquireFree(bh.a, key, bh.ttl)
	if err != nil {
		return undecided(err, "client A could not acquire a free lock to test exclusion with: %v", err)
	}
	defer bh.releaseNow(lockA)
	validateHook(bh.ctx, "exclusion:attempt")
	start := time.Now()
	lockB, err := bh.b.TryAcquire(bh.ctx, key, bh.ttl)
	switch {
	case err == nil:
		bh.held = append(bh.held, lockB)
		if start.Before(lockA.Deadline()) {
			return evidence("client B acquired %s while client A held it (A's validity had %v left): two holders at once",
				key, lockA.Deadline().Sub(start).Round(time.Millisecond))
		}
		return inconclusive("client B acquired %s only after client A's validity had ended (this process stalled for the TTL)", key)
	case errors.Is(err, redlock.ErrTaken):
		return passed("client B was refused while A held the lock (%v)", err)
	}
	return undecided(err, "client B's attempt was neither granted nor refused by a majority: %v", err)
}

// 3. release frees the lock at once (no wait for the TTL).
func (bh *behaviour) checkRelease() outcome {
	key := bh.key("release")
	lockA, err := bh.acquireFree(bh.a, key, bh.ttl)
	if err != nil {
		return undecided(err, "client A could not acquire a free lock to release: %v", err)
	}
	validateHook(bh.ctx, "release:release")
	if err := lockA.Release(bh.ctx); err != nil {
		if errors.Is(err, redlock.ErrLost) {
			return evidence("client A's release found %s no longer A's on a majority (another token or none) while A's validity ran: %v", key, err)
		}
		return undecided(err, "client A's release was not confirmed by a majority: %v", err)
	}
	validateHook(bh.ctx, "release:probe")
	taken, err := bh.isTaken(key)
	switch {
	case err != nil:
		return undecided(err, "after A released, nothing could tell whether %s is free: %v", key, err)
	case taken:
		return evidence("after a majority confirmed client A's release, a majority still refused %s: the lock is held by another token", key)
	}
	return passed("after A released, the lock was free at once")
}

// makePair has A take a short lock and B wait for it (A never releases): B must get it
// only after A's validity ended.
func (bh *behaviour) makePair() (*expiredPair, outcome) {
	key := bh.key("expiry")
	stale, err := bh.acquireFree(bh.a, key, bh.shortTTL)
	if err != nil {
		return nil, undecided(err, "client A could not acquire %s: %v", key, err)
	}
	validateHook(bh.ctx, "expiry:wait")
	before := bh.b.tally(redlock.OpAcquire, key)
	waitCtx, cancel := context.WithTimeout(bh.ctx, bh.shortTTL*4+2*time.Second)
	successor, err := bh.b.Acquire(waitCtx, key, bh.ttl)
	cancel()
	if err != nil {
		if bh.ctx.Err() != nil {
			return nil, undecided(bh.ctx.Err(), "%v", bh.ctx.Err())
		}
		t := bh.b.tally(redlock.OpAcquire, key).minus(before)
		if errors.Is(err, redlock.ErrTaken) && t.errors == 0 && bh.b.tally(redlock.OpCleanup, key).errors == 0 {
			// Every master answered every attempt, and a majority kept refusing: A's
			// key outlived its TTL (no leftover of B's own can explain it).
			return nil, evidence("client A's %v lock on %s was still held on a majority long after its TTL: %v", bh.shortTTL, key, err)
		}
		return nil, undecided(err, "client B could not acquire %s after client A's %v lock expired: %v", key, bh.shortTTL, err)
	}
	gotAt := time.Now()
	bh.held = append(bh.held, successor)
	p := &expiredPair{key: key, stale: stale, successor: successor}
	if gotAt.Before(stale.Deadline()) {
		return p, evidence("client B acquired %s %v before client A's validity ended: two holders at once",
			key, stale.Deadline().Sub(gotAt).Round(time.Millisecond))
	}
	return p, passed("client A's %v lock expired unreleased; client B acquired it %v after A's validity ended",
		bh.shortTTL, gotAt.Sub(stale.Deadline()).Round(time.Millisecond))
}

// 4. expiry: A's short lock expires by itself and B then gets it, never before A's
// validity ended.
func (bh *behaviour) checkExpiry() outcome {
	p, res := bh.makePair()
	bh.pair = p
	return res
}

// pairFor returns the expired pair of the expiry check, or a new one when a retry (or a
// failed check) used it up.
func (bh *behaviour) pairFor() (*expiredPair, outcome) {
	if bh.pair != nil && !bh.pair.successorReleased {
		return bh.pair, outcome{status: statusOK}
	}
	p, res := bh.makePair()
	if res.status != statusOK {
		return nil, res
	}
	bh.pair = p
	return p, res
}

// 5. only the owner extends: A's stale handle is refused, B's extension moves B's
// deadline later.
func (bh *behaviour) checkExtend() outcome {
	p, res := bh.pairFor()
	if p == nil {
		return res
	}
	validateHook(bh.ctx, "extend:extend")
	staleErr := p.stale.Extend(bh.ctx, bh.ttl)
	if staleErr == nil {
		return evidence("client A extended a lock that had expired and belongs to client B")
	}
	before := p.successor.Deadline()
	if err := p.successor.Extend(bh.ctx, bh.ttl); err != nil {
		bh.pair = nil
		if errors.Is(err, redlock.ErrLost) && time.Now().Before(before) {
			return evidence("client B's valid lock on %s is held by another token on a majority: %v", p.key, err)
		}
		return undecided(err, "client B could not extend its own lock: %v", err)
	}
	if !p.successor.Deadline().After(before) {
		return evidence("client B's extension was confirmed but its deadline did not move (%v)", p.successor.Deadline())
	}
	return passed("client B extended its lock (validity left %v); client A's stale extend was refused (%v)",
		time.Until(p.successor.Deadline()).Round(time.Millisecond), staleErr)
}

// 6. owner-only release: A's stale handle runs the release script on the masters with
// its own token; they must refuse, and B's lock must stay.
func (bh *behaviour) checkOwnerOnlyRelease() outcome {
	p, res := bh.pairFor()
	if p == nil {
		return res
	}
	bh.pair = nil // A's stale handle is used up
	before := bh.a.tally(redlock.OpRelease, p.key)
	validateHook(bh.ctx, "owner-only release:release")
	relErr := p.stale.Release(bh.ctx)
	t := bh.a.tally(redlock.OpRelease, p.key).minus(before)
	// A master that deleted (a vote) still held A's own token: compare-and-delete removes
	// nothing else. That is a copy of A's that outlived A's validity there (its SET arrived
	// late on a busy master), where B has no copy; not evidence. Whether B's lock survived
	// is what the probe below decides, over the masters.
	validateHook(bh.ctx, "owner-only release:probe")
	taken, err := bh.isTaken(p.key)
	switch {
	case err != nil:
		return undecided(err, "after client A's stale release, nothing could tell whether client B still holds %s: %v", p.key, err)
	case !taken && time.Now().Before(p.successor.Deadline()):
		return evidence("client A's stale release (err=%v) freed client B's lock on %s while B's validity ran", relErr, p.key)
	case !taken:
		return inconclusive("client B's validity ended before the probe (this process stalled), so whether A's stale release freed it is unknown")
	case t.refusals == 0:
		return undecided(relErr, "no master answered client A's stale release, so its refusal was not observed: %v", relErr)
	}
	if t.votes > 0 {
		return passed("client A's stale release was refused by %d master(s) and removed only its own late copy on %d; client B's lock stayed in place", t.refusals, t.votes)
	}
	return passed("client A's stale release was refused by %d master(s), none deleted the key; client B's lock stayed in place", t.refusals)
}

// 7. fencing: every acquisition of a key gets a larger token than the one before.
func (bh *behaviour) checkFencing() outcome {
	p, res := bh.pairFor()
	if p == nil {
		return res
	}
	bh.pair = nil
	p.successorReleased = true
	fences := []uint64{p.stale.Fence(), p.successor.Fence()}
	validateHook(bh.ctx, "fencing:acquisitions")
	if err := p.successor.Release(bh.ctx); err != nil {
		if errors.Is(err, redlock.ErrLost) {
			return evidence("client B's release found %s no longer B's on a majority (another token or none) while B's validity ran: %v", p.key, err)
		}
		return undecided(err, "client B's release was not confirmed by a majority: %v", err)
	}
	for i := 0; i < 4; i++ {
		c := []*validateLocker{bh.a, bh.b}[i%2]
		l, err := bh.acquireFree(c, p.key, bh.shortTTL)
		if err != nil {
			return undecided(err, "acquisition %d of %s failed: %v", len(fences)+1, p.key, err)
		}
		fences = append(fences, l.Fence())
		bh.releaseNow(l)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			return evidence("tokens of %d successive holders do not increase: %v", len(fences), fences)
		}
	}
	return passed("tokens of %d successive holders: %v", len(fences), fences)
}
