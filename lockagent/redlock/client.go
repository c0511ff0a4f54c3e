package redlock

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// Key suffixes of the siblings a lock key may have. They are reserved: a lock name ending
// in FenceSuffix or QueueSuffix, or with QueueSuffix+":" in it (a queue's pages), is
// refused.
const (
	// FenceSuffix names the fencing register of a lock: key+FenceSuffix, a plain integer
	// string with no TTL.
	FenceSuffix = lua.FenceSuffix
	// ReleaseChannelSuffix names the pub/sub channel a release publishes on.
	ReleaseChannelSuffix = ":released"
	// QueueSuffix names the wait queue of a lock: key+QueueSuffix, a string key with a TTL
	// written only by this package's scripts, never logged (see doc.go); a long queue goes
	// on in pages, key+QueueSuffix+":<n>".
	QueueSuffix = ":waitq"
	// GrantChannelInfix names the channel on which a release tells a Client that it handed
	// the lock to one of its waiters: key+GrantChannelInfix+<the Client's id>.
	GrantChannelInfix = lua.GrantChannelInfix
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
	id     string          // names this Client's waiters in the wait queues and its grant channels
	seq    atomic.Uint64   // numbers its waiters
	fences *fenceCache     // largest fence seen per key: the optimistic proposal
	timers sync.Pool       // *time.Timer for the rounds' waits
	owned  []*redis.Client // the go-redis clients Open made: Close closes them

	beforeExtendSend func() // tests only: runs in extend just before the broadcast
}

// New returns a Client over masters, one go-redis client per independent master (no
// replicas, no Cluster): an odd number, at least 3 (else a *MasterCountError). The caller
// keeps ownership of the clients and closes them after Client.Close; Open builds them from
// the kit's client file instead. Build each with MasterOptions (or the same settings).
// MaxRetries -1 is required: go-redis must not replay a script the server may have run (a
// replayed release can undo an unlogged hand-off after the master restarts: see the
// package doc). New refuses a client that may resend a command with a
// *RetryingClientError; past New, every command the Client sends tells go-redis not to
// send it again (Cmder.NoRetry), whatever the client's options become. That gates
// go-redis's retries, not hooks: a hook on these clients must not call next twice for a
// command whose NoRetry() is true (New cannot see hooks; Open's clients have none of
// yours).
func New(masters []redis.UniversalClient, opts Options) (*Client, error) {
	for i, m := range masters {
		if m == nil {
			return nil, fmt.Errorf("%w: masters[%d] is nil", ErrInvalid, i)
		}
	}
	if n := len(masters); n < 3 || n%2 == 0 {
		return nil, &MasterCountError{Masters: n}
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
// The go-redis clients given to New are not closed; those Open and NewFromConfig made are.
func (c *Client) Close() (closeErr error) {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		close(c.closing) // stops auto-renewals
		c.bg.Wait()
		c.notify.close()
		for _, m := range c.masters {
			m.close()
		}
		for _, rdb := range c.owned {
			if err := rdb.Close(); err != nil && closeErr == nil {
				closeErr = err
			}
		}
	})
	return closeErr
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
	if strings.Contains(key, QueueSuffix+":") {
		return "", fmt.Errorf("%w: lock name %q has %q in it, which names the pages of wait queues: choose another name", ErrInvalid, name, QueueSuffix+":")
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

func (c *Client) masterEvent(op Op, key string, req *request, vote bool, err error) {
	c.opts.Hooks.MasterReply(MasterEvent{Op: op, Key: key, Master: req.master.index, Addr: req.master.addr,
		Latency: req.latency, Vote: vote, Err: err})
}

// majorityRefused: so many masters said no that a majority can no longer say yes.
func (c *Client) majorityRefused(v votes) bool { return v.refused > len(c.masters)-c.quorum }
