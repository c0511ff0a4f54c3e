// Package bench measures Redlock implementations side by side against the same masters:
// this project's library (lockagent/redlock), go-redsync/redsync v4 with its default
// settings, and a bare go-redis fan-out that is the floor any implementation pays.
//
// Its cross-process scenario runs worker processes (ServeWorker), each with its own
// client, on one key, and checks every hold against every other on CLOCK_MONOTONIC and
// the fences' order.
//
// It is what `lockagent bench` (and `make bench`) runs. Numbers are printed, never
// asserted: the tests check behaviour only (every implementation produced results; no
// two holds of the worker processes overlapped; fences increased).
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// Implementation names, in table order.
const (
	Lockagent = "lockagent"
	// LockagentNoFence is the library without its fencing round (Options.NoFencing): what
	// a Redlock client without fencing tokens, such as redsync, does per acquisition.
	LockagentNoFence = "lockagent-nofence"
	// LockagentDurable is the library with its releases logged and fsynced
	// (Options.DurableRelease), as every other client's are: it shows what the default
	// unlogged release saves.
	LockagentDurable = "lockagent-durable"
	// LockagentEvalsha is the library with default options on a user that may EVAL but
	// not FCALL (Config.NewEvalClients): its scripts go by EVALSHA, as before the function
	// library; Lockagent beside it runs them with FCALL. The pair is the cost of
	// restricting lock users to the kit's functions.
	LockagentEvalsha = "lockagent-evalsha"
	Redsync          = "redsync"
	Floor            = "floor"
	// LockagentNoQueue is the library without its wait queue (Options.NoWaitQueue): every
	// waiting process wakes on a release and competes, as before the queue. Not in
	// AllImplementations; ask for it with Config.Implementations (--implementations).
	LockagentNoQueue = "lockagent-noqueue"
	// LockagentTLS is the library with its defaults over TLS (Config.NewTLSClients): beside
	// Lockagent it shows what TLS costs.
	LockagentTLS = "lockagent-tls"
)

// AllImplementations is every implementation, in table order.
var AllImplementations = []string{Lockagent, LockagentEvalsha, LockagentDurable, LockagentNoFence, Redsync, Floor}

// sendsOwnLua are the implementations that run on Config.NewEvalClients when it is set:
// they send Lua of their own (EVAL, EVALSHA), which a lock user may not.
var sendsOwnLua = map[string]bool{LockagentEvalsha: true, Redsync: true, Floor: true}

// Config describes one benchmark run. Zero values get the defaults noted.
type Config struct {
	// NewClients returns fresh clients, one per master, for one implementation; it is
	// called once per implementation so that each has its own connection pools.
	NewClients func() []*redis.Client
	// NewTLSClients, when set, returns fresh TLS clients, one per master of a deployment
	// like NewClients' but serving TLS only, for LockagentTLS (run by default then).
	NewTLSClients func() []*redis.Client
	// NewEvalClients returns clients of a user that may run EVAL, EVALSHA and SCRIPT LOAD
	// (and not FCALL), for the implementations that send their own Lua (redsync, the
	// floor, lockagent-evalsha): a lock user may run the kit's functions only. Without
	// it they use NewClients, and lockagent-evalsha is left out (it would not be EVALSHA).
	NewEvalClients func() []*redis.Client
	// Implementations to run, in table order; AllImplementations (and LockagentTLS with
	// NewTLSClients) when empty.
	Implementations []string
	// Iterations of the sequential scenario (1000).
	Iterations int
	// Duration of each concurrent scenario, per implementation (5s).
	Duration time.Duration
	// Rounds splits the sequential and throughput scenarios into interleaved blocks (5).
	Rounds int
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
	// SpawnWorker returns a new, unstarted worker process for the cross-process scenario
	// (for `lockagent bench`: this binary with the hidden bench-worker command, which
	// calls ServeWorker); the scenario is skipped when nil.
	SpawnWorker func() (*exec.Cmd, error)
	// WorkerDeployment is handed to each worker on its stdin (it holds the password:
	// never on the command line), for the worker to build its own clients from;
	// WorkerEvalDeployment, when set, is the one for the implementations that send their
	// own Lua (redsync), as NewEvalClients is.
	WorkerDeployment, WorkerEvalDeployment json.RawMessage
	// NewAdminClients, when set, returns clients, one per master, that may run INFO: the
	// cross-process scenario then counts the commands and CPU time the masters spend per
	// acquisition.
	NewAdminClients func() []*redis.Client
	// Processes are the worker process counts of the cross-process scenario
	// (DefaultProcesses: 4, 8, 16).
	Processes []int
	// PlaceCross, when set, is called once before the cross-process scenario's first
	// cell, and its worker processes start after it: lockagent bench puts the masters and
	// itself on CPUs there (--placement). An error stops the run.
	PlaceCross func() error
	// CrossPlacement says which CPUs the cross-process scenario's masters and clients ran
	// on, for the report ("": not said, as for a deployment's masters).
	CrossPlacement string
}

func (c *Config) defaults() {
	if len(c.Implementations) == 0 {
		for _, name := range AllImplementations {
			if name != LockagentEvalsha || c.NewEvalClients != nil {
				c.Implementations = append(c.Implementations, name)
			}
		}
		if c.NewTLSClients != nil {
			c.Implementations = append(c.Implementations, LockagentTLS)
		}
	}
	if c.Iterations <= 0 {
		c.Iterations = 1000
	}
	if c.Duration <= 0 {
		c.Duration = 5 * time.Second
	}
	if c.Rounds <= 0 {
		c.Rounds = 5
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
	if len(c.Processes) == 0 {
		c.Processes = DefaultProcesses
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
	// Failed counts lock calls that gave up (retry limit). Every call started inside the
	// window runs to its end, so no wait is censored.
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
	Contention *Contention // in-process: goroutines sharing one client
	// Cross is the cross-process scenario, one cell per process count (ascending); nil
	// when it did not run (no SpawnWorker, or an implementation it does not cover).
	Cross []*CrossProcess
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

// Run measures every configured implementation on the same masters. The sequential and
// throughput scenarios run in Rounds interleaved blocks (implementation order rotating
// each round), so that load from elsewhere on the machine is shared fairly instead of
// landing on whichever implementation happened to run at the time. Contention runs one
// window per implementation (each boundary adds a tail of waits that must finish). In
// every window, an operation started before the end runs to completion and is counted
// (with its time). With Config.SpawnWorker, the cross-process scenario then runs for
// each of CrossImplementations selected, one window per process count each, in worker
// processes. Run stops early (returning ctx's error) when ctx ends.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.defaults()
	if cfg.NewClients == nil {
		return nil, errors.New("bench: Config.NewClients is required")
	}
	if cfg.SpawnWorker != nil && !CrossSupported {
		_, err := monoNow()
		return nil, err
	}
	if err := preflight(ctx, cfg); err != nil {
		return nil, err
	}
	subjects := make([]*subject, 0, len(cfg.Implementations))
	defer func() {
		for _, s := range subjects {
			_ = s.l.close()
		}
	}()
	for _, name := range cfg.Implementations {
		if name == LockagentEvalsha && cfg.NewEvalClients == nil {
			return nil, fmt.Errorf("bench: %s needs a user that may EVAL but not FCALL (Config.NewEvalClients; `lockagent bench --spawn` creates one)", name)
		}
		if name == LockagentTLS && cfg.NewTLSClients == nil {
			return nil, errors.New("bench: lockagent-tls needs TLS masters (Config.NewTLSClients; lockagent bench --spawn starts them)")
		}
		clients := cfg.clientsFor(name)
		l, err := newLocker(ctx, name, clients)
		if err != nil {
			_ = closeAll(clients)
			return nil, err
		}
		subjects = append(subjects, &subject{name: name, l: l, prefix: fmt.Sprintf("%s%s:", cfg.KeyPrefix, name),
			res: &Result{Name: name}})
	}
	rep := &Report{Config: cfg}
	for _, s := range subjects {
		rep.Results = append(rep.Results, s.res)
	}

	cfg.Log.Info("bench: sequential", "iterations", cfg.Iterations, "rounds", cfg.Rounds)
	seq := make([]*seqAcc, len(subjects))
	for i, s := range subjects {
		seq[i] = &seqAcc{}
		if err := warmSequential(ctx, cfg, s); err != nil {
			return rep, err
		}
	}
	for round := range cfg.Rounds {
		n := cfg.Iterations / cfg.Rounds
		if round < cfg.Iterations%cfg.Rounds {
			n++
		}
		for j := range subjects {
			i := (j + round) % len(subjects)
			if err := seq[i].block(ctx, cfg, subjects[i], n); err != nil {
				return rep, err
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	for i, s := range subjects {
		s.res.Sequential = seq[i].result()
	}

	cfg.Log.Info("bench: throughput", "goroutines", cfg.Goroutines, "duration", cfg.Duration, "rounds", cfg.Rounds)
	tp := make([]*Throughput, len(subjects))
	errs := make([]*errorSamples, len(subjects))
	for i, s := range subjects {
		tp[i], errs[i] = &Throughput{Goroutines: cfg.Goroutines}, &errorSamples{}
		warmThroughput(ctx, cfg, s)
	}
	for round := range cfg.Rounds {
		for j := range subjects {
			i := (j + round) % len(subjects)
			throughputBlock(ctx, cfg, subjects[i], cfg.Duration/time.Duration(cfg.Rounds), tp[i], errs[i])
		}
	}
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	for i, s := range subjects {
		tp[i].Errors, tp[i].ErrorExamples = errs[i].n, errs[i].examples
		tp[i].PerSecond = float64(tp[i].Ops) / tp[i].Elapsed.Seconds()
		s.res.Throughput = tp[i]
	}

	for _, s := range subjects {
		if !s.l.retries() {
			continue
		}
		cfg.Log.Info("bench: contention", "impl", s.name, "contenders", cfg.Contenders, "duration", cfg.Duration)
		c, err := runContention(ctx, cfg, s.l, s.prefix+"contended")
		if err != nil {
			return rep, err
		}
		s.res.Contention = c
	}

	if cfg.SpawnWorker != nil {
		if cfg.PlaceCross != nil {
			if err := cfg.PlaceCross(); err != nil {
				return rep, err
			}
		}
		if err := runCrossAll(ctx, cfg, subjects); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// clientsFor returns new clients for implementation name: the EVAL user's for those
// that send their own Lua, when there is one.
func (c *Config) clientsFor(name string) []*redis.Client {
	if name == LockagentTLS {
		return c.NewTLSClients()
	}
	if sendsOwnLua[name] && c.NewEvalClients != nil {
		return c.NewEvalClients()
	}
	return c.NewClients()
}

// preflight checks, with bounded waits, that the lock user can take and release a lock
// with the library (SET, the kit's functions), and that the user of the implementations
// that send their own Lua can set a key and run the release script, on every master.
// Without it a wrong password or a missing ACL command would make the library's Acquire
// (which retries unavailable masters until its context ends) or redsync's 32 tries spin
// through the whole run.
func preflight(ctx context.Context, cfg Config) error {
	lua, kit := false, false
	for _, name := range cfg.Implementations {
		lua = lua || sendsOwnLua[name]
		kit = kit || !sendsOwnLua[name]
	}
	key := cfg.KeyPrefix + "preflight"
	if kit {
		clients := cfg.NewClients()
		defer closeAll(clients)
		masters := make([]redis.UniversalClient, len(clients))
		for i, c := range clients {
			masters[i] = c
		}
		lc, err := redlock.New(masters, redlock.Options{NodeTimeout: time.Second})
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		err = func() error {
			defer lc.Close()
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			l, err := lc.TryAcquire(ctx, key, cfg.TTL)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}()
		if err != nil {
			return fmt.Errorf("bench: the lock user cannot take and release a lock: %w", err)
		}
	}
	if !lua {
		return nil
	}
	clients := cfg.clientsFor(Redsync)
	defer closeAll(clients)
	for _, c := range clients {
		err := func() error {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := c.Set(ctx, key, "preflight", cfg.TTL).Err(); err != nil {
				return err
			}
			n, err := floorRelease.Run(ctx, c, []string{key}, "preflight").Int()
			if err == nil && n != 1 {
				err = fmt.Errorf("release script returned %d, want 1", n)
			}
			return err
		}()
		if err != nil {
			return fmt.Errorf("bench: master %s: %w (redsync and the floor send their own Lua: their user must be able to SET and EVAL the compare-and-delete script)", c.Options().Addr, err)
		}
	}
	return nil
}

// subject is one implementation under measurement.
type subject struct {
	name   string
	l      locker
	prefix string
	res    *Result
}

func newLocker(ctx context.Context, name string, clients []*redis.Client) (locker, error) {
	switch name {
	case Lockagent, LockagentTLS, LockagentEvalsha:
		return newLockagent(clients, redlock.Options{})
	case LockagentNoFence:
		return newLockagent(clients, redlock.Options{NoFencing: true})
	case LockagentDurable:
		return newLockagent(clients, redlock.Options{DurableRelease: true})
	case LockagentNoQueue:
		return newLockagent(clients, redlock.Options{NoWaitQueue: true})
	case Redsync:
		return newRedsync(clients), nil
	case Floor:
		return newFloor(ctx, clients)
	}
	return nil, fmt.Errorf("bench: unknown implementation %q; want one of %v, or %s", name, AllImplementations, LockagentNoQueue)
}

// releaseCtx bounds a release so that the end of a measuring window never leaves a lock
// behind for the next scenario.
func releaseCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

// lockUnlock is one acquire+release pair.
func lockUnlock(ctx context.Context, l locker, key string, ttl time.Duration) error {
	unlock, err := l.lock(ctx, key, ttl)
	if err != nil {
		return err
	}
	rctx, cancel := releaseCtx()
	defer cancel()
	return unlock(rctx)
}

// maxConsecutiveErrors ends the run when an implementation keeps failing: a deployment the
// lock user cannot work with (a missing ACL command, a wrong password) would otherwise
// cost a lock TTL per pair.
const maxConsecutiveErrors = 5

func tooManyErrors(s *subject, phase string, err error) error {
	return fmt.Errorf("bench: %s: %d pairs in a row failed in the %s scenario (is the deployment usable by the lock user?): %w",
		s.name, maxConsecutiveErrors, phase, err)
}

// warmSequential dials connections and loads scripts before anything is timed.
func warmSequential(ctx context.Context, cfg Config, s *subject) error {
	failed := 0
	for range 50 {
		if err := lockUnlock(ctx, s.l, s.prefix+"seq", cfg.TTL); err != nil {
			if failed++; failed >= maxConsecutiveErrors {
				return tooManyErrors(s, "sequential warm-up", err)
			}
			continue
		}
		failed = 0
	}
	return ctx.Err()
}

// seqAcc accumulates the sequential blocks of one implementation.
type seqAcc struct {
	lat            []time.Duration
	mallocs, bytes uint64
	errs           errorSamples
}

// block runs n timed pairs, one after another, and adds their allocations.
func (a *seqAcc) block(ctx context.Context, cfg Config, s *subject, n int) error {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	failed := 0
	for range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		err := lockUnlock(ctx, s.l, s.prefix+"seq", cfg.TTL)
		elapsed := time.Since(start)
		if err != nil {
			a.errs.add(err)
			if failed++; failed >= maxConsecutiveErrors {
				return tooManyErrors(s, "sequential", err)
			}
			continue
		}
		failed = 0
		a.lat = append(a.lat, elapsed)
	}
	runtime.ReadMemStats(&after)
	a.mallocs += after.Mallocs - before.Mallocs
	a.bytes += after.TotalAlloc - before.TotalAlloc
	return nil
}

func (a *seqAcc) result() *Sequential {
	s := &Sequential{Ops: len(a.lat) + a.errs.n, Errors: a.errs.n, ErrorExamples: a.errs.examples}
	if s.Ops > 0 {
		s.AllocsPerOp = float64(a.mallocs) / float64(s.Ops)
		s.BytesPerOp = float64(a.bytes) / float64(s.Ops)
	}
	s.P50, s.P99 = percentile(a.lat, 0.50), percentile(a.lat, 0.99)
	return s
}

// warmThroughput takes every goroutine's key once so that pools are grown before timing.
func warmThroughput(ctx context.Context, cfg Config, s *subject) {
	var wg sync.WaitGroup
	for g := range cfg.Goroutines {
		wg.Go(func() { _ = lockUnlock(ctx, s.l, fmt.Sprintf("%stp:%d", s.prefix, g), cfg.TTL) })
	}
	wg.Wait()
}

// throughputBlock runs Goroutines goroutines, each on its own key, for d and adds the
// completed pairs and the elapsed time to t.
func throughputBlock(ctx context.Context, cfg Config, s *subject, d time.Duration, t *Throughput, errs *errorSamples) {
	window, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var ops atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for g := range cfg.Goroutines {
		key := fmt.Sprintf("%stp:%d", s.prefix, g)
		wg.Go(func() {
			// A pair started inside the window runs to completion under ctx, not the
			// window: cutting it short would leave keys behind (redsync releases a
			// cancelled attempt with the cancelled context) and skew the count.
			for window.Err() == nil {
				if err := lockUnlock(ctx, s.l, key, cfg.TTL); err != nil {
					if ctx.Err() == nil {
						errs.add(err)
					}
					continue
				}
				ops.Add(1)
			}
		})
	}
	wg.Wait()
	t.Elapsed += time.Since(start)
	t.Ops += int(ops.Load())
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
			// Attempts started inside the window run to completion (ctx, not window), so
			// that no long wait is censored by the end of the window.
			for window.Err() == nil {
				t0 := time.Now()
				unlock, err := l.lock(ctx, key, cfg.TTL)
				wait := time.Since(t0)
				if err != nil {
					if ctx.Err() == nil {
						failed[g]++
						errs.add(err)
					}
					continue
				}
				perGoroutine[g]++
				waits[g] = append(waits[g], wait)
				hold(cfg.Hold)
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
