package redlock_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// Benchmarks run against five real masters (appendfsync always) with 64 goroutines:
//
//	go test -run '^$' -bench . -benchtime 3s ./lockagent/redlock/
//
// ns/op is per acquire+release pair.

func benchClient(b *testing.B, cl *redistest.Cluster, opts redlock.Options) *redlock.Client {
	b.Helper()
	var rdbs []redis.UniversalClient
	for _, r := range cl.LockClients() {
		b.Cleanup(func() { _ = r.Close() })
		rdbs = append(rdbs, r)
	}
	c, err := redlock.New(rdbs, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

func parallel64(b *testing.B) {
	b.SetParallelism((64 + testingProcs() - 1) / testingProcs())
}

func BenchmarkAcquireReleaseDistinctKeys(b *testing.B) {
	for _, fencing := range []bool{true, false} {
		b.Run("fencing="+strconv.FormatBool(fencing), func(b *testing.B) {
			cl := redistest.Start(b, redistest.Options{Masters: 5})
			c := benchClient(b, cl, redlock.Options{NoFencing: !fencing})
			var next atomic.Int64
			parallel64(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				key := "bench-" + strconv.FormatInt(next.Add(1), 10)
				ctx := context.Background()
				for pb.Next() {
					l, err := c.TryAcquire(ctx, key, 10*time.Second)
					if err != nil {
						b.Error(err)
						continue
					}
					_ = l.Release(ctx)
				}
			})
		})
	}
}

// BenchmarkOneKeyContended: every goroutine wants the same key; ns/op is one hand-off.
func BenchmarkOneKeyContended(b *testing.B) {
	for _, clients := range []int{1, 4} {
		b.Run("clients="+strconv.Itoa(clients), func(b *testing.B) {
			cl := redistest.Start(b, redistest.Options{Masters: 5})
			var cs []*redlock.Client
			for i := 0; i < clients; i++ {
				cs = append(cs, benchClient(b, cl, redlock.Options{}))
			}
			var next atomic.Int64
			parallel64(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				c := cs[int(next.Add(1))%clients]
				ctx := context.Background()
				for pb.Next() {
					l, err := c.Acquire(ctx, "bench-hot", 10*time.Second)
					if err != nil {
						b.Error(err)
						continue
					}
					_ = l.Release(ctx)
				}
			})
		})
	}
}

func testingProcs() int { return max(1, runtime.GOMAXPROCS(0)) }

// BenchmarkDistinctKeysOneMasterPaused: as BenchmarkAcquireReleaseDistinctKeys (with
// fencing), with one of the five masters stopped (SIGSTOP) for the whole run: every
// round must return at the majority of the four others, so ns/op beside the unpaused
// benchmark is what a stuck master costs a pair.
func BenchmarkDistinctKeysOneMasterPaused(b *testing.B) {
	cl := redistest.Start(b, redistest.Options{Masters: 5})
	c := benchClient(b, cl, redlock.Options{})
	if err := cl.Masters[0].Pause(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cl.Masters[0].Resume() })
	var next atomic.Int64
	parallel64(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := "bench-paused-" + strconv.FormatInt(next.Add(1), 10)
		ctx := context.Background()
		for pb.Next() {
			l, err := c.TryAcquire(ctx, key, 10*time.Second)
			if err != nil {
				b.Error(err)
				continue
			}
			_ = l.Release(ctx)
		}
	})
}
