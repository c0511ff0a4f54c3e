//go:build linux

package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Config is one chaos run.
type Config struct {
	// Label names the run in its report ("safe", "violation").
	Label string
	// Duration is the least time the nemesis runs; it also goes on until every fault kind
	// was injected at least once (0: exactly one round of every kind).
	Duration time.Duration
	Seed     uint64
	Workers  int // worker processes
	Clients  int // client hosts (namespaces) they are spread over
	Keys     int
	// Work is how long each holder keeps the lock between its read and its write.
	Work time.Duration
	// Faults are the kinds to inject (SafeFaults, or ViolationFaults for the labelled run).
	Faults []string
	// BreakAssumptions prepares the hosts for ViolationFaults: the servers restart with a
	// wall clock the nemesis can step. The deployment stays that way afterwards.
	BreakAssumptions bool
	Dir              string // histories, worker logs and the report
	Exe              string // the binary that runs a worker when WorkerEnv is set (the test binary)
	Logf             func(string, ...any)
}

// Run runs the workers against d while the nemesis injects cfg.Faults, then checks the
// histories and returns the report. An error means the run itself could not be carried
// out (a fault could not be injected, a worker failed); violations are in the report.
func Run(ctx context.Context, d *Deployment, cfg Config) (_ *Report, err error) {
	if cfg.Workers < 2 || cfg.Keys < 1 || cfg.Clients < 1 || cfg.Workers < cfg.Keys {
		return nil, fmt.Errorf("chaos: Workers %d, Keys %d, Clients %d: want at least two workers per key and one client host", cfg.Workers, cfg.Keys, cfg.Clients)
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, err
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	reg := NewRegister(Mono)
	sock := filepath.Join(cfg.Dir, "register.sock")
	_ = os.Remove(sock)
	if err := reg.Serve(sock); err != nil {
		return nil, err
	}
	defer reg.Close()
	pwFile := filepath.Join(cfg.Dir, "lock-password")
	if err := os.WriteFile(pwFile, []byte(d.LockPass), 0o600); err != nil {
		return nil, err
	}
	keys := make([]string, cfg.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("chaos:%s:%d:k%d", cfg.Label, cfg.Seed, i)
	}
	nodeTimeout := 100 * time.Millisecond
	n := &nemesis{d: d, rng: rand.New(rand.NewPCG(cfg.Seed, 0x6e656d65)), logf: logf, offset: map[int]time.Duration{}}

	// Workers: separate processes in the client namespaces, each with its own Client.
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	defer func() {
		for _, w := range n.workers { // never leave one behind, whatever happened
			_ = w.proc.Signal(syscall.SIGCONT)
			_ = w.proc.Kill()
			<-w.done
		}
	}()
	for id := 0; id < cfg.Workers; id++ {
		wc := WorkerConfig{ID: id, Client: id % cfg.Clients, Endpoints: d.Endpoints, Username: d.LockUser,
			PasswordFile: pwFile, Keys: keys, TTL: d.TTL, NodeTimeout: nodeTimeout, Seed: cfg.Seed, Work: cfg.Work,
			AcquireTimeout: 3 * d.TTL, Register: sock,
			History: filepath.Join(cfg.Dir, fmt.Sprintf("worker-%d.jsonl", id)),
			Ready:   filepath.Join(cfg.Dir, fmt.Sprintf("worker-%d.ready", id))}
		_ = os.Remove(wc.Ready)
		data, _ := json.Marshal(wc)
		cfgPath := filepath.Join(cfg.Dir, fmt.Sprintf("worker-%d.json", id))
		if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
			return nil, err
		}
		logFile, err := os.Create(filepath.Join(cfg.Dir, fmt.Sprintf("worker-%d.log", id)))
		if err != nil {
			return nil, err
		}
		cmd := d.Lab.ClientCommand(wctx, wc.Client, cfg.Exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), WorkerEnv+"="+cfgPath)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			logFile.Close()
			return nil, err
		}
		w := &worker{id: id, client: wc.Client, pid: cmd.Process.Pid, proc: cmd.Process, done: make(chan struct{})}
		go func() { _ = cmd.Wait(); logFile.Close(); close(w.done) }()
		n.workers = append(n.workers, w)
		limit := time.Now().Add(time.Minute)
		for {
			if _, err := os.Stat(wc.Ready); err == nil {
				break
			}
			select {
			case <-w.done:
				out, _ := os.ReadFile(logFile.Name())
				return nil, fmt.Errorf("worker %d exited at start: %s", id, out)
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(limit) {
				return nil, fmt.Errorf("worker %d not ready after a minute", id)
			}
		}
	}
	logf("chaos %s: seed %d (replay: CHAOS_SEED=%d), %d workers on %d client hosts, %d keys, ttl %v, restart_delay %v",
		cfg.Label, cfg.Seed, cfg.Seed, cfg.Workers, cfg.Clients, cfg.Keys, d.TTL, d.RestartDelay)

	if cfg.BreakAssumptions {
		errs := make([]error, len(d.Hosts))
		var wg sync.WaitGroup
		for i := range d.Hosts {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = n.breakAssumptions(ctx, i) }()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	began := time.Now()
	runStart := Mono()
	time.Sleep(d.TTL) // the workload settles before the first fault
	var faults []Fault
	done := map[string]bool{}
	for len(done) < len(cfg.Faults) || time.Since(began) < cfg.Duration {
		for _, i := range n.rng.Perm(len(cfg.Faults)) {
			kind := cfg.Faults[i]
			if len(done) == len(cfg.Faults) && time.Since(began) >= cfg.Duration {
				break
			}
			f, err := n.inject(ctx, kind)
			faults = append(faults, f)
			if err != nil {
				_ = d.Lab.Heal()
				return nil, fmt.Errorf("fault %s on %v: %w", kind, f.Hosts, err)
			}
			done[kind] = true
			logf("chaos %s: +%v %s %v %s (%v)", cfg.Label, time.Since(began).Round(100*time.Millisecond), kind, f.Hosts, f.Note,
				time.Duration(f.End-f.Start).Round(10*time.Millisecond))
			time.Sleep(n.dur(500*time.Millisecond, 1500*time.Millisecond))
		}
	}
	if err := d.Lab.Heal(); err != nil {
		return nil, err
	}
	time.Sleep(d.TTL) // the workload after the last fault
	runEnd := Mono()
	elapsed := time.Since(began)

	// Stop the workers: they finish their hold, release and flush.
	for _, w := range n.workers {
		_ = w.proc.Signal(syscall.SIGCONT)
		_ = w.proc.Signal(syscall.SIGTERM)
	}
	var werrs []error
	for _, w := range n.workers {
		select {
		case <-w.done:
		case <-time.After(time.Minute):
			werrs = append(werrs, fmt.Errorf("worker %d did not exit within a minute of SIGTERM", w.id))
		}
	}
	if err := errors.Join(werrs...); err != nil {
		return nil, err
	}

	var recs []Record
	for id := 0; id < cfg.Workers; id++ {
		h, err := ReadHistory(filepath.Join(cfg.Dir, fmt.Sprintf("worker-%d.jsonl", id)))
		if err != nil {
			return nil, err
		}
		if len(h) == 0 || h[len(h)-1].Op != OpEnd {
			out, _ := os.ReadFile(filepath.Join(cfg.Dir, fmt.Sprintf("worker-%d.log", id)))
			return nil, fmt.Errorf("worker %d's history is incomplete (no end record); its log:\n%s", id, out)
		}
		recs = append(recs, h...)
	}
	states, log := reg.Snapshot()
	rep := Analyze(Input{Label: cfg.Label, Seed: cfg.Seed, Records: recs, Faults: faults, States: states, Log: log,
		Workers: cfg.Workers, Clients: cfg.Clients, Keys: cfg.Keys, Masters: len(d.Hosts), TTL: d.TTL,
		RestartDelay: d.RestartDelay, Start: runStart, End: runEnd, Elapsed: elapsed, Work: cfg.Work})
	if err := rep.WriteFiles(cfg.Dir); err != nil {
		return rep, err
	}
	return rep, nil
}

// ParseSeed reads a seed from s ("" draws one).
func ParseSeed(s string) (uint64, error) {
	if s == "" {
		return rand.Uint64() % 1_000_000_000, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("CHAOS_SEED=%q: want a decimal number (the seed a run printed)", s)
	}
	return v, nil
}
