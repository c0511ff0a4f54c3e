package bench

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// lockagentLocker is this project's library: Acquire waits with its own retry policy
// (release notifications, jitter). Default options, or without fencing tokens
// (LockagentNoFence) to show what they cost.
type lockagentLocker struct {
	clients []*redis.Client
	c       *redlock.Client
	fenced  bool
}

func newLockagent(clients []*redis.Client, opts redlock.Options) (*lockagentLocker, error) {
	masters := make([]redis.UniversalClient, len(clients))
	for i, c := range clients {
		masters[i] = c
	}
	c, err := redlock.New(masters, opts)
	if err != nil {
		return nil, err
	}
	return &lockagentLocker{clients: clients, c: c, fenced: !opts.NoFencing}, nil
}

func (l *lockagentLocker) lock(ctx context.Context, key string, ttl time.Duration) (unlockFunc, error) {
	lk, err := l.c.Acquire(ctx, key, ttl)
	if err != nil {
		return nil, err
	}
	return lk.Release, nil
}

// lockFenced is lock plus the acquisition's fencing token (the cross-process scenario
// checks their order).
func (l *lockagentLocker) lockFenced(ctx context.Context, key string, ttl time.Duration) (uint64, unlockFunc, error) {
	lk, err := l.c.Acquire(ctx, key, ttl)
	if err != nil {
		return 0, nil, err
	}
	return lk.Fence(), lk.Release, nil
}

func (l *lockagentLocker) fences() bool  { return l.fenced }
func (l *lockagentLocker) retries() bool { return true }

func (l *lockagentLocker) close() error {
	err := l.c.Close()
	if cerr := closeAll(l.clients); err == nil {
		err = cerr
	}
	return err
}
