package validation

import (
	"cmp"
	"context"
	cryptorand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/overlap"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// ContentionStats summarises the contention phase (its last attempt).
type ContentionStats struct {
	Clients      int      `json:"clients"`
	DurationMS   int64    `json:"duration_ms"`
	Status       string   `json:"status"` // ok, FAIL (violations), INCONCLUSIVE, DENIED
	Attempts     int      `json:"attempts"`
	Acquisitions int      `json:"acquisitions"`
	Refusals     int      `json:"refusals"`
	Errors       int      `json:"errors"`
	Violations   int      `json:"violations"`
	LatencyP50MS float64  `json:"latency_p50_ms"`
	LatencyP99MS float64  `json:"latency_p99_ms"`
	FirstError   string   `json:"first_error,omitempty"`
	ViolationLog []string `json:"violation_log,omitempty"`

	deniedErr error // the first refusal of the credentials, if any
}

// runRedlockPhases runs phases 2 and 3 with the Redlock library on keys no real user has
// (<key prefix>redlock-kit:validate:<random>:...), files their outcomes in res, and deletes the keys
// (and their fence registers) at the end with the admin user: the lock user may not DEL.
func runRedlockPhases(ctx context.Context, o *validateOptions, w io.Writer, res *Report) error {
	prefix := o.cfg.KeyPrefix + "redlock-kit:validate:" + validateRandomID()
	var closing sync.WaitGroup // Redlock clients still closing
	defer cleanupValidateKeys(ctx, o, prefix, w, &closing)

	o.identity = newIdentityWatch(ctx, o, res.Audit, prefix+":identity")
	fmt.Fprintf(w, "\n[2/4] Redlock behaviour (keys %s:*)\n", prefix)
	validateHook(ctx, "behaviour")
	checks, err := runBehaviour(ctx, o, prefix, &closing)
	if err != nil {
		return err
	}
	res.Behaviour = checks
	denied := false
	for _, c := range checks {
		st := checkStatus(c.Status)
		denied = denied || st == statusDenied
		res.add(st, fmt.Sprintf("Redlock behaviour %q: %s", c.Name, c.Detail))
		fmt.Fprintf(w, "  %-4s %-20s %s\n", c.Status, c.Name, c.Detail)
	}

	fmt.Fprintf(w, "\n[3/4] Contention: %d clients for %v on one key\n", o.clients, o.duration)
	if denied {
		fmt.Fprintf(w, "  skipped: the masters refused the lock user in phase 2\n")
		return nil
	}
	validateHook(ctx, "contention")
	// The same clients, connections open, for every attempt (a new key each): like the
	// processes of an application, which keep their Client.
	lockers, err := newValidateLockers(ctx, o, o.clients)
	if err != nil {
		return err
	}
	defer closeLockers(lockers, &closing)
	var stats *ContentionStats
	for attempt := 1; ; attempt++ {
		stats, err = runContention(ctx, o, lockers, fmt.Sprintf("%s:contended:%d", prefix, attempt))
		if err != nil {
			return err
		}
		stats.Attempts = attempt
		fmt.Fprintf(w, "  acquisitions %d, refusals %d, errors %d, violations %d, acquire latency p50 %.2fms p99 %.2fms\n",
			stats.Acquisitions, stats.Refusals, stats.Errors, stats.Violations, stats.LatencyP50MS, stats.LatencyP99MS)
		if stats.FirstError != "" {
			fmt.Fprintf(w, "  first error: %s\n", stats.FirstError)
		}
		for _, v := range stats.ViolationLog {
			fmt.Fprintf(w, "    violation: %s\n", v)
		}
		st, finding := stats.judge(o)
		stats.Status = string(st)
		if st != statusInconclusive || attempt == contentionAttempts {
			res.Contention = stats
			res.add(st, finding)
			return nil
		}
		pause := retryPause(attempt).Round(time.Millisecond)
		fmt.Fprintf(w, "  no client acquired the lock; running the phase again in %v (attempt %d of %d)\n", pause, attempt+1, contentionAttempts)
		if err := sleepCtx(ctx, pause); err != nil {
			return err
		}
	}
}

// judge decides the phase: any overlap is evidence; no acquisition at all is a refusal of
// the credentials or inconclusive (masters not answering), never evidence.
func (s *ContentionStats) judge(o *validateOptions) (checkStatus, string) {
	switch {
	case s.Violations > 0:
		return statusFailed, fmt.Sprintf("Contention: %d mutual-exclusion violation(s) among %d acquisitions: two clients held the lock at once (first: %s).",
			s.Violations, s.Acquisitions, s.ViolationLog[0])
	case s.Acquisitions > 0:
		return statusOK, ""
	case s.deniedErr != nil:
		return statusDenied, fmt.Sprintf("Contention: the masters refused the lock user: %v", s.deniedErr)
	}
	return statusInconclusive, fmt.Sprintf("Contention: no client acquired the lock in %v (%d refusals, %d errors; first error: %s): the masters did not hand out locks, so the overlap check saw nothing.",
		o.duration, s.Refusals, s.Errors, orNone(s.FirstError))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// contentionTTL is the lock TTL of phase 3: long enough that a slow machine does not make
// every hold expire, short enough that a hold lost to a crash frees quickly.
func contentionTTL(maxTTL time.Duration) time.Duration { return min(maxTTL, 2*time.Second) }

// runContention has the independent clients lockers compete for one key for o.duration.
// Every hold is recorded as [acquired, min(validity deadline, release start)] on this
// process's monotonic clock; the overlap checker then looks for two holders at once and
// for fencing tokens that do not increase.
func runContention(ctx context.Context, o *validateOptions, lockers []*validateLocker, key string) (*ContentionStats, error) {
	ttl := contentionTTL(o.cfg.MaxLockTTL.Duration)
	checker := overlap.New()
	stats := &ContentionStats{Clients: o.clients, DurationMS: o.duration.Milliseconds()}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		firstErr  error
	)
	end := time.Now().Add(o.duration)
	var wg sync.WaitGroup
	for _, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && time.Now().Before(end) {
				actx, cancel := context.WithDeadline(ctx, end)
				start := time.Now()
				lock, err := l.Acquire(actx, key, ttl)
				cancel()
				acquired := time.Now()
				if err != nil {
					ended := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
					mu.Lock()
					switch {
					case errStatus(err) == statusDenied:
						stats.Errors++
						if stats.deniedErr == nil {
							stats.deniedErr = err
						}
						firstErr = cmp.Or(firstErr, err)
					case ended && !errors.Is(err, redlock.ErrUnavailable):
						// the phase ended while waiting for a holder: not a refusal, not an error
					case errors.Is(err, redlock.ErrTaken):
						stats.Refusals++
					default:
						stats.Errors++
						firstErr = cmp.Or(firstErr, err)
					}
					denied := stats.deniedErr != nil
					mu.Unlock()
					if denied {
						return // every attempt would be refused the same way
					}
					continue
				}
				// The holder's critical section: a brief piece of work, as real users have.
				time.Sleep(time.Duration(rand.Int64N(int64(time.Millisecond))))
				releaseStart := time.Now()
				checker.Record(key, lock.Token(), acquired, minTime(releaseStart, lock.Deadline()), lock.Fence())
				rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				relErr := lock.Release(rctx)
				rcancel()
				mu.Lock()
				stats.Acquisitions++
				latencies = append(latencies, acquired.Sub(start))
				if relErr != nil {
					stats.Errors++
					firstErr = cmp.Or(firstErr, error(fmt.Errorf("release: %w", relErr)))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, v := range checker.Violations() {
		stats.Violations++
		stats.ViolationLog = append(stats.ViolationLog, v.String())
	}
	stats.LatencyP50MS = audit.Millis(percentile(latencies, 0.50))
	stats.LatencyP99MS = audit.Millis(percentile(latencies, 0.99))
	if firstErr != nil {
		stats.FirstError = firstErr.Error()
	}
	return stats, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// percentile is the nearest-rank percentile of ds (0 for none).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(math.Ceil(p*float64(len(s)))) - 1
	return s[max(0, min(rank, len(s)-1))]
}

// validateRandomID names this run's keys: 8 random bytes, hex.
func validateRandomID() string {
	var b [8]byte
	_, _ = cryptorand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// cleanupValidateKeys deletes every key of this run (locks left by a failed check, fencing
// registers, which have no TTL) on every master, as the admin user.
func cleanupValidateKeys(hookCtx context.Context, o *validateOptions, prefix string, w io.Writer, closing *sync.WaitGroup) {
	validateHook(hookCtx, "cleanup")
	closing.Wait() // their last writes (cleanups, late acquisitions) land before the deletes
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	deleted := 0
	var errs []string
	for _, ep := range o.cfg.Endpoints {
		opt := ClientOptions(o.cfg, ep, o.dialer)
		opt.Username, opt.Password = o.cfg.AdminUsername, o.cfg.AdminPassword
		c := redis.NewClient(opt)
		iter := c.Scan(ctx, 0, prefix+":*", 100).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		err := iter.Err()
		if err == nil && len(keys) > 0 {
			var n int64
			n, err = c.Del(ctx, keys...).Result()
			deleted += int(n)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", ep, err))
		}
		_ = c.Close()
	}
	if len(errs) > 0 {
		fmt.Fprintf(w, "\n  cleanup: could not delete the test keys %s:* on %s\n", prefix, strings.Join(errs, "; "))
		return
	}
	fmt.Fprintf(w, "\n  cleanup: deleted %d test key(s) %s:* across the masters\n", deleted, prefix)
}
