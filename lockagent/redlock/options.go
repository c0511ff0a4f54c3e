package redlock

import (
	"fmt"
	"time"
)

// Defaults used when an Options field is zero.
const (
	DefaultMaxTTL         = 30 * time.Second // the kit's default max_lock_ttl
	DefaultDriftFactor    = 0.01
	DefaultRetryDelayMin  = 2 * time.Millisecond
	DefaultRetryDelayMax  = 200 * time.Millisecond
	DefaultMaxExtensions  = 100
	DefaultCleanupTimeout = 2 * time.Second
	DefaultMaxBatch       = 256

	// driftConstant is added to TTL*DriftFactor: the granularity of Redis expiry (1 ms)
	// plus a millisecond of slack.
	driftConstant = 2 * time.Millisecond
	// Node timeout derived from the TTL when Options.NodeTimeout is zero:
	// clamp(ttl/200, 10ms, 50ms). A 10 s lock waits at most 50 ms for a dead master
	// (5-50 ms is the usual advice); short locks get 10 ms rather than 5 ms because one fsync on a
	// busy disk already takes several milliseconds and a too-short timeout turns a
	// healthy master into a "failed" vote.
	nodeTimeoutDivisor = 200
	minNodeTimeout     = 10 * time.Millisecond
	maxNodeTimeout     = 50 * time.Millisecond
)

// Options configure a Client. The zero value is safe: every zero field takes the default
// documented on it.
type Options struct {
	// NodeTimeout bounds the wait for one master's reply in every round (acquire, fence,
	// extend, release). Zero derives it from the lock's TTL: clamp(ttl/200, 10ms, 50ms).
	// It must stay much smaller than the TTL: the validity of a lock is TTL minus the time
	// the slowest needed master took.
	NodeTimeout time.Duration
	// MaxTTL refuses longer TTLs (ErrTTLTooLong). Set it to the deployment's max_lock_ttl:
	// the delayed restart of a crashed master only protects locks no longer than that.
	// Default 30 s.
	MaxTTL time.Duration
	// RetryDelayMin and RetryDelayMax bound the random delay Acquire waits between
	// attempts when it has no better information (release notification, key expiry).
	// Defaults 2 ms and 200 ms.
	RetryDelayMin, RetryDelayMax time.Duration
	// MaxRetries caps the retries of Acquire after its first attempt; zero means no cap:
	// Acquire then waits until the lock is free or ctx ends.
	MaxRetries int
	// DriftFactor is the clock-rate error allowed between processes; the drift subtracted
	// from every validity is TTL*DriftFactor + 2ms. Default 0.01.
	DriftFactor float64
	// KeyPrefix is prepended to every lock name. Empty: the key is the name as given, so
	// other Redlock clients using the same name exclude this one.
	KeyPrefix string
	// MaxExtensions bounds how many times one acquisition may be extended (Extend and
	// auto-renewal together); an unbounded holder would cost liveness. Default 100.
	MaxExtensions int
	// CleanupTimeout bounds the releases sent after a failed or cancelled acquisition
	// (the caller's cancellation does not cut them short) and every pipeline sent to a
	// master (each pipeline gets between half of it and all of it). Default 2 s.
	CleanupTimeout time.Duration
	// MaxBatch bounds how many waiting operations one pipeline to a master carries.
	// Default 256. Each master also queues at most 16*MaxBatch operations: beyond that (a
	// stuck master) an operation counts that master as a node timeout at once rather than
	// wait, so raise MaxBatch if one Client runs more operations than that at once.
	MaxBatch int
	// NoFencing turns fencing tokens off: Lock.Fence returns 0, the acquisition is a plain
	// SET NX PX (no script, no register write) and never needs the fallback fence round.
	NoFencing bool
	// NoNotifications turns off release notifications (PUBLISH on release, SUBSCRIBE while
	// waiting); Acquire then waits for expiry or the retry delay only.
	NoNotifications bool
	// NoWaitQueue turns the wait queue off (see "Waiting across processes" in the package
	// doc): a waiting Acquire then retries on release notifications, expiry and its retry
	// delay only, and waiters in other processes compete for each release. Releases still
	// hand the lock to other Clients' queued waiters. The queue needs notifications:
	// NoNotifications turns it off too.
	NoWaitQueue bool
	// DurableRelease logs every release to the AOF, so that each master fsyncs the DEL
	// before it answers (one more fsync per release, as with other Redlock clients).
	// By default a release is applied in memory only (redis.set_repl(REPL_NONE) in the
	// release script): a crash or a clean restart within the TTL then brings the released
	// key back on that master until its original expiry, which can only delay other
	// acquirers on that master, never admit two holders (doc.go, "Releases are not
	// logged"). Set it when the masters have replicas (not a Redlock deployment: the
	// replicas would keep released keys), or when a restarted master must not hold
	// released keys until they expire.
	DurableRelease bool
	// Hooks receive per-master and per-operation events; nil means none.
	Hooks Hooks
}

// withDefaults fills zero fields and rejects nonsense, naming the field and the fix.
func (o Options) withDefaults() (Options, error) {
	if o.MaxTTL == 0 {
		o.MaxTTL = DefaultMaxTTL
	}
	if o.DriftFactor == 0 {
		o.DriftFactor = DefaultDriftFactor
	}
	if o.RetryDelayMin == 0 {
		o.RetryDelayMin = DefaultRetryDelayMin
	}
	if o.RetryDelayMax == 0 {
		o.RetryDelayMax = max(DefaultRetryDelayMax, o.RetryDelayMin)
	}
	if o.MaxExtensions == 0 {
		o.MaxExtensions = DefaultMaxExtensions
	}
	if o.CleanupTimeout == 0 {
		o.CleanupTimeout = DefaultCleanupTimeout
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.Hooks == nil {
		o.Hooks = nopHooks{}
	}
	switch {
	case o.NodeTimeout < 0:
		return o, fmt.Errorf("%w: Options.NodeTimeout %v is negative: use 0 (derived from the TTL) or a positive duration", ErrInvalid, o.NodeTimeout)
	case o.MaxTTL < 0:
		return o, fmt.Errorf("%w: Options.MaxTTL %v is negative: use 0 (default %v) or the deployment's max_lock_ttl", ErrInvalid, o.MaxTTL, DefaultMaxTTL)
	case o.RetryDelayMin < 0 || o.RetryDelayMax < o.RetryDelayMin:
		return o, fmt.Errorf("%w: Options.RetryDelayMin %v / RetryDelayMax %v: need 0 <= min <= max", ErrInvalid, o.RetryDelayMin, o.RetryDelayMax)
	case o.MaxRetries < 0:
		return o, fmt.Errorf("%w: Options.MaxRetries %d is negative: use 0 (no cap, ctx bounds Acquire) or a positive count", ErrInvalid, o.MaxRetries)
	case o.DriftFactor < 0 || o.DriftFactor >= 0.5:
		return o, fmt.Errorf("%w: Options.DriftFactor %v out of range: use 0 (default %v) or a value in (0, 0.5)", ErrInvalid, o.DriftFactor, DefaultDriftFactor)
	case o.MaxExtensions < 0:
		return o, fmt.Errorf("%w: Options.MaxExtensions %d is negative: use 0 (default %d) or a positive bound", ErrInvalid, o.MaxExtensions, DefaultMaxExtensions)
	case o.CleanupTimeout < 0:
		return o, fmt.Errorf("%w: Options.CleanupTimeout %v is negative: use 0 (default %v) or a positive duration", ErrInvalid, o.CleanupTimeout, DefaultCleanupTimeout)
	case o.MaxBatch < 0:
		return o, fmt.Errorf("%w: Options.MaxBatch %d is negative: use 0 (default %d) or a positive size", ErrInvalid, o.MaxBatch, DefaultMaxBatch)
	}
	return o, nil
}

// nodeTimeout is the per-master bound for a lock with this TTL.
func (o Options) nodeTimeout(ttl time.Duration) time.Duration {
	if o.NodeTimeout > 0 {
		return o.NodeTimeout
	}
	return min(max(ttl/nodeTimeoutDivisor, minNodeTimeout), maxNodeTimeout)
}

// drift is the clock-rate allowance subtracted from a validity.
func (o Options) drift(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*o.DriftFactor) + driftConstant
}

// LockOption changes one acquisition.
type LockOption func(*lockConfig)

type lockConfig struct {
	autoRenew bool
	owner     string // non-empty: re-entrant for this owner
	onRetry   func(attempt int, err error)
}

// WithRetryHook makes Acquire call fn after each failed attempt that it is going to
// retry, with the attempt's number (from 1) and error: a *TakenError (FreeIn says when
// the key frees up at the earliest, if its holder stops renewing) or an
// *UnavailableError. Use it to show progress while waiting. fn runs on the caller's
// goroutine: keep it fast.
func WithRetryHook(fn func(attempt int, err error)) LockOption {
	return func(c *lockConfig) { c.onRetry = fn }
}

// WithAutoRenew keeps the lock alive while it is held: it is extended (by its TTL) each
// time a third of the TTL has passed, within Options.MaxExtensions. When renewal fails
// for good (lock lost, limit reached, masters unreachable until the validity ran out),
// Lock.Context is cancelled and context.Cause says why.
func WithAutoRenew() LockOption { return func(c *lockConfig) { c.autoRenew = true } }

// WithReentrant makes the acquisition re-entrant for owner: while this Client holds the
// key for the same owner, acquiring it again returns at once with a new handle on the
// same lock (same token, same fence) and one more hold; the lock is released on the
// masters when the last handle is released. Owners are compared within one Client only;
// another process or Client with the same owner string is a different holder.
//
// A re-entry extends the lock only when its ttl would move the deadline later by more
// than a tenth of ttl (that extension counts in Options.MaxExtensions); at the extension
// limit it still succeeds, with the current deadline (check Lock.Deadline). Combined with
// WithAutoRenew, the re-entry starts auto-renewal of the shared lock.
func WithReentrant(owner string) LockOption { return func(c *lockConfig) { c.owner = owner } }
