package validation

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// Statuses of a behaviour check (BehaviourCheck.Status) or of the contention phase
// (ContentionStats.Status).
const (
	StatusOK = "ok"
	// StatusFailed: evidence that exclusion can break (two holders, a lock still held
	// after its release, a stale holder deleting or extending the new holder's lock,
	// fencing tokens not increasing). Only this makes the verdict UNSAFE.
	StatusFailed = "FAIL"
	// StatusInconclusive: the check could not be decided because masters did not answer
	// (in time), even after retries.
	StatusInconclusive = "INCONCLUSIVE"
	// StatusDenied: a master refused the credentials or the command (WRONGPASS, NOPERM).
	StatusDenied = "DENIED"
	// StatusNotRun: an earlier check could not be decided, so this one was not tried.
	StatusNotRun = "not run"
)

// checkStatus is the outcome of one check or phase of validate.
type checkStatus string

const (
	statusOK           checkStatus = StatusOK
	statusFailed       checkStatus = StatusFailed
	statusInconclusive checkStatus = StatusInconclusive
	statusDenied       checkStatus = StatusDenied
	statusNotRun       checkStatus = StatusNotRun
)

// errStatus classifies an error that left a check undecided: a refusal of the credentials
// or the ACL, or else inconclusive. An error is never evidence by itself: the checks
// decide evidence from what the masters answered.
func errStatus(err error) checkStatus {
	if errors.Is(err, redlock.ErrDenied) || audit.IsDenied(err) {
		return statusDenied
	}
	return statusInconclusive
}

// outcome is one attempt of a check.
type outcome struct {
	status checkStatus
	detail string
}

func passed(format string, args ...any) outcome {
	return outcome{statusOK, fmt.Sprintf(format, args...)}
}

func evidence(format string, args ...any) outcome {
	return outcome{statusFailed, fmt.Sprintf(format, args...)}
}

func inconclusive(format string, args ...any) outcome {
	return outcome{statusInconclusive, fmt.Sprintf(format, args...)}
}

// undecided is the outcome of a step that failed with err: DENIED or INCONCLUSIVE.
func undecided(err error, format string, args ...any) outcome {
	return outcome{errStatus(err), fmt.Sprintf(format, args...)}
}

// Retries. A check whose outcome is inconclusive is run again from the start, on a new
// key, up to checkAttempts times; a step that may simply be repeated (acquiring a lock
// that should be free, probing whether a key is held) is retried within its check up to
// stepAttempts times. Both pause retryPause(n) between attempts.
const (
	checkAttempts      = CheckAttempts
	stepAttempts       = 3
	contentionAttempts = ContentionAttempts
)

// CheckAttempts is how many times a behaviour check runs before it is reported
// INCONCLUSIVE; ContentionAttempts the same for the contention phase.
const (
	CheckAttempts      = 3
	ContentionAttempts = 3
)

// retryPause is the pause after the n-th failed attempt: 100ms doubling, with jitter.
func retryPause(n int) time.Duration {
	base := 100 * time.Millisecond << min(n-1, 5)
	return base + rand.N(base/2+1)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// validateHookKey carries a func(point string) in a context: validate calls it at named
// points of phases 2 and 3 ("release:probe", "contention", "cleanup", ...). Tests use it
// to pause masters at an exact step.
type validateHookKey struct{}

func validateHook(ctx context.Context, point string) {
	if f, ok := ctx.Value(validateHookKey{}).(func(string)); ok {
		f(point)
	}
}

// validateLocker is one Redlock client with its own connections, like a separate process.
// It tallies the masters' answers per round and key, so a check can tell "the masters
// refused" from "the library refused without asking them".
type validateLocker struct {
	*redlock.Client
	conns []*redis.Client

	mu      sync.Mutex
	replies map[replyKey]replyTally
}

type replyKey struct {
	op  redlock.Op
	key string
}

type replyTally struct{ votes, refusals, errors int }

func (t replyTally) minus(u replyTally) replyTally {
	return replyTally{t.votes - u.votes, t.refusals - u.refusals, t.errors - u.errors}
}

func newValidateLocker(o *validateOptions) (*validateLocker, error) {
	l := &validateLocker{conns: lockClients(o), replies: map[replyKey]replyTally{}}
	masters := make([]redis.UniversalClient, len(l.conns))
	for i, c := range l.conns {
		masters[i] = c
	}
	rc, err := redlock.New(masters, redlock.Options{NodeTimeout: o.nodeTimeout, MaxTTL: o.cfg.MaxLockTTL.Duration,
		Hooks: redlock.HookFuncs{OnMasterReply: l.onReply}})
	if err != nil {
		for _, c := range l.conns {
			_ = c.Close()
		}
		return nil, err
	}
	l.Client = rc
	return l, nil
}

// newValidateLockers returns n lockers whose connections are already open. Opening a
// connection is a dial, a TLS handshake, AUTH and the identity marker read: on a busy
// machine that can take longer than a node timeout, and each client of a phase would
// otherwise pay it in its first rounds (a first attempt lost to node timeouts, a latency
// that measures the handshake). Each locker PINGs every master at once, all bounded by
// the audit timeout; a master that does not answer or refuses the user is left to the
// checks, which report it (a PING proves nothing either way).
func newValidateLockers(ctx context.Context, o *validateOptions, n int) ([]*validateLocker, error) {
	lockers := make([]*validateLocker, 0, n)
	for range n {
		l, err := newValidateLocker(o)
		if err != nil {
			for _, l := range lockers {
				l.close()
			}
			return nil, fmt.Errorf("redlock client: %w", err)
		}
		lockers = append(lockers, l)
	}
	wctx, cancel := context.WithTimeout(ctx, o.auditTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, l := range lockers {
		for _, c := range l.conns {
			wg.Add(1)
			go func() { defer wg.Done(); _ = c.Ping(wctx).Err() }()
		}
	}
	wg.Wait()
	return lockers, nil
}

func (l *validateLocker) onReply(e redlock.MasterEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := replyKey{e.Op, e.Key}
	t := l.replies[k]
	switch {
	case e.Err != nil:
		t.errors++
	case e.Vote:
		t.votes++
	default:
		t.refusals++
	}
	l.replies[k] = t
}

func (l *validateLocker) tally(op redlock.Op, key string) replyTally {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.replies[replyKey{op, key}]
}

// closeLockers closes lockers in the background, counted in closing: a Close waits, up
// to the library's cleanup timeout, for the cleanups queued to masters that do not
// answer, so a phase does not wait for it; the key cleanup at the end does (closing.Wait),
// so that no late write lands after it.
func closeLockers(lockers []*validateLocker, closing *sync.WaitGroup) {
	for _, l := range lockers {
		if l != nil {
			closing.Add(1)
			go func() { defer closing.Done(); l.close() }()
		}
	}
}

func (l *validateLocker) close() {
	_ = l.Client.Close()
	for _, c := range l.conns {
		_ = c.Close()
	}
}
