//go:build linux

package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// WorkerEnv names the environment variable that makes a test binary run as a worker: its
// value is the path of the worker's JSON config.
const WorkerEnv = "REDLOCK_CHAOS_WORKER"

// WorkerConfig is one worker process's job.
type WorkerConfig struct {
	ID           int           `json:"id"`
	Client       int           `json:"client"`
	Endpoints    []string      `json:"endpoints"`
	Username     string        `json:"username"`
	PasswordFile string        `json:"password_file"` // 0600, the lock user's password
	Keys         []string      `json:"keys"`
	TTL          time.Duration `json:"ttl"`
	NodeTimeout  time.Duration `json:"node_timeout"`
	Seed         uint64        `json:"seed"`
	// Work is how long a holder keeps the lock between its read and its write.
	Work time.Duration `json:"work"`
	// AcquireTimeout bounds one Acquire call (it waits for the lock until then).
	AcquireTimeout time.Duration `json:"acquire_timeout"`
	Register       string        `json:"register"` // unix socket
	History        string        `json:"history"`  // JSON lines
	Ready          string        `json:"ready"`    // created once the worker runs
}

// Mono reads CLOCK_MONOTONIC: one clock for every process on the machine.
func Mono() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// WorkerMain runs a worker from the config at os.Getenv(WorkerEnv) and returns its exit
// code. It contends for the keys until SIGTERM, then releases, flushes its history and
// exits 0. SIGUSR1 asks it to stop itself (SIGSTOP) during its next hold, right after its
// fenced read: the nemesis continues it after its validity is over (a Kleppmann pause).
func WorkerMain() int {
	path := os.Getenv(WorkerEnv)
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos worker: %v\n", err)
		return 2
	}
	var cfg WorkerConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "chaos worker: config %s: %v\n", path, err)
		return 2
	}
	if err := runWorker(cfg); err != nil {
		fmt.Fprintf(os.Stderr, "chaos worker %d: %v\n", cfg.ID, err)
		return 1
	}
	return 0
}

func classify(err error) (string, string) {
	switch {
	case err == nil:
		return "", ""
	case errors.Is(err, ErrStale):
		return "stale", ""
	case errors.Is(err, redlock.ErrTaken):
		return "taken", ""
	case errors.Is(err, redlock.ErrUnavailable):
		return "unavailable", ""
	case errors.Is(err, redlock.ErrExpired):
		return "expired", ""
	case errors.Is(err, redlock.ErrLost):
		return "lost", ""
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", ""
	case errors.Is(err, redlock.ErrDenied):
		return "denied", err.Error()
	}
	return "error", err.Error()
}

// discardLogs drops go-redis's own log lines (dial errors while a master is down are the
// point of the run, and the history records every failure).
type discardLogs struct{}

func (discardLogs) Printf(context.Context, string, ...any) {}

func runWorker(cfg WorkerConfig) error {
	redis.SetLogger(discardLogs{})
	pw, err := os.ReadFile(cfg.PasswordFile)
	if err != nil {
		return err
	}
	password := strings.TrimSpace(string(pw))
	var masters []redis.UniversalClient
	for _, ep := range cfg.Endpoints {
		masters = append(masters, redis.NewClient(&redis.Options{Addr: ep, Username: cfg.Username, Password: password,
			DialTimeout: 500 * time.Millisecond, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
			ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1, PoolSize: 4}))
	}
	defer func() {
		for _, m := range masters {
			m.Close()
		}
	}()
	client, err := redlock.New(masters, redlock.Options{MaxTTL: cfg.TTL, NodeTimeout: cfg.NodeTimeout})
	if err != nil {
		return err
	}
	defer client.Close()
	reg, err := DialRegister(cfg.Register)
	if err != nil {
		return err
	}
	defer reg.Close()
	f, err := os.OpenFile(cfg.History, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<16)
	enc := json.NewEncoder(bw)
	emit := func(r Record) error {
		r.Worker, r.Client = cfg.ID, cfg.Client
		return enc.Encode(r)
	}

	var stop, pauseReq atomic.Bool
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for s := range sigs {
			if s == syscall.SIGUSR1 {
				pauseReq.Store(true)
				continue
			}
			stop.Store(true)
			cancel()
		}
	}()
	// A worker whose test process died (reparented) stops too, rather than run on.
	go func(parent int) {
		for range time.Tick(time.Second) {
			if os.Getppid() != parent {
				stop.Store(true)
				cancel()
				return
			}
		}
	}(os.Getppid())
	if err := os.WriteFile(cfg.Ready, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}

	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(cfg.ID)))
	for seq := 1; !stop.Load(); seq++ {
		key := cfg.Keys[rng.IntN(len(cfg.Keys))]
		holder := fmt.Sprintf("w%d-%d", cfg.ID, seq)
		actx, acancel := context.WithTimeout(ctx, cfg.AcquireTimeout)
		start := Mono()
		lock, err := client.Acquire(actx, key, cfg.TTL)
		now, end := time.Now(), Mono()
		acancel()
		rec := Record{Op: OpAcquire, Key: key, Holder: holder, Start: start, End: end, OK: err == nil}
		rec.Err, rec.Detail = classify(err)
		if err != nil {
			if stop.Load() {
				rec.Err = "stopped"
			}
			if err := emit(rec); err != nil {
				return err
			}
			if errors.Is(err, redlock.ErrUnavailable) {
				time.Sleep(time.Duration(10+rng.IntN(40)) * time.Millisecond)
			}
			continue
		}
		rec.Fence = lock.Fence()
		rec.Deadline = end + int64(lock.Deadline().Sub(now))
		if err := emit(rec); err != nil {
			return err
		}
		if err := hold(cfg, reg, lock, holder, key, emit, &pauseReq, cont); err != nil {
			return err
		}
		rs := Mono()
		err = lock.Release(context.Background())
		rel := Record{Op: OpRelease, Key: key, Holder: holder, Start: rs, End: Mono(), OK: err == nil}
		rel.Err, rel.Detail = classify(err)
		if err := emit(rel); err != nil {
			return err
		}
	}
	if err := emit(Record{Op: OpEnd, Start: Mono(), End: Mono(), OK: true}); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Sync()
}

// hold is the work under the lock: a fenced read of the counter, the work, a fenced write
// of the counter plus one.
func hold(cfg WorkerConfig, reg *RegisterClient, lock *redlock.Lock, holder, key string, emit func(Record) error, pauseReq *atomic.Bool, cont chan os.Signal) error {
	fence := lock.Fence()
	s := Mono()
	v, err := reg.Read(key, holder, fence)
	rd := Record{Op: OpRead, Key: key, Holder: holder, Fence: fence, Start: s, End: Mono(), OK: err == nil, Value: v}
	rd.Err, rd.Detail = classify(err)
	if err := emit(rd); err != nil {
		return err
	}
	if err != nil {
		if errors.Is(err, ErrStale) {
			return nil
		}
		return err
	}
	paused := false
	if pauseReq.CompareAndSwap(true, false) {
		// SIGSTOP reaches the process asynchronously: wait for the SIGCONT that ends the
		// stop, so the write below comes after it.
		for len(cont) > 0 {
			<-cont
		}
		ps := Mono()
		if err := syscall.Kill(os.Getpid(), syscall.SIGSTOP); err != nil {
			return err
		}
		select {
		case <-cont:
		case <-time.After(5 * time.Minute):
			return errors.New("stopped myself, but no SIGCONT came within 5 minutes")
		}
		paused = true
		if err := emit(Record{Op: OpPause, Key: key, Holder: holder, Fence: fence, Start: ps, End: Mono(), OK: true}); err != nil {
			return err
		}
	}
	if cfg.Work > 0 {
		time.Sleep(cfg.Work)
	}
	s = Mono()
	err = reg.Write(key, holder, fence, v+1)
	wr := Record{Op: OpWrite, Key: key, Holder: holder, Fence: fence, Start: s, End: Mono(), OK: err == nil, Value: v + 1, Paused: paused}
	wr.Err, wr.Detail = classify(err)
	if err := emit(wr); err != nil {
		return err
	}
	if err != nil && !errors.Is(err, ErrStale) {
		return err
	}
	return nil
}
