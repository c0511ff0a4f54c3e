package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// unlockFunc releases what a successful lock call acquired.
type unlockFunc func(ctx context.Context) error

// locker is one implementation under test. Every implementation gets its own clients
// (own connection pools), so none warms or starves another's.
type locker interface {
	// lock acquires key with a TTL of ttl, waiting with the implementation's default
	// retry policy (the floor has none: one attempt).
	lock(ctx context.Context, key string, ttl time.Duration) (unlockFunc, error)
	// retries reports whether lock waits for a taken key (contention needs it).
	retries() bool
	close() error
}

// errNotAcquired is the floor's refusal: no majority on its single attempt.
var errNotAcquired = errors.New("bench: lock not acquired")

// redsyncLocker is go-redsync/redsync v4 with its go-redis v9 pool and DEFAULT options
// (32 tries, 50-250 ms random retry delay, drift 0.01, per-node timeout 5% of the TTL).
// A mutex is created per acquisition, as a caller locking a key name would.
type redsyncLocker struct {
	clients []*redis.Client
	rs      *redsync.Redsync
}

func newRedsync(clients []*redis.Client) *redsyncLocker {
	pools := make([]redsyncredis.Pool, len(clients))
	for i, c := range clients {
		pools[i] = redsyncgoredis.NewPool(c)
	}
	return &redsyncLocker{clients: clients, rs: redsync.New(pools...)}
}

func (r *redsyncLocker) lock(ctx context.Context, key string, ttl time.Duration) (unlockFunc, error) {
	m := r.rs.NewMutex(key, redsync.WithExpiry(ttl))
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		ok, err := m.UnlockContext(ctx)
		if err == nil && !ok {
			err = errors.New("redsync: release not confirmed by a majority")
		}
		return err
	}, nil
}

func (r *redsyncLocker) retries() bool { return true }
func (r *redsyncLocker) close() error  { return closeAll(r.clients) }

// floorLocker is the least a correct Redlock round can do with go-redis: SET NX PX to
// every master concurrently, count a majority, check validity, and compare-and-delete
// with EVALSHA. No retries, no multiplexing beyond go-redis's pool. It is the floor
// the library is measured against, not a usable lock.
type floorLocker struct {
	clients []*redis.Client
	quorum  int
}

// floorRelease is the standard compare-and-delete script.
var floorRelease = redis.NewScript(`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`)

// majority is how many of n masters make a majority (n/2+1), as the library counts them.
func majority(n int) int { return n/2 + 1 }

func newFloor(ctx context.Context, clients []*redis.Client) (*floorLocker, error) {
	for _, c := range clients {
		// Loaded once so that every release is a plain EVALSHA.
		if err := floorRelease.Load(ctx, c).Err(); err != nil {
			return nil, fmt.Errorf("floor: SCRIPT LOAD on %s: %w", c.Options().Addr, err)
		}
	}
	return &floorLocker{clients: clients, quorum: majority(len(clients))}, nil
}

func (f *floorLocker) lock(ctx context.Context, key string, ttl time.Duration) (unlockFunc, error) {
	var buf [20]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return nil, err
	}
	token := base64.RawURLEncoding.EncodeToString(buf[:])
	start := time.Now()
	ok := f.fanOut(func(c *redis.Client) bool {
		set, err := c.SetNX(ctx, key, token, ttl).Result()
		return err == nil && set
	})
	drift := time.Duration(float64(ttl)*0.01) + 2*time.Millisecond
	unlock := func(ctx context.Context) error {
		f.fanOut(func(c *redis.Client) bool {
			return floorRelease.EvalSha(ctx, c, []string{key}, token).Err() == nil
		})
		return nil
	}
	if ok < f.quorum || time.Since(start) >= ttl-drift {
		_ = unlock(context.WithoutCancel(ctx))
		return nil, errNotAcquired
	}
	return unlock, nil
}

// fanOut runs op on every master at once and counts the successes.
func (f *floorLocker) fanOut(op func(*redis.Client) bool) int {
	var wg sync.WaitGroup
	results := make([]bool, len(f.clients))
	for i, c := range f.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = op(c)
		}()
	}
	wg.Wait()
	n := 0
	for _, r := range results {
		if r {
			n++
		}
	}
	return n
}

func (f *floorLocker) retries() bool { return false }
func (f *floorLocker) close() error  { return closeAll(f.clients) }

func closeAll(clients []*redis.Client) error {
	var errs []error
	for _, c := range clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
