// Package bench measures Redlock implementations side by side against the same masters:
// this project's library (lockagent/redlock), go-redsync/redsync v4 with its default
// settings, and a bare go-redis fan-out that is the floor any implementation pays.
//
// It is what `lockagent bench` (and `make bench`) runs. Numbers are printed, never
// asserted: the tests only check that every implementation produced results.
package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Implementation names, in table order.
const (
	Lockagent = "lockagent"
	Redsync   = "redsync"
	Floor     = "floor"
)

// AllImplementations is every implementation, in table order.
var AllImplementations = []string{Lockagent, Redsync, Floor}

// Config describes one benchmark run. Zero values get the defaults noted.
type Config struct {
	// NewClients returns fresh clients, one per master, for one implementation; it is
	// called once per implementation so that each has its own connection pools.
	NewClients func() []*redis.Client
	// Implementations to run, in table order; AllImplementations when empty.
	Implementations []string
	// Iterations of the sequential scenario (1000).
	Iterations int
	// Duration of each concurrent scenario, per implementation (5s).
	Duration time.Duration
	// Goroutines on distinct keys in the throughput scenario (64).
	Goroutines int
	// Contenders for one key in the contention scenario (16), each holding it for Hold (1ms).
	Contenders int
	Hold       time.Duration
	// TTL of every lock (10s): the same for every implementation.
	TTL time.Duration
	// KeyPrefix keeps the run's keys apart from anything else on the masters.
	KeyPrefix string
	// Log receives progress; nothing is logged when nil.
	Log *slog.Logger
}

func (c *Config) defaults() {
	if len(c.Implementations) == 0 {
		c.Implementations = AllImplementations
	}
	if c.Iterations <= 0 {
		c.Iterations = 1000
	}
	if c.Duration <= 0 {
		c.Duration = 5 * time.Second
	}
	if c.Goroutines <= 0 {
		c.Goroutines = 64
	}
	if c.Contenders <= 0 {
		c.Contenders = 16
	}
	if c.Hold <= 0 {
		c.Hold = time.Millisecond
	}
	if c.TTL <= 0 {
		c.TTL = 10 * time.Second
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// Sequential is one goroutine acquiring and releasing one key, Iterations times.
type Sequential struct {
	P50, P99      time.Duration // acquire+release pair latency
	AllocsPerOp   float64       // heap allocations per acquire+release (whole process)
	BytesPerOp    float64
	Errors        int
	Ops           int
	ErrorExamples []string
}

// Throughput is Goroutines goroutines, each acquiring and releasing its own key.
type Throughput struct {
	Goroutines    int
	Ops           int // completed acquire+release pairs
	Errors        int
	Elapsed       time.Duration
	PerSecond     float64
	ErrorExamples []string
}

// Contention is Contenders goroutines competing for one key with the implementation's
// own retry policy, each holding it for Hold once acquired.
type Contention struct {
	Contenders   int
	Acquisitions int
	PerSecond    float64
	P50Wait      time.Duration // from the first attempt to the acquisition
	P99Wait      time.Duration
	MaxWait      time.Duration
	// Failed counts lock calls that gave up (retry limit) before the window ended; calls
	// cut short by the end of the window are not counted anywhere (censored).
	Failed int
	// Jain is Jain's fairness index over acquisitions per goroutine (1 = perfectly even,
	// 1/n = one goroutine got everything); MinPer/MaxPer are the extremes.
	Jain           float64
	MinPer, MaxPer int
	ErrorExamples  []string
}

// Result is every scenario of one implementation. Contention is nil for the floor,
// which has no retry policy and so cannot wait for a taken lock.
type Result struct {
	Name       string
	Sequential *Sequential
	Throughput *Throughput
	Contention *Contention
}

// Report is a whole run.
type Report struct {
	Config  Config
	Results []*Result
}

// Result returns the named implementation's result, or nil.
func (r *Report) Result(name string) *Result {
	for _, res := range r.Results {
		if res.Name == name {
			return res
		}
	}
	return nil
}

// Run measures every configured implementation, one after another, on the same masters.
// It stops early (returning what it has and ctx's error) when ctx ends.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	if cfg.NewClients == nil {
		return nil, errors.New("bench: Config.NewClients is required")
	}
	rep := &Report{Config: cfg}
	for _, name := range cfg.Implementations {
		res, err := runOne(ctx, cfg, name)
		if res != nil {
			rep.Results = append(rep.Results, res)
		}
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func newLocker(ctx context.Context, name string, clients []*redis.Client) (locker, error) {
	switch name {
	case Lockagent:
		return newLockagent(clients)
	case Redsync:
		return newRedsync(clients), nil
	case Floor:
		return newFloor(ctx, clients)
	}
	return nil, fmt.Errorf("bench: unknown implementation %q; want one of %v", name, AllImplementations)
}

func runOne(ctx context.Context, cfg Config, name string) (*Result, error) {
	clients := cfg.NewClients()
	l, err := newLocker(ctx, name, clients)
	if err != nil {
		_ = closeAll(clients)
		return nil, err
	}
	defer l.close()
	prefix := fmt.Sprintf("%s%s:", cfg.KeyPrefix, name)
	res := &Result{Name: name}

	cfg.Log.Info("bench: sequential", "impl", name, "iterations", cfg.Iterations)
	if res.Sequential, err = runSequential(ctx, cfg, l, prefix+"seq"); err != nil {
		return res, err
	}
	cfg.Log.Info("bench: throughput", "impl", name, "goroutines", cfg.Goroutines, "duration", cfg.Duration)
	if res.Throughput, err = runThroughput(ctx, cfg, l, prefix+"tp:"); err != nil {
		return res, err
	}
	if l.retries() {
		cfg.Log.Info("bench: contention", "impl", name, "contenders", cfg.Contenders, "duration", cfg.Duration)
		if res.Contention, err = runContention(ctx, cfg, l, prefix+"contended"); err != nil {
			return res, err
		}
	}
	return res, nil
}

// releaseCtx bounds a release so that the end of a measuring window never leaves a lock
// behind for the next scenario.
func releaseCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

func runSequential(ctx context.Context, cfg Config, l locker, key string) (*Sequential, error) {
	// Warm up: connections dialled, scripts loaded, pools grown.
	for range 50 {
		if unlock, err := l.lock(ctx, key, cfg.TTL); err == nil {
			rctx, cancel := releaseCtx()
			_ = unlock(rctx)
			cancel()
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &Sequential{}
	lat := make([]time.Duration, 0, cfg.Iterations)
	var errs errorSamples
	rctx, cancel := releaseCtx()
	defer cancel()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range cfg.Iterations {
		if ctx.Err() != nil {
			break
		}
		start := time.Now()
		unlock, err := l.lock(ctx, key, cfg.TTL)
		if err == nil {
			err = unlock(rctx)
		}
		elapsed := time.Since(start)
		if err != nil {
			errs.add(err)
			continue
		}
		lat = append(lat, elapsed)
	}
	runtime.ReadMemStats(&after)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.Ops = len(lat) + errs.n
	s.Errors = errs.n
	s.ErrorExamples = errs.examples
	if s.Ops > 0 {
		s.AllocsPerOp = float64(after.Mallocs-before.Mallocs) / float64(s.Ops)
		s.BytesPerOp = float64(after.TotalAlloc-before.TotalAlloc) / float64(s.Ops)
	}
	s.P50, s.P99 = percentile(lat, 0.50), percentile(lat, 0.99)
	return s, nil
}

func runThroughput(ctx context.Context, cfg Config, l locker, keyPrefix string) (*Throughput, error) {
	// Warm up every goroutine's key once so that pools are grown before timing starts.
	var wg sync.WaitGroup
	for g := range cfg.Goroutines {
		wg.Go(func() {
			if unlock, err := l.lock(ctx, fmt.Sprintf("%s%d", keyPrefix, g), cfg.TTL); err == nil {
				rctx, cancel := releaseCtx()
				_ = unlock(rctx)
				cancel()
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	window, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var ops atomic.Int64
	var errs errorSamples
	start := time.Now()
	for g := range cfg.Goroutines {
		key := fmt.Sprintf("%s%d", keyPrefix, g)
		wg.Go(func() {
			for window.Err() == nil {
				unlock, err := l.lock(window, key, cfg.TTL)
				if err == nil {
					rctx, cancel := releaseCtx()
					err = unlock(rctx)
					cancel()
				}
				if err != nil {
					if window.Err() == nil {
						errs.add(err)
					}
					continue
				}
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := &Throughput{Goroutines: cfg.Goroutines, Ops: int(ops.Load()), Errors: errs.n,
		ErrorExamples: errs.examples, Elapsed: elapsed}
	t.PerSecond = float64(t.Ops) / elapsed.Seconds()
	return t, nil
}

func runContention(ctx context.Context, cfg Config, l locker, key string) (*Contention, error) {
	window, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	perGoroutine := make([]int, cfg.Contenders)
	waits := make([][]time.Duration, cfg.Contenders)
	failed := make([]int, cfg.Contenders)
	var errs errorSamples
	var wg sync.WaitGroup
	start := time.Now()
	for g := range cfg.Contenders {
		wg.Go(func() {
			for window.Err() == nil {
				t0 := time.Now()
				unlock, err := l.lock(window, key, cfg.TTL)
				wait := time.Since(t0)
				if err != nil {
					if window.Err() == nil {
						failed[g]++
						errs.add(err)
					}
					continue
				}
				perGoroutine[g]++
				waits[g] = append(waits[g], wait)
				time.Sleep(cfg.Hold)
				rctx, cancel := releaseCtx()
				if err := unlock(rctx); err != nil {
					errs.add(err)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := &Contention{Contenders: cfg.Contenders, ErrorExamples: errs.examples}
	var all []time.Duration
	for g := range cfg.Contenders {
		c.Acquisitions += perGoroutine[g]
		c.Failed += failed[g]
		all = append(all, waits[g]...)
	}
	c.PerSecond = float64(c.Acquisitions) / elapsed.Seconds()
	c.P50Wait, c.P99Wait = percentile(all, 0.50), percentile(all, 0.99)
	if len(all) > 0 {
		c.MaxWait = slices.Max(all)
	}
	c.Jain, c.MinPer, c.MaxPer = fairness(perGoroutine)
	return c, nil
}

// percentile returns the q-quantile (nearest rank) of d; d is sorted in place.
func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	rank := int(math.Ceil(q*float64(len(d)))) - 1
	return d[max(0, min(rank, len(d)-1))]
}

// fairness returns Jain's index (sum x)^2 / (n * sum x^2) and the extremes of counts.
func fairness(counts []int) (jain float64, minPer, maxPer int) {
	if len(counts) == 0 {
		return 0, 0, 0
	}
	var sum, sumSq float64
	for _, c := range counts {
		sum += float64(c)
		sumSq += float64(c) * float64(c)
	}
	if sumSq > 0 {
		jain = sum * sum / (float64(len(counts)) * sumSq)
	}
	return jain, slices.Min(counts), slices.Max(counts)
}

// errorSamples counts errors and keeps the first few distinct messages for the report.
type errorSamples struct {
	mu       sync.Mutex
	n        int
	examples []string
}

func (e *errorSamples) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	msg := err.Error()
	if len(e.examples) < 3 && !slices.Contains(e.examples, msg) {
		e.examples = append(e.examples, msg)
	}
}
