package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/internal/handofftrace"
)

// CrossImplementations are the implementations the cross-process scenario covers, in
// table order: this project's library with default options, and redsync with its
// defaults. It runs for every selected implementation listed here; a library variant
// joins it by being added here (and to newLocker, as for every scenario).
var CrossImplementations = []string{Lockagent, LockagentNoQueue, Redsync}

// DefaultProcesses are the worker process counts of the cross-process scenario.
var DefaultProcesses = []int{4, 8, 16, 32, 64}

// CrossProcess is the cross-process scenario for one implementation and one process
// count: Processes worker processes, each with its own client (its own connections,
// and for the library its own Client), compete for one key, each holding it for Hold
// once acquired. Holds are recorded on CLOCK_MONOTONIC, which on Linux is one clock for
// every process of the machine, and checked against each other.
type CrossProcess struct {
	Processes    int // worker processes that reported
	Acquisitions int
	PerSecond    float64
	P50Wait      time.Duration // from the start of the lock call to the acquisition
	P99Wait      time.Duration
	MaxWait      time.Duration
	// Jain is Jain's fairness index over acquisitions per process; MinPer/MaxPer the
	// extremes.
	Jain           float64
	MinPer, MaxPer int
	// Failed counts lock calls that gave up (retry limit).
	Failed int
	// Overlaps counts holds that began before an earlier hold (by start) had ended: two
	// processes relying on the lock at once. Must be 0.
	Overlaps int
	// Fenced says the implementation hands out fencing tokens; FenceViolations then
	// counts holds whose fence was not larger than the previous hold's (by start).
	Fenced          bool
	FenceViolations int
	ErrorExamples   []string
	// GapP50 and GapP99 are the hand-off gap: from a hold's end (the unlock call) to
	// the next hold's start (the next holder's lock call returning), on CLOCK_MONOTONIC
	// across processes. Utilisation is the time held over the wall time from the first
	// hold's start to the last one's end.
	GapP50, GapP99 time.Duration
	Utilisation    float64
	Held           time.Duration // the mean hold
	// FloorWrite is the median (FloorWriteP99 the 99th percentile) of one fsynced
	// majority write measured on the same masters just before the window (see
	// probe.floorWrites): the floor of a hand-off. Zero when not measured.
	FloorWrite, FloorWriteP99 time.Duration
	// FloorPaced is the median of the same write made after a pause of FloorPause (the
	// hold, at most pacedFloorMaxPause) each, just before the floor writes: the floor of
	// a hand-off made after a hold, on a machine that was quiet that long (see
	// pacedFloor). Zero when not measured.
	FloorPaced, FloorPause time.Duration
	// FloorLoaded is the median of the floor writes made during the window, one every
	// floorDuringEvery (FloorLoadedN of them): the floor under the window's load. Their
	// SETs, like the bare rounds' PINGs, are taken out of the masters' work (calls, time
	// and CPU, at what one cost before the window).
	FloorLoaded  time.Duration
	FloorLoadedN int
	// RoundIdle is the median of bare rounds (see bareRound: a PING to every master,
	// timed to the majority's reply) measured after the floor, before the window;
	// RoundLoaded the median of those made during the window, one between two floor
	// writes (RoundLoadedN of them). RoundLoaded - RoundIdle is how much longer a round
	// through the masters took under the window's load, the lock's own work included.
	// Zero when not measured (RoundLoadedN is then 0 too).
	RoundIdle, RoundLoaded time.Duration
	RoundLoadedN           int
	// WorkerCPU and WorkerWakeups are the worker processes' CPU time and voluntary
	// context switches (each a sleep, so a wake-up) per acquisition, all workers together.
	WorkerCPU     time.Duration
	WorkerWakeups float64
	// Chained counts the hand-offs whose fence is the previous hold's plus one: chained
	// hand-offs, written without a log write (see lua/release.lua); the others were
	// logged (an fsync before the notice), a fence round, or an acquisition by attempt
	// (after a window or an expiry). ChainedGapP50 is the gap p50 of the chained ones
	// alone. Fenced implementations only.
	Chained       int
	ChainedGapP50 time.Duration
	// MasterCalls are the commands every master together ran per acquisition during
	// the window, by name (INFO commandstats, scripts' commands included), with the
	// mean time of one call (MasterCall), and
	// MasterCPU the masters' CPU time per acquisition; nil and 0 without
	// Config.NewAdminClients.
	MasterCalls map[string]float64
	MasterCall  map[string]time.Duration // the mean time of one call, by name
	MasterCPU   time.Duration
	MasterSys   time.Duration // the part of MasterCPU in the kernel
	// FloorCPU is the masters' CPU time per floor write (all masters together), to set
	// MasterCPU against.
	FloorCPU time.Duration
	// Timeline is where the gap goes, step by step (the library only; zero N otherwise).
	Timeline Timeline
	// Relay is the bare relay run right after the library's cell with as many worker
	// processes (see relayWork): the same hold, masters and client (go-redis, received
	// and sent as the library does), and nothing of the lock. Its gap is a hand-off by
	// notice without the lock's work, with that many processes on this machine: growth
	// it shows with the processes is there without the lock (the lock's own work may grow
	// too: see MasterCPU and MasterCall). The library's cells only; nil when not run or
	// when it failed (a warning says why).
	Relay *CrossProcess `json:",omitempty"`
}

// workerSpec is what the bench sends a worker process on its stdin (one JSON line); the
// worker answers "ready", waits for the start time (one line: CLOCK_MONOTONIC ns), runs,
// and writes its workerResult (one JSON line) on its stdout. The deployment (with its
// password) only ever travels on stdin, never on the command line.
type workerSpec struct {
	Impl       string          `json:"impl"`
	Key        string          `json:"key"`
	TTL        time.Duration   `json:"ttl"`
	Hold       time.Duration   `json:"hold"`
	Duration   time.Duration   `json:"duration"`
	Deployment json.RawMessage `json:"deployment"` // opaque to the bench: for the worker's newClients
	// Index and Count place a relay worker in its ring (Impl relayImpl only).
	Index int `json:"index,omitempty"`
	Count int `json:"count,omitempty"`
}

// crossHold is one hold on CLOCK_MONOTONIC (ns): from the lock call's return to the
// unlock call; the fence (0: none) and the wait before it (ns).
type crossHold struct {
	Start, End int64
	Fence      uint64
	Wait       int64
	// Notices: when the lock call heard hand-off notices; Sends: when the unlock call's
	// requests started to go out ({ns after the common start, master}; the library only).
	Notices, Sends [][2]int64
}

// workerResult is a worker's report. Each hold is four numbers, kept compact: the start
// as ns after the common start time, the hold's length, the fence and the wait (ns).
type workerResult struct {
	Holds [][4]int64 `json:"holds"`
	// Notices and Sends are, per hold (the library only, else empty), when its lock
	// call heard hand-off notices and when its unlock call's requests started to go out,
	// each {ns after the common start, master} (see timelineRecorder).
	Notices [][][2]int64 `json:"notices,omitempty"`
	Sends   [][][2]int64 `json:"sends,omitempty"`
	// CPU (ns) and Wakeups (voluntary context switches) of the worker process over its
	// window.
	CPU     int64    `json:"cpu,omitempty"`
	Wakeups int64    `json:"wakeups,omitempty"`
	Fenced  bool     `json:"fenced,omitempty"`
	Failed  int      `json:"failed,omitempty"`
	Errors  []string `json:"errors,omitempty"`
	Err     string   `json:"err,omitempty"`
}

// ServeWorker is the worker side of the cross-process scenario (the hidden
// `lockagent bench-worker` command): it reads its spec from in, builds its own clients
// with newClients(spec.Deployment), and reports on out. It stops early when ctx ends or
// in is closed (the bench is gone).
func ServeWorker(ctx context.Context, in io.Reader, out io.Writer, newClients func(json.RawMessage) ([]*redis.Client, error)) error {
	r := bufio.NewReader(in)
	line, err := r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("bench worker: reading the spec: %w", err)
	}
	var spec workerSpec
	if err := json.Unmarshal(line, &spec); err != nil {
		return fmt.Errorf("bench worker: spec: %w", err)
	}
	report := func(res workerResult) error {
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
	clients, err := newClients(spec.Deployment)
	if err != nil {
		return report(workerResult{Err: err.Error()})
	}
	if spec.Impl == relayImpl {
		return serveRelay(ctx, r, out, spec, clients, report)
	}
	l, err := newLocker(ctx, spec.Impl, clients)
	if err != nil {
		_ = closeAll(clients)
		return report(workerResult{Err: err.Error()})
	}
	defer l.close()
	// Dial and load scripts before the clock starts; bounded, since the library's Acquire
	// retries unavailable masters until its context ends.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = lockUnlock(wctx, l, spec.Key+":warm", spec.TTL)
	cancel()
	if err != nil {
		return report(workerResult{Err: "warm-up: " + err.Error()})
	}
	startAt, err := awaitStart(r, out)
	if err != nil {
		return err
	}
	// The bench closes stdin once it has the result, or by exiting: then stop.
	ctx, cancel = context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, r)
		cancel()
	}()
	res, err := crossWork(ctx, spec, l, startAt)
	if err != nil {
		return report(workerResult{Err: err.Error()})
	}
	return report(res)
}

// awaitStart tells the bench the worker is ready ("ready" on out) and reads the start time
// it answers (one line on r: CLOCK_MONOTONIC ns).
func awaitStart(r *bufio.Reader, out io.Writer) (int64, error) {
	if _, err := fmt.Fprintln(out, "ready"); err != nil {
		return 0, err
	}
	line, err := r.ReadBytes('\n')
	if err != nil {
		return 0, fmt.Errorf("bench worker: reading the start time: %w", err)
	}
	startAt, err := strconv.ParseInt(strings.TrimSpace(string(line)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bench worker: start time: %w", err)
	}
	return startAt, nil
}

// sleepUntil sleeps until startAt on CLOCK_MONOTONIC, where every worker starts together.
func sleepUntil(startAt int64) error {
	now, err := monoNow()
	if err != nil {
		return err
	}
	if d := time.Duration(startAt - now); d > 0 {
		time.Sleep(d)
	}
	return nil
}

// crossWork competes for the key from startAt for spec.Duration; a lock call started
// inside the window runs to its end, so no wait is censored.
func crossWork(ctx context.Context, spec workerSpec, l locker, startAt int64) (workerResult, error) {
	res := workerResult{Holds: [][4]int64{}, Fenced: fences(l)}
	if err := sleepUntil(startAt); err != nil {
		return res, err
	}
	end := startAt + int64(spec.Duration)
	tl, err := newTimelineRecorder()
	if err != nil {
		return res, err
	}
	handofftrace.Set(tl.sent, tl.notice)
	cpu0, wake0 := processUsage()
	var errs errorSamples
	var calls [][4]int64 // per hold: lock call, its return, unlock call, its return
	for {
		t0, _ := monoNow()
		if t0 >= end || ctx.Err() != nil {
			break
		}
		fence, unlock, err := lockFenced(ctx, l, spec.Key, spec.TTL)
		t1, _ := monoNow()
		if err != nil {
			if ctx.Err() == nil {
				res.Failed++
				errs.add(err)
			}
			continue
		}
		hold(spec.Hold)
		t2, _ := monoNow()
		res.Holds = append(res.Holds, [4]int64{t1 - startAt, t2 - t1, int64(fence), t1 - t0})
		rctx, cancel := releaseCtx()
		if err := unlock(rctx); err != nil {
			errs.add(err)
		}
		cancel()
		t3, _ := monoNow()
		calls = append(calls, [4]int64{t0, t1, t2, t3})
	}
	cpu1, wake1 := processUsage()
	res.CPU, res.Wakeups = int64(cpu1-cpu0), wake1-wake0
	res.Errors = errs.examples
	handofftrace.Set(nil, nil) // the window is over: later moments (stragglers) are no hold's
	res.Notices, res.Sends = tl.perHold(calls, startAt)
	return res, nil
}

// fencedLocker is a locker that can hand out fencing tokens.
type fencedLocker interface {
	lockFenced(ctx context.Context, key string, ttl time.Duration) (uint64, unlockFunc, error)
	fences() bool // false: fencing is switched off (its fences are 0)
}

func fences(l locker) bool {
	f, ok := l.(fencedLocker)
	return ok && f.fences()
}

// lockFenced is lock, plus the fence for implementations that hand one out.
func lockFenced(ctx context.Context, l locker, key string, ttl time.Duration) (uint64, unlockFunc, error) {
	if f, ok := l.(fencedLocker); ok {
		return f.lockFenced(ctx, key, ttl)
	}
	unlock, err := l.lock(ctx, key, ttl)
	return 0, unlock, err
}

// lockedBuffer is a worker's stderr: written by exec's copier, read for error messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(l.b.String())
}

// crossWorker is one started worker process.
type crossWorker struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan lineOrErr // stdout, line by line, until EOF
	stderr lockedBuffer
	waited bool
}

type lineOrErr struct {
	b   []byte
	err error
}

func (w *crossWorker) pid() int { return w.cmd.Process.Pid }

// wait reaps the process (once).
func (w *crossWorker) wait() error {
	if w.waited {
		return nil
	}
	w.waited = true
	return w.cmd.Wait()
}

// stop kills the process by its pid, if it is still running, and reaps it.
func (w *crossWorker) stop() {
	if !w.waited {
		_ = w.cmd.Process.Kill()
		_ = w.wait()
	}
}

// runCross runs one cell of the cross-process scenario. Every worker it started is
// stopped by its pid and reaped before it returns, whatever the outcome (an error, ctx
// cancelled by Ctrl-C).
func runCross(ctx context.Context, cfg Config, impl string, procs int, floor, admins []*redis.Client) (*CrossProcess, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	deployment := cfg.WorkerDeployment
	if sendsOwnLua[impl] && cfg.WorkerEvalDeployment != nil {
		deployment = cfg.WorkerEvalDeployment
	}
	relay := impl == relayImpl
	workers := make([]*crossWorker, 0, procs)
	defer func() {
		for _, w := range workers {
			w.stop()
		}
	}()
	for i := range procs {
		ws := workerSpec{Impl: impl, Key: cfg.KeyPrefix + impl + ":cross", TTL: cfg.TTL, Hold: cfg.Hold,
			Duration: cfg.Duration, Deployment: deployment}
		if relay {
			ws.Index, ws.Count = i, procs
		}
		spec, err := json.Marshal(ws)
		if err != nil {
			return nil, err
		}
		cmd, err := cfg.SpawnWorker()
		if err != nil {
			return nil, fmt.Errorf("bench: a worker process: %w", err)
		}
		w := &crossWorker{cmd: cmd, lines: make(chan lineOrErr, 3)} // ready, result, EOF: never blocks
		cmd.Stderr = &w.stderr
		if w.in, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("bench: starting a worker process: %w", err)
		}
		workers = append(workers, w)
		go func() {
			r := bufio.NewReader(stdout)
			for {
				b, err := r.ReadBytes('\n')
				if err != nil {
					w.lines <- lineOrErr{nil, err}
					close(w.lines)
					return
				}
				w.lines <- lineOrErr{b, nil}
			}
		}()
		if _, err := fmt.Fprintf(w.in, "%s\n", spec); err != nil {
			return nil, fmt.Errorf("bench: worker %d: sending its spec: %w; its stderr: %s", w.pid(), err, w.stderr.String())
		}
	}
	await := func(w *crossWorker, bound time.Duration) ([]byte, error) {
		t := time.NewTimer(bound)
		defer t.Stop()
		select {
		case r := <-w.lines:
			if r.err != nil {
				werr := w.wait()
				return nil, fmt.Errorf("bench: worker %d ended without an answer (%v); its stderr: %s", w.pid(), werr, w.stderr.String())
			}
			return r.b, nil
		case <-t.C:
			return nil, fmt.Errorf("bench: worker %d did not answer within %v; its stderr: %s", w.pid(), bound, w.stderr.String())
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for _, w := range workers {
		b, err := await(w, 30*time.Second)
		if err != nil {
			return nil, err
		}
		if s := strings.TrimSpace(string(b)); s != "ready" {
			return nil, fmt.Errorf("bench: worker %d: %s", w.pid(), workerFailure(b))
		}
	}
	// The floor, on the same masters, with every worker started and idle (measureIdle).
	// count reads the masters' work; a reading that fails ends the counting for the cell.
	count := func() (masterWork, bool) {
		if len(admins) == 0 {
			return masterWork{}, false
		}
		w, err := readMasterWork(ctx, admins)
		if err != nil {
			cfg.Log.Warn("bench: the masters' work could not be counted", "err", err)
			admins = nil
			return w, false
		}
		return w, true
	}
	pr := newProbe(floor)
	defer func() {
		if out := pr.leftOut(); len(out) > 0 {
			cfg.Log.Warn("bench: masters left out of the floor writes and bare rounds", "masters", out)
		}
	}()
	var idle idleFloor
	if !relay { // the relay is read against the lock's cell, which has them
		var err error
		if idle, err = measureIdle(ctx, cfg, pr, count); err != nil {
			return nil, err
		}
	}
	now, err := monoNow()
	if err != nil {
		return nil, err
	}
	// Every worker sleeps until the same instant on the shared clock.
	startAt := now + int64(20*time.Millisecond)
	for _, w := range workers {
		if _, err := fmt.Fprintf(w.in, "%d\n", startAt); err != nil {
			return nil, fmt.Errorf("bench: worker %d: %w; its stderr: %s", w.pid(), err, w.stderr.String())
		}
	}
	during := make(chan loadedSamples, 1)
	duringCtx, stopDuring := context.WithCancel(ctx)
	defer stopDuring()
	go func() {
		if idle.p50 <= 0 {
			during <- loadedSamples{}
			return
		}
		during <- pr.floorDuring(duringCtx, cfg.KeyPrefix+"floor-write", cfg.TTL, startAt, startAt+int64(cfg.Duration))
	}()
	results := make([]workerResult, len(workers))
	// A lock call that started in the window may wait up to the implementation's own
	// limit (redsync: 32 tries) or, for the library, until it gets the lock.
	bound := cfg.Duration + cfg.TTL + time.Minute
	for i, w := range workers {
		b, err := await(w, bound)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &results[i]); err != nil {
			return nil, fmt.Errorf("bench: worker %d: %s", w.pid(), workerFailure(b))
		}
		if results[i].Err != "" {
			return nil, fmt.Errorf("bench: worker %d: %s", w.pid(), results[i].Err)
		}
		_ = w.in.Close()
		if err := w.wait(); err != nil {
			return nil, fmt.Errorf("bench: worker %d: %w; its stderr: %s", w.pid(), err, w.stderr.String())
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err // cut short (Ctrl-C reaches the workers too): not a measurement
	}
	fenced := len(results) > 0
	for _, r := range results {
		fenced = fenced && r.Fenced
	}
	stopDuring()
	fl := <-during
	c := summarizeCross(results, fenced, len(floor))
	c.FloorWrite, c.FloorWriteP99 = idle.p50, idle.p99
	c.FloorPaced, c.FloorPause = idle.paced, idle.pause
	c.FloorLoaded, c.FloorLoadedN = fl.floor, fl.writes
	if idle.round > 0 && fl.rounds > 0 {
		c.RoundIdle, c.RoundLoaded, c.RoundLoadedN = idle.round, fl.round, fl.rounds
	}
	if after, ok := count(); ok && !relay {
		// The floor writes and bare rounds during the window are not the hand-offs'
		// work: every SET and PING a master answered, at what one cost when idle.
		after.less("set", fl.sets, idle.setCost)
		after.less("ping", fl.pings, idle.pingCost)
		c.MasterCalls, c.MasterCall, c.MasterCPU, c.MasterSys = after.perAcquisition(idle.before, c.Acquisitions)
		c.FloorCPU = idle.cpu
	}
	return c, nil
}

func workerFailure(b []byte) string {
	var r workerResult
	if json.Unmarshal(b, &r) == nil && r.Err != "" {
		return r.Err
	}
	return fmt.Sprintf("unexpected output %q", strings.TrimSpace(string(b)))
}

// summarizeCross computes a cell's numbers from the workers' reports (times relative
// to the common start) and checks every hold against every other.
func summarizeCross(results []workerResult, fenced bool, masters int) *CrossProcess {
	c := &CrossProcess{Processes: len(results), Fenced: fenced}
	var holds []crossHold
	per := make([]int, len(results))
	var waits []time.Duration
	var errs errorSamples
	var lastEnd int64
	var workerCPU, wakeups int64
	for i, r := range results {
		per[i] = len(r.Holds)
		workerCPU += r.CPU
		wakeups += r.Wakeups
		c.Failed += r.Failed
		for _, e := range r.Errors {
			errs.add(errors.New(e))
		}
		for j, h := range r.Holds {
			end := h[0] + h[1]
			ch := crossHold{Start: h[0], End: end, Fence: uint64(h[2]), Wait: h[3]}
			if j < len(r.Notices) && j < len(r.Sends) {
				ch.Notices, ch.Sends = r.Notices[j], r.Sends[j]
			}
			holds = append(holds, ch)
			waits = append(waits, time.Duration(h[3]))
			lastEnd = max(lastEnd, end)
		}
	}
	c.ErrorExamples = errs.examples
	c.Acquisitions = len(holds)
	if elapsed := time.Duration(lastEnd); elapsed > 0 {
		c.PerSecond = float64(c.Acquisitions) / elapsed.Seconds()
	}
	c.P50Wait, c.P99Wait = percentile(waits, 0.50), percentile(waits, 0.99)
	if len(waits) > 0 {
		c.MaxWait = slices.Max(waits)
	}
	c.Jain, c.MinPer, c.MaxPer = fairness(per)
	c.Overlaps, c.FenceViolations = checkHolds(holds, fenced) // sorts holds by start
	gaps, util := handOffs(holds)
	c.Timeline = handOffTimeline(holds, masters)
	if fenced {
		var chained []time.Duration
		for i := 1; i < len(holds); i++ {
			if holds[i].Fence == holds[i-1].Fence+1 {
				chained = append(chained, gaps[i-1])
			}
		}
		c.Chained, c.ChainedGapP50 = len(chained), percentile(chained, 0.50)
	}
	c.GapP50, c.GapP99, c.Utilisation = percentile(gaps, 0.50), percentile(gaps, 0.99), util
	if n := len(holds); n > 0 {
		c.WorkerCPU = time.Duration(workerCPU / int64(n))
		c.WorkerWakeups = float64(wakeups) / float64(n)
	}
	if len(holds) > 0 {
		var held int64
		for _, h := range holds {
			held += h.End - h.Start
		}
		c.Held = time.Duration(held / int64(len(holds)))
	}
	return c
}

// checkHolds checks every hold against every other: sorted by start, a hold that begins
// before the latest end so far overlaps an earlier one (not only its neighbour), and
// with fencing each hold's fence must be larger than the previous one's. Holds that
// touch, one ending where the next starts, do not overlap.
func checkHolds(holds []crossHold, fenced bool) (overlaps, fenceViolations int) {
	slices.SortFunc(holds, func(a, b crossHold) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	var maxEnd int64
	for i, h := range holds {
		if i > 0 {
			if h.Start < maxEnd {
				overlaps++
			}
			if fenced && h.Fence <= holds[i-1].Fence {
				fenceViolations++
			}
		}
		maxEnd = max(maxEnd, h.End)
	}
	return overlaps, fenceViolations
}

// crossSubjects are the selected implementations the cross-process scenario covers.
func crossSubjects(subjects []*subject) []*subject {
	var out []*subject
	for _, s := range subjects {
		if slices.Contains(CrossImplementations, s.name) {
			out = append(out, s)
		}
	}
	return out
}

// runCrossAll runs every cell: for each process count, each covered implementation, in
// an order that rotates with the process count.
func runCrossAll(ctx context.Context, cfg Config, subjects []*subject) error {
	cross := crossSubjects(subjects)
	floor := cfg.clientsFor(Floor)
	defer closeAll(floor)
	var admins []*redis.Client
	if cfg.NewAdminClients != nil {
		admins = cfg.NewAdminClients()
		defer closeAll(admins)
	}
	for round, p := range cfg.Processes {
		for j := range cross {
			s := cross[(j+round)%len(cross)]
			cfg.Log.Info("bench: cross-process contention", "impl", s.name, "processes", p, "duration", cfg.Duration)
			c, err := runCross(ctx, cfg, s.name, p, floor, admins)
			if err != nil {
				return fmt.Errorf("%w (cross-process, %s, %d processes)", err, s.name, p)
			}
			s.res.Cross = append(s.res.Cross, c)
			if s.name == Lockagent {
				cfg.Log.Info("bench: bare relay", "processes", p, "duration", cfg.Duration)
				// The relay is a reading beside the lock's cell, not part of it: one that
				// fails leaves its columns n/a, and the rest of the bench runs.
				if c.Relay, err = runCross(ctx, cfg, relayImpl, p, floor, nil); err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					cfg.Log.Warn("bench: the bare relay failed; its columns are n/a", "processes", p, "err", err)
				}
			}
		}
	}
	for _, s := range cross {
		slices.SortFunc(s.res.Cross, func(a, b *CrossProcess) int { return a.Processes - b.Processes })
	}
	return nil
}

// CrossAt returns the result's cross-process cell for procs processes, or nil.
func (r *Result) CrossAt(procs int) *CrossProcess {
	for _, c := range r.Cross {
		if c.Processes == procs {
			return c
		}
	}
	return nil
}

// idleFloor is what a cell measures before its window, with every worker started and idle.
type idleFloor struct {
	paced, pause      time.Duration // the paced floor writes' median, and the pause before each
	p50, p99          time.Duration // the floor writes, one after another
	cpu               time.Duration // the masters' CPU per floor write (all masters), 0 when not read
	round             time.Duration // the bare rounds' median
	setCost, pingCost benchCommand  // what one of the bench's SETs and PINGs cost the masters (to take the window's out of the hand-offs' work)
	before            masterWork    // the masters' work when the window starts (count's last reading)
}

// measureIdle makes the paced floor writes, then the floor writes, then the bare rounds,
// reading the masters' work (count) before and after the last two, so that what one floor
// write and one bare round cost the masters comes from the readings around them, and the
// paced writes are in no reading. A user that may not SET (a lock user confined to the
// kit's functions, without an EVAL user) leaves the floor unmeasured: n/a in the table. A
// measurement that fails is warned about and left zero; ctx's end is the error.
func measureIdle(ctx context.Context, cfg Config, pr *probe, count func() (masterWork, bool)) (idleFloor, error) {
	var f idleFloor
	warn := func(what string, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		cfg.Log.Warn("bench: the "+what+" could not be measured", "err", err)
		return nil
	}
	var paced int
	f.pause, paced = pacedFloor(cfg.Hold)
	var err error
	if f.paced, err = pr.floorWritesPaced(ctx, cfg.KeyPrefix+"floor-write", cfg.TTL, f.pause, paced); err != nil {
		if err := warn("paced floor write", err); err != nil {
			return f, err
		}
	}
	floorStart, _ := count()
	if f.p50, f.p99, err = pr.floorWrites(ctx, cfg.KeyPrefix+"floor-write", cfg.TTL, floorWriteSamples); err != nil {
		if err := warn(floorWriteOp, err); err != nil {
			return f, err
		}
	}
	afterFloor, ok := count()
	if ok && f.p50 > 0 {
		f.cpu = (afterFloor.cpu - floorStart.cpu) / floorWriteSamples
		f.setCost = afterFloor.costOf("set", floorStart)
	}
	if f.p50 > 0 {
		if f.round, err = pr.bareRounds(ctx, roundSamples); err != nil {
			if err := warn(bareRoundOp, err); err != nil {
				return f, err
			}
		}
	}
	if f.before, ok = count(); ok {
		f.pingCost = f.before.costOf("ping", afterFloor)
	}
	return f, nil
}
