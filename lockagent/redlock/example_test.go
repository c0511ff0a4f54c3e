package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// Lock a job across three independent masters, keep it alive while the job runs, and
// hand the fencing token to the storage the job writes to.
func Example() {
	// Three real masters for the example; in production, one go-redis client per master
	// of the deployment (agent config "endpoints", lock user credentials).
	cluster, err := redistest.New(redistest.Options{Masters: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cluster.Close()
	var masters []redis.UniversalClient
	for _, rdb := range cluster.LockClients() {
		defer rdb.Close()
		masters = append(masters, rdb)
	}

	// NodeTimeout bounds each master's reply; by default it derives from the TTL (at most
	// 50 ms): set it above the round trips your masters see at their busiest.
	locker, err := redlock.New(masters, redlock.Options{MaxTTL: 30 * time.Second, NodeTimeout: 250 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locker.Close()

	ctx := context.Background()
	lock, err := locker.Acquire(ctx, "jobs:nightly-report", 10*time.Second, redlock.WithAutoRenew())
	if err != nil {
		fmt.Println(err)
		return
	}
	// Run the job under lock.Context(): it ends if the lock is lost or its validity runs
	// out. Writes carry lock.Fence(); the storage rejects a fence lower than one it saw.
	// (A fence's value depends on the attempts before it: compare fences, never expect one.)
	fmt.Println("fenced:", lock.Fence() > 0)

	_, err = locker.TryAcquire(ctx, "jobs:nightly-report", 10*time.Second)
	fmt.Println("held elsewhere:", errors.Is(err, redlock.ErrTaken))

	fmt.Println("release:", lock.Release(ctx))
	fmt.Println("context ended:", errors.Is(context.Cause(lock.Context()), redlock.ErrReleased))

	next, err := locker.Acquire(ctx, "jobs:nightly-report", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer next.Release(ctx)
	fmt.Println("next fence is higher:", next.Fence() > lock.Fence())
	// Output:
	// fenced: true
	// held elsewhere: true
	// release: <nil>
	// context ended: true
	// next fence is higher: true
}
