package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/localmasters"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// testWorkerEnv makes the test binary a worker of the cross-process scenario (as the
// hidden `lockagent bench-worker` command is for lockagent bench).
const testWorkerEnv = "BENCH_TEST_CROSS_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(testWorkerEnv) == "1" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		err := ServeWorker(ctx, os.Stdin, os.Stdout, testWorkerClients)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testDeployment is the tests' deployment for a worker: the masters and a user.
type testDeployment struct {
	Addrs              []string
	Username, Password string
}

func testWorkerClients(raw json.RawMessage) ([]*redis.Client, error) {
	var d testDeployment
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, err
	}
	clients := make([]*redis.Client, len(d.Addrs))
	for i, a := range d.Addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a, Username: d.Username, Password: d.Password, ContextTimeoutEnabled: true, MaxRetries: -1})
	}
	return clients, nil
}

// crossConfig is a Config for the cross-process scenario on cluster, with worker
// processes of this test binary; every started worker is recorded in *started.
func crossConfig(t *testing.T, cluster *redistest.Cluster, started *[]*exec.Cmd) Config {
	t.Helper()
	mk := func(user, password string) json.RawMessage {
		b, err := json.Marshal(testDeployment{Addrs: cluster.Addrs(), Username: user, Password: password})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var mu sync.Mutex
	cfg := Config{
		NewClients:           func() []*redis.Client { return cluster.LockClients() },
		NewEvalClients:       func() []*redis.Client { return cluster.EvalClients() },
		WorkerDeployment:     mk(redistest.LockUser, redistest.LockPassword),
		WorkerEvalDeployment: mk(redistest.EvalUser, redistest.EvalPassword),
		Duration:             500 * time.Millisecond,
		TTL:                  5 * time.Second,
		KeyPrefix:            "cross:",
		SpawnWorker: func() (*exec.Cmd, error) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), testWorkerEnv+"=1")
			mu.Lock()
			*started = append(*started, cmd)
			mu.Unlock()
			return cmd, nil
		},
	}
	cfg.NewAdminClients = func() []*redis.Client {
		admins := make([]*redis.Client, len(cluster.Masters))
		for i, m := range cluster.Masters {
			admins[i] = m.ClientAs("default", redistest.AdminPassword)
		}
		return admins
	}
	cfg.defaults()
	return cfg
}

// runCrossCell is runCross with the floor's and the admin clients of cfg, as runCrossAll
// passes them.
func runCrossCell(ctx context.Context, t *testing.T, cfg Config, impl string, procs int) (*CrossProcess, error) {
	t.Helper()
	floor, admins := cfg.clientsFor(Floor), cfg.NewAdminClients()
	defer closeAll(floor)
	defer closeAll(admins)
	return runCross(ctx, cfg, impl, procs, floor, admins)
}

// assertReaped: every worker process started was waited for (so none is left running).
func assertReaped(t *testing.T, started []*exec.Cmd) {
	t.Helper()
	for _, cmd := range started {
		if cmd.Process != nil && cmd.ProcessState == nil {
			t.Errorf("worker %d was not stopped and reaped", cmd.Process.Pid)
		}
	}
}

// TestCrossProcessWorkers: the scenario runs real worker processes, each with its own
// client, on real masters, for the library (on the lock user, FCALL only) and redsync
// (on the EVAL user): every process reports, no two holds overlap, the library's fences
// increase in acquisition order (redsync has none), every worker is reaped and no lock
// is left behind. Behaviour only: the numbers are not judged.
func TestCrossProcessWorkers(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	var started []*exec.Cmd
	cfg := crossConfig(t, cluster, &started)
	const procs = 3
	for _, impl := range CrossImplementations {
		t.Run(impl, func(t *testing.T) {
			c, err := runCrossCell(context.Background(), t, cfg, impl, procs)
			if err != nil {
				t.Fatalf("runCross: %v", err)
			}
			if c.Processes != procs || c.Acquisitions == 0 || c.MaxPer == 0 || c.PerSecond <= 0 || c.P99Wait < c.P50Wait {
				t.Errorf("cell %+v, want acquisitions by %d processes", c, procs)
			}
			if c.Overlaps != 0 {
				t.Errorf("%d overlapping holds", c.Overlaps)
			}
			if wantFenced := impl != Redsync; c.Fenced != wantFenced || c.FenceViolations != 0 {
				t.Errorf("fenced %v with %d violations, want fenced %v and none", c.Fenced, c.FenceViolations, wantFenced)
			}
			if c.Failed != 0 {
				t.Errorf("%d lock calls gave up: %v", c.Failed, c.ErrorExamples)
			}
			// The hand-off against its floor, and the masters' work, were measured.
			if c.FloorWrite <= 0 || c.FloorWriteP99 < c.FloorWrite || c.GapP99 < c.GapP50 || c.Held < cfg.Hold ||
				c.Utilisation <= 0 || c.Utilisation > 1 || c.MasterCPU <= 0 || c.FloorCPU <= 0 || c.FloorLoaded <= 0 || c.FloorLoadedN == 0 ||
				c.RoundIdle <= 0 || c.RoundLoaded <= 0 || c.RoundLoadedN == 0 || c.WorkerCPU <= 0 || c.WorkerWakeups <= 0 ||
				c.FloorPaced <= 0 || c.FloorPause != cfg.Hold {
				t.Errorf("hand-off: floor %v/%v, gap %v/%v, hold %v, utilisation %v, master CPU %v, bare round %v/%v (%d), paced floor %v after %v",
					c.FloorWrite, c.FloorWriteP99, c.GapP50, c.GapP99, c.Held, c.Utilisation, c.MasterCPU, c.RoundIdle, c.RoundLoaded, c.RoundLoadedN,
					c.FloorPaced, c.FloorPause)
			}
			// The bench's own PINGs (the bare rounds) are not the lock's: what is left of
			// them per acquisition is less than the rounds one master answered.
			if left := c.MasterCalls["ping"] * float64(c.Acquisitions); left >= float64(c.RoundLoadedN) {
				t.Errorf("%.0f PINGs left in the masters' work, want fewer than the %d bare rounds under load", left, c.RoundLoadedN)
			}
			// Where the gap goes: the library's hand-offs by notice, step by step, in
			// order; the others send no notice.
			if tl := c.Timeline; impl == Lockagent {
				quorum := len(cluster.Masters)/2 + 1
				// Hand-offs by notice are the rule with the wait queue (the others follow a
				// window or an expiry), and each counts a majority of masters.
				if tl.N < (c.Acquisitions-1)/2 || len(tl.Notices) != quorum || tl.Sent <= 0 {
					t.Errorf("timeline %+v of %d acquisitions, want most of them by %d masters' notices, after requests that went out", tl, c.Acquisitions, quorum)
				}
			} else if tl.N != 0 {
				t.Errorf("timeline %+v, want none: %s sends no hand-off notice", tl, impl)
			}
			script := "fcall"
			if impl == Redsync {
				script = "evalsha"
			}
			if c.MasterCalls[script] < 1 || c.MasterCalls["info"] != 0 {
				t.Errorf("master calls per acquisition %v, want %s at least once per acquisition and no INFO", c.MasterCalls, script)
			}
			keys := []string{cfg.KeyPrefix + impl + ":cross", cfg.KeyPrefix + impl + ":cross:warm"}
			for _, m := range cluster.Masters {
				if n, err := m.Admin().Exists(context.Background(), keys...).Result(); err != nil || n != 0 {
					t.Errorf("master %s: %d of %v left (err %v)", m.Addr, n, keys, err)
				}
			}
		})
	}
	if len(started) != procs*len(CrossImplementations) {
		t.Errorf("%d worker processes started, want %d", len(started), procs*len(CrossImplementations))
	}
	assertReaped(t, started)
}

// TestCrossProcessRedsyncNeedsEvalUser: redsync's workers must get the EVAL user's
// deployment (TestCrossProcessWorkers passes only because they do): on the lock user,
// which may not EVAL, a worker's warm-up fails (its release is refused with NOPERM, or
// the unreleased key stops the next worker), and every worker is stopped by pid.
func TestCrossProcessRedsyncNeedsEvalUser(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	var started []*exec.Cmd
	cfg := crossConfig(t, cluster, &started)
	cfg.WorkerEvalDeployment = nil // redsync gets the lock user
	_, err := runCrossCell(context.Background(), t, cfg, Redsync, 2)
	if err == nil || !strings.Contains(err.Error(), "warm-up") {
		t.Errorf("runCross with redsync on the lock user: %v, want a worker's warm-up to fail", err)
	}
	assertReaped(t, started)
}

// TestCrossProcessStopsWorkers: when the run is cancelled (Ctrl-C) or a worker cannot be
// started, every worker already running is stopped by its pid and reaped.
func TestCrossProcessStopsWorkers(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	t.Run("cancelled", func(t *testing.T) {
		var started []*exec.Cmd
		cfg := crossConfig(t, cluster, &started)
		cfg.Duration = time.Minute
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(2*time.Second, cancel)
		_, err := runCrossCell(ctx, t, cfg, Lockagent, 3)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("runCross: %v, want context.Canceled", err)
		}
		if len(started) != 3 {
			t.Errorf("%d workers started, want 3", len(started))
		}
		assertReaped(t, started)
	})
	t.Run("spawn fails", func(t *testing.T) {
		var started []*exec.Cmd
		cfg := crossConfig(t, cluster, &started)
		spawn := cfg.SpawnWorker
		cfg.SpawnWorker = func() (*exec.Cmd, error) {
			if len(started) == 2 {
				return nil, errors.New("no more processes")
			}
			return spawn()
		}
		if _, err := runCrossCell(context.Background(), t, cfg, Lockagent, 3); err == nil || !strings.Contains(err.Error(), "no more processes") {
			t.Errorf("runCross: %v, want the spawn error", err)
		}
		if len(started) != 2 {
			t.Errorf("%d workers started, want 2", len(started))
		}
		assertReaped(t, started)
	})
}

// TestCheckHolds: the cross-process checker finds a hold that starts before an earlier
// one ended (even one that is not its neighbour in start order) and fences that do not
// increase; holds that touch end to start are not overlaps.
func TestCheckHolds(t *testing.T) {
	tests := []struct {
		name             string
		holds            []crossHold
		overlaps, fences int
	}{
		{"disjoint, fences up", []crossHold{{Start: 30, End: 40, Fence: 3}, {Start: 0, End: 10, Fence: 1}, {Start: 10, End: 20, Fence: 2}}, 0, 0},
		{"second inside a long first", []crossHold{{Start: 0, End: 100, Fence: 1}, {Start: 10, End: 20, Fence: 2}, {Start: 50, End: 60, Fence: 3}}, 2, 0},
		{"a short hold inside a long one, given out of order", []crossHold{{Start: 0, End: 100, Fence: 1}, {Start: 101, End: 102, Fence: 2}, {Start: 5, End: 6, Fence: 3}}, 1, 1},
		{"fence goes down", []crossHold{{Start: 0, End: 10, Fence: 5}, {Start: 20, End: 30, Fence: 4}}, 0, 1},
		{"fence repeats", []crossHold{{Start: 0, End: 10, Fence: 5}, {Start: 20, End: 30, Fence: 5}}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, f := checkHolds(tt.holds, true)
			if o != tt.overlaps || f != tt.fences {
				t.Errorf("checkHolds = %d overlaps, %d fence violations; want %d, %d", o, f, tt.overlaps, tt.fences)
			}
		})
	}
	if _, f := checkHolds([]crossHold{{Start: 0, End: 1}, {Start: 2, End: 3}}, false); f != 0 {
		t.Errorf("without fences, %d fence violations", f)
	}
}

// TestSummarizeCross: workers' compact records (start after the common start, length,
// fence, wait) become counts, fairness across processes, the rate over the window, and
// the checks: an overlap and a fence regression between two processes are found.
func TestSummarizeCross(t *testing.T) {
	const ms = int64(1e6)
	res := []workerResult{
		{Holds: [][4]int64{{0, 1 * ms, 1, 5 * ms}, {4 * ms, 1 * ms, 3, 1 * ms}}, Fenced: true},
		{Holds: [][4]int64{{2 * ms, 1 * ms, 2, 2 * ms}}, Failed: 1, Errors: []string{"gave up"}, Fenced: true},
	}
	c := summarizeCross(res, true, 3)
	if c.Processes != 2 || c.Acquisitions != 3 || c.Failed != 1 || c.MinPer != 1 || c.MaxPer != 2 || c.Overlaps != 0 || c.FenceViolations != 0 {
		t.Errorf("summary %+v", c)
	}
	if want := 9.0 / 10; c.Jain < want-1e-9 || c.Jain > want+1e-9 { // (1+2)^2 / (2*(1+4))
		t.Errorf("Jain %v, want %v", c.Jain, want)
	}
	if c.PerSecond != 600 { // 3 acquisitions in 5ms
		t.Errorf("PerSecond %v, want 600", c.PerSecond)
	}
	if c.MaxWait.Milliseconds() != 5 || c.ErrorExamples[0] != "gave up" {
		t.Errorf("MaxWait %v, errors %v", c.MaxWait, c.ErrorExamples)
	}
	// Holds 0-1, 2-3 (the other process) and 4-5 ms: two gaps of 1ms, held 3 of 5ms.
	if c.GapP50 != time.Millisecond || c.GapP99 != time.Millisecond || c.Held != time.Millisecond || c.Utilisation != 0.6 {
		t.Errorf("gap %v/%v, hold %v, utilisation %v; want 1ms/1ms, 1ms, 0.6", c.GapP50, c.GapP99, c.Held, c.Utilisation)
	}
	// Fences 1, 2, 3 in start order: both hand-offs chained (fence + 1).
	if c.Chained != 2 || c.ChainedGapP50 != time.Millisecond {
		t.Errorf("chained %d (gap %v), want 2 (1ms)", c.Chained, c.ChainedGapP50)
	}

	// The workers' notices and sends become the timeline: the second process heard masters
	// 0 and 1 (of 3) 100µs and 300µs after the first's unlock call at 1ms, and acquired
	// at 2ms; the first had started sending to both 10µs and 20µs after its unlock call.
	res[0].Notices = [][][2]int64{nil, nil}
	res[0].Sends = [][][2]int64{{{1*ms + 10_000, 0}, {1*ms + 20_000, 1}}, nil}
	res[1].Notices = [][][2]int64{{{1*ms + 100_000, 1}, {1*ms + 300_000, 0}}}
	res[1].Sends = [][][2]int64{nil}
	tl := summarizeCross(res, true, 3).Timeline
	if want := (Timeline{N: 1, Sent: 20 * time.Microsecond, Notices: []time.Duration{100 * time.Microsecond, 300 * time.Microsecond}, After: 700 * time.Microsecond}); tl.N != want.N ||
		tl.Sent != want.Sent || !slices.Equal(tl.Notices, want.Notices) || tl.After != want.After {
		t.Errorf("timeline %+v, want %+v", tl, want)
	}

	// The second process starts while the first still holds (0..3ms), with a lower fence.
	bad := []workerResult{
		{Holds: [][4]int64{{0, 3 * ms, 7, 0}}},
		{Holds: [][4]int64{{2 * ms, 1 * ms, 6, 0}}},
	}
	if c := summarizeCross(bad, true, 3); c.Overlaps != 1 || c.FenceViolations != 1 {
		t.Errorf("overlapping holds with a fence regression: %d overlaps, %d fence violations; want 1, 1", c.Overlaps, c.FenceViolations)
	}
}

// TestHandOffTimeline: a hand-off's steps are measured from the releasing client's
// unlock call, with each master's first notice that the next holder heard between that
// call and its acquisition (the call excluded, the acquisition included); a hand-off whose
// next holder heard fewer masters than a majority (it took the lock by its own attempt)
// is left out, and the releasing client's requests count once per master.
func TestHandOffTimeline(t *testing.T) {
	const us = int64(time.Microsecond)
	ev := func(at int64, master int64) [2]int64 { return [2]int64{at * us, master} }
	holds := []crossHold{
		{Start: 0, End: 1000 * us, Sends: [][2]int64{ev(1010, 0), ev(1015, 0), ev(1020, 1), ev(1030, 2), ev(1040, 3)}},
		// A notice at the unlock call itself does not count (one after the acquisition is
		// never there: perHold ends the notices at the lock call's return); master 1's
		// second notice does not either. The 3rd master's notice (master 2)
		// comes at 1400, and the lock call returns at the acquisition, 1500.
		{Start: 1500 * us, End: 2500 * us, Notices: [][2]int64{ev(1000, 4), ev(1200, 1), ev(1250, 1), ev(1300, 0), ev(1400, 2), ev(1450, 3), ev(1501, 4)},
			Sends: [][2]int64{ev(2600, 0), ev(2700, 1)}},
		// Two masters: not a hand-off by notice.
		{Start: 3000 * us, End: 4000 * us, Notices: [][2]int64{ev(2800, 0), ev(2900, 1), ev(2950, 1)}},
	}
	tl := handOffTimeline(holds, 5)
	want := Timeline{N: 1, Sent: 30 * time.Microsecond, // the 3rd master's (master 2) first request
		Notices: []time.Duration{200 * time.Microsecond, 300 * time.Microsecond, 400 * time.Microsecond}, After: 100 * time.Microsecond}
	if tl.N != want.N || tl.Sent != want.Sent || !slices.Equal(tl.Notices, want.Notices) || tl.After != want.After {
		t.Errorf("timeline %+v, want %+v", tl, want)
	}
	// A notice exactly at the acquisition counts.
	holds[2].Notices = append(holds[2].Notices, ev(3000, 2))
	if tl := handOffTimeline(holds, 5); tl.N != 2 || tl.After != 0 {
		t.Errorf("timeline %+v, want 2 hand-offs, the second acquired at its 3rd master's notice", tl)
	}
	if tl := handOffTimeline(holds, 0); tl.N != 0 || tl.Notices != nil {
		t.Errorf("timeline without masters %+v, want none", tl)
	}
	if tl := handOffTimeline(holds[2:3], 5); tl.N != 0 {
		t.Errorf("timeline of one hold %+v, want none", tl)
	}
}

// TestTimelineRecorderPerHold: each hold gets the notices its lock call heard and the
// requests its unlock call started, from the call to its return, relative to the start
// and with their masters, whatever order the goroutines reported them in.
func TestTimelineRecorderPerHold(t *testing.T) {
	r := &timelineRecorder{notices: []masterEvent{{105, 0}, {99, 1}, {120, 2}, {150, 1}},
		sends: []masterEvent{{131, 1}, {130, 0}, {160, 2}, {200, 0}}}
	calls := [][4]int64{{100, 120, 130, 140}, {140, 150, 160, 170}}
	notices, sends := r.perHold(calls, 100)
	if want := [][][2]int64{{{5, 0}, {20, 2}}, {{50, 1}}}; !slices.EqualFunc(notices, want, slices.Equal) {
		t.Errorf("notices %v, want %v", notices, want)
	}
	if want := [][][2]int64{{{30, 0}, {31, 1}}, {{60, 2}}}; !slices.EqualFunc(sends, want, slices.Equal) {
		t.Errorf("sends %v, want %v", sends, want)
	}
	if n, s := (&timelineRecorder{}).perHold(calls, 100); n != nil || s != nil {
		t.Errorf("nothing reported: %v %v, want nil", n, s)
	}
	// The recorder's clock is CLOCK_MONOTONIC, read without a system call, and moves with
	// it: a notice 2ms after the recorder started is stamped then, not at the start.
	rec, err := newTimelineRecorder()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	before, _ := monoNow()
	rec.notice(3)
	after, _ := monoNow()
	const slack = int64(100 * time.Microsecond) // the calibration's own error
	if e := rec.notices[0]; e.master != 3 || e.at < before-slack || e.at > after+slack {
		t.Errorf("notice %+v, want master 3 between %d and %d (CLOCK_MONOTONIC)", e, before, after)
	}
}

// TestCrossReport: the table prints a row per implementation and process count with its
// ratios to redsync, and the targets say met or MISSED with the value.
func TestCrossReport(t *testing.T) {
	cell := func(procs int, perSec float64, p99 time.Duration, overlaps int) *CrossProcess {
		return &CrossProcess{Processes: procs, Acquisitions: 10, PerSecond: perSec, P99Wait: p99, Jain: 1, MinPer: 5, MaxPer: 5,
			Fenced: true, Overlaps: overlaps}
	}
	rep := &Report{Config: Config{Hold: time.Millisecond, TTL: time.Second, Duration: time.Second}, Results: []*Result{
		{Name: Lockagent, Cross: []*CrossProcess{cell(8, 260, 10*time.Millisecond, 0), cell(16, 200, 20*time.Millisecond, 0)}},
		{Name: Redsync, Cross: []*CrossProcess{{Processes: 8, PerSecond: 200, P99Wait: 100 * time.Millisecond, Jain: 0.8}, {Processes: 16, PerSecond: 200, P99Wait: 100 * time.Millisecond, Overlaps: 1}}},
	}}
	rep.Results[0].Cross[0].FloorWrite, rep.Results[0].Cross[0].GapP50 = 400*time.Microsecond, 500*time.Microsecond
	// A write after a hold's pause took 625µs: the gap is 0.80x of that.
	rep.Results[0].Cross[0].FloorPaced, rep.Results[0].Cross[0].FloorPause = 625*time.Microsecond, time.Millisecond
	rep.Results[0].Cross[0].Held, rep.Results[0].Cross[0].Utilisation = time.Millisecond, 0.6
	// The window's load cost a bare round 120µs: the gap less the load is 380µs, 0.95x.
	rep.Results[0].Cross[0].RoundIdle, rep.Results[0].Cross[0].RoundLoaded = 100*time.Microsecond, 220*time.Microsecond
	rep.Results[0].Cross[0].RoundLoadedN = 97
	rep.Results[0].Cross[0].MasterCalls, rep.Results[0].Cross[0].MasterCPU = map[string]float64{"fcall": 10, "publish": 5}, 80*time.Microsecond
	rep.Results[0].Cross[0].MasterCall = map[string]time.Duration{"fcall": 45 * time.Microsecond}
	rep.Results[0].Cross[0].Timeline = Timeline{N: 9, Sent: 70 * time.Microsecond,
		Notices: []time.Duration{260 * time.Microsecond, 330 * time.Microsecond, 400 * time.Microsecond}, After: 12 * time.Microsecond}
	// The bare relay beside the lock: 150µs at 8 processes, 190µs at 16, where the lock's
	// gap grew from 500µs to 560µs; the second relay's turns were not in order.
	rep.Results[0].Cross[0].Relay = &CrossProcess{Acquisitions: 40, GapP50: 150 * time.Microsecond, GapP99: 300 * time.Microsecond,
		WorkerCPU: 400 * time.Microsecond, WorkerWakeups: 24}
	rep.Results[0].Cross[1].GapP50 = 560 * time.Microsecond
	rep.Results[0].Cross[1].Relay = &CrossProcess{Acquisitions: 30, GapP50: 190 * time.Microsecond, GapP99: 350 * time.Microsecond, FenceViolations: 2, Failed: 1}
	// A cell whose gap was shorter than its relay's.
	rep.Results[0].Cross = append(rep.Results[0].Cross, cell(32, 250, 20*time.Millisecond, 0))
	rep.Results[0].Cross[2].GapP50 = 200 * time.Microsecond
	rep.Results[0].Cross[2].Relay = &CrossProcess{Acquisitions: 30, GapP50: 250 * time.Microsecond}
	// A relay that stalled before its second turn: no gap, but its line says so.
	rep.Results[0].Cross = append(rep.Results[0].Cross, cell(64, 250, 20*time.Millisecond, 0))
	rep.Results[0].Cross[3].Relay = &CrossProcess{Acquisitions: 1, Failed: 8}
	var b strings.Builder
	if err := rep.writeCross(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"1.30x", "0.10x", "1.00x", "0.20x", "n/a", "ok",
		"1.25x", "0.600", "0.714", "100µs/220µs", "625µs", "0.80x", "each made after a pause as long as the hold (1ms; at most 100ms)", " 97 ", "380µs", "0.95x", "n/a/n/a", "lockagent, 8 processes: master CPU 80µs (kernel 0; a floor write: n/a); fcall 10.00 (45µs) publish 5.00",
		"lockagent, 8 processes: timeline of 9 hand-offs by notice: request to the 3rd master going out at 70µs; notices from 3 masters at the next holder at 260µs, 330µs, 400µs; its lock call returned 12µs after the 3rd",
		"lockagent, 8 processes: bare relay: 40 turns in order, gap p50 150µs, p99 300µs; workers: CPU 400µs, 24.0 wake-ups per turn\n",
		"lockagent, 16 processes: bare relay: 30 turns NOT in order (0 overlaps, 2 out of order), STALLED: 1 of its workers gave up waiting for a turn, gap p50 190µs, p99 350µs; workers: CPU 0, 0.0 wake-ups per turn; since 8 processes, the relay's gap p50 grew +40µs, the lock's +60µs",
		"lockagent, 64 processes: bare relay: 1 turns in order, STALLED: 8 of its workers gave up waiting for a turn, gap p50 n/a, p99 n/a; workers: CPU 0, 0.0 wake-ups per turn\n",
		"lockagent, 32 processes: bare relay: 30 turns in order, gap p50 250µs, p99 n/a; workers: CPU 0, 0.0 wake-ups per turn; since 8 processes, the relay's gap p50 grew +100µs, the lock's -300µs"} {
		if !strings.Contains(out, want) {
			t.Errorf("cross table lacks %q:\n%s", want, out)
		}
	}
	// The hand-off table's last two columns: the relay's gap and the lock's over it.
	_, handOff, _ := strings.Cut(out, "hand-off against the floor")
	relayCols := map[string]string{}
	for _, l := range strings.Split(handOff, "\n") {
		if f := strings.Fields(l); len(f) >= 20 && (f[0] == Lockagent || f[0] == Redsync) {
			relayCols[f[0]+" "+f[1]] = strings.Join(f[len(f)-2:], " ")
		}
	}
	for row, want := range map[string]string{"lockagent 8": "150µs 350µs", "lockagent 16": "190µs 370µs", "lockagent 32": "250µs -50µs", "lockagent 64": "n/a n/a", "redsync 8": "n/a n/a"} {
		if relayCols[row] != want {
			t.Errorf("%s: relay columns %q, want %q:\n%s", row, relayCols[row], want, out)
		}
	}
	// Without a relay in any cell there is no relay legend.
	var none strings.Builder
	if err := (&Report{Config: rep.Config, Results: rep.Results[1:]}).writeCross(&none); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "\nbare relay: ") || strings.Contains(none.String(), "\nbare relay: ") {
		t.Errorf("the relay's legend: with relays %v, without %v, want only with:\n%s", strings.Contains(out, "\nbare relay: "), strings.Contains(none.String(), "\nbare relay: "), none.String())
	}
	if strings.Contains(out, "16 processes: timeline") {
		t.Errorf("a timeline line for a cell without one:\n%s", out)
	}
	met := map[string]bool{}
	for _, tg := range rep.CrossTargets() {
		met[tg.Name] = tg.Met()
	}
	want := map[string]bool{
		"cross-process, 8 processes: acq/s >= 1.3x redsync":                               true,
		"cross-process, 16 processes: acq/s >= 1.3x redsync":                              false,
		"cross-process, 8 processes: p99 wait <= 0.5x redsync":                            true,
		"cross-process, 16 processes: Jain >= 0.95":                                       true,
		"cross-process: acq/s at 16 >= 0.9x acq/s at 8":                                   false, // 200/260
		"cross-process: overlapping holds == 0":                                           false, // redsync's
		"cross-process: fence order violations == 0":                                      true,
		"cross-process, 8 processes: hand-off gap p50 <= 1.1x one fsynced majority write": false, // 1.25x
		"cross-process, 8 processes: Jain >= 0.99":                                        true,
	}
	for name, w := range want {
		if got, ok := met[name]; !ok || got != w {
			t.Errorf("target %q: met %v (present %v), want %v", name, got, ok, w)
		}
	}
	// The gap less the load is a diagnostic: no target judges it.
	for name := range met {
		if strings.Contains(name, "less the load") {
			t.Errorf("target %q: the gap less the load is not a target", name)
		}
	}
}

// TestRunCrossProcess: Run adds the cross-process scenario for the selected
// implementations it covers (not for the others), with the bare relay beside the
// library's cells, and the table prints it beside the in-process contention row, with
// its targets.
func TestRunCrossProcess(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	var started []*exec.Cmd
	cfg := crossConfig(t, cluster, &started)
	cfg.Implementations = []string{Lockagent, LockagentNoFence, Redsync}
	cfg.Iterations, cfg.Rounds, cfg.Duration, cfg.Goroutines, cfg.Contenders = 5, 1, 300*time.Millisecond, 2, 2
	cfg.Processes = []int{2, 3}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, res := range rep.Results {
		covered := res.Name != LockagentNoFence
		if got := len(res.Cross); covered && got != 2 || !covered && got != 0 {
			t.Errorf("%s: %d cross-process cells", res.Name, got)
		}
		for i, c := range res.Cross {
			if c.Processes != cfg.Processes[i] || c.Acquisitions == 0 || c.Overlaps != 0 || c.FenceViolations != 0 {
				t.Errorf("%s: cell %+v", res.Name, c)
			}
			// The bare relay runs with as many processes after the library's cells only.
			if r := c.Relay; res.Name == Lockagent && (r == nil || r.Processes != c.Processes || r.Acquisitions == 0 || r.Overlaps != 0 || r.FenceViolations != 0) ||
				res.Name != Lockagent && r != nil {
				t.Errorf("%s, %d processes: bare relay %+v", res.Name, c.Processes, r)
			}
		}
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"in-process contention, 2 goroutines, one client", "cross-process contention: P worker processes",
		"cross-process: overlapping holds == 0", "cross-process: fence order violations == 0"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	assertReaped(t, started)
}

// TestGapLessLoad: the gap less the load takes off how much longer the bare round took
// under load (adds it when the loaded round was the quicker), never goes below zero, and
// is unknown without both rounds or with too few under load.
func TestGapLessLoad(t *testing.T) {
	us := time.Microsecond
	for _, tt := range []struct {
		name              string
		gap, idle, loaded time.Duration
		n                 int
		want              time.Duration
		known             bool
	}{
		{"load made the round longer", 500 * us, 200 * us, 320 * us, 90, 380 * us, true},
		{"the loaded round was the quicker", 500 * us, 200 * us, 180 * us, 90, 520 * us, true},
		{"never below zero", 100 * us, 100 * us, 400 * us, 90, 0, true},
		{"just enough rounds under load", 500 * us, 200 * us, 320 * us, minLoadedRounds, 380 * us, true},
		{"too few rounds under load", 500 * us, 200 * us, 320 * us, minLoadedRounds - 1, 0, false},
		{"no idle round", 500 * us, 0, 320 * us, 90, 0, false},
		{"no round under load", 500 * us, 200 * us, 0, 0, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &CrossProcess{GapP50: tt.gap, RoundIdle: tt.idle, RoundLoaded: tt.loaded, RoundLoadedN: tt.n}
			if got, known := c.GapLessLoad(); got != tt.want || known != tt.known {
				t.Errorf("GapLessLoad() = %v, %v; want %v, %v", got, known, tt.want, tt.known)
			}
		})
	}
}

// TestProbeLeavesOutAPausedMaster: a master that does not answer (paused) does not fail
// a bare round or a floor write while a majority answers; the sample that met it ends at
// majorityTimeout (its clients have no read timeout of their own: without the bound the
// test would hang) and leaves it out of the probe's later samples, which count the
// masters that answered; with a majority paused a sample fails, naming it.
func TestProbeLeavesOutAPausedMaster(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	var clients []*redis.Client
	for _, m := range cluster.Masters {
		o := *m.Admin().Options()
		o.ReadTimeout, o.ContextTimeoutEnabled = -1, true
		c := redis.NewClient(&o)
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
	}
	ctx := context.Background()
	pause := func(m *localmasters.Master) {
		if err := m.Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Resume() })
	}
	p := newProbe(clients)
	pause(cluster.Masters[2])
	if _, answered, err := p.bareRound(ctx); err != nil || answered != 2 {
		t.Errorf("bare round with one master of three paused: %d answered, err %v; want 2, nil", answered, err)
	}
	if out := p.leftOut(); len(out) != 1 || !strings.Contains(out[0], cluster.Masters[2].Addr) || !strings.Contains(out[0], "no answer within 2s") {
		t.Errorf("left out %q, want the paused master, with no answer within 2s", out)
	}
	for range 3 {
		if _, answered, err := p.floorWrite(ctx, "floor-write", time.Second); err != nil || answered != 2 {
			t.Errorf("floor write with the paused master left out: %d answered, err %v; want 2, nil", answered, err)
		}
	}
	pause(cluster.Masters[1])
	if _, answered, err := p.bareRound(ctx); err == nil || answered != 1 || !strings.Contains(err.Error(), "bare round: 2 of 3 masters failed") {
		t.Errorf("bare round with two masters of three paused: %d answered, err %v; want 1 and the failure named", answered, err)
	}
	if out := p.leftOut(); len(out) != 2 {
		t.Errorf("left out %q, want both paused masters", out)
	}
}

// TestPacedFloor: a paced write waits one hold, at most pacedFloorMaxPause; a cell makes
// floorWriteSamples of them unless their pauses would pass pacedFloorBudget (20 at least).
func TestPacedFloor(t *testing.T) {
	for _, c := range []struct {
		hold, pause time.Duration
		n           int
	}{
		{50 * time.Microsecond, 50 * time.Microsecond, floorWriteSamples},
		{time.Millisecond, time.Millisecond, floorWriteSamples},
		{20 * time.Millisecond, 20 * time.Millisecond, 100},
		{30 * time.Millisecond, 30 * time.Millisecond, 66},
		{100 * time.Millisecond, 100 * time.Millisecond, 20},
		{time.Minute, pacedFloorMaxPause, 20},
	} {
		if pause, n := pacedFloor(c.hold); pause != c.pause || n != c.n {
			t.Errorf("pacedFloor(%v) = %v, %d; want %v, %d", c.hold, pause, n, c.pause, c.n)
		}
	}
}

// TestFloorWritesPaced: the paced floor makes its n writes on every master, each after
// the pause, and the pause is not in the time of a write.
func TestFloorWritesPaced(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	var clients []*redis.Client
	for _, m := range cluster.Masters {
		clients = append(clients, m.Admin())
	}
	ctx := context.Background()
	sets := func() int64 {
		w, err := readMasterWork(ctx, clients)
		if err != nil {
			t.Fatal(err)
		}
		return w.calls["set"]
	}
	const n, pause = 3, 400 * time.Millisecond
	before, start := sets(), time.Now()
	p50, err := newProbe(clients).floorWritesPaced(ctx, "paced-floor", time.Second, pause, n)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if got := sets() - before; got != n*int64(len(clients)) {
		t.Errorf("%d SETs on the masters, want %d (%d writes on each of %d)", got, n*len(clients), n, len(clients))
	}
	if took < n*pause {
		t.Errorf("%d paced writes took %v, want at least %d pauses of %v", n, took, n, pause)
	}
	// The writes took what was left after the pauses; the median of three is no more.
	if writes := took - n*pause; p50 <= 0 || p50 > writes {
		t.Errorf("median write %v, want a write's time, without the %v pause (the %d writes took %v in all)", p50, pause, n, writes)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	done := make(chan error, 1)
	go func() {
		_, err := newProbe(clients).floorWritesPaced(cancelled, "paced-floor", time.Second, time.Hour, n)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("paced writes with a cancelled context: %v, want it cancelled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("paced writes with a cancelled context still pausing (an hour each) after a minute")
	}
}

// TestMeasureIdleOrder: before a window the paced floor writes come first, then the
// floor writes and the bare rounds, each between two readings of the masters' work: the
// cost of one floor write and one bare round is read around them alone, and the paced
// writes are in no reading.
func TestMeasureIdleOrder(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	var clients []*redis.Client
	for _, m := range cluster.Masters {
		clients = append(clients, m.Admin())
	}
	pr := newProbe(clients)
	var readings []map[string]int
	count := func() (masterWork, bool) {
		readings = append(readings, maps.Clone(pr.answered))
		return masterWork{}, true
	}
	cfg := Config{Hold: 10 * time.Millisecond, TTL: time.Second, KeyPrefix: "idle:", Log: slog.New(slog.DiscardHandler)}
	f, err := measureIdle(context.Background(), cfg, pr, count)
	if err != nil {
		t.Fatal(err)
	}
	if f.paced <= 0 || f.pause != cfg.Hold || f.p50 <= 0 || f.round <= 0 {
		t.Errorf("paced %v after %v, floor %v, bare round %v: want all measured, the pause the hold", f.paced, f.pause, f.p50, f.round)
	}
	_, paced := pacedFloor(cfg.Hold)
	m := len(clients)
	want := []map[string]int{
		{floorWriteOp: paced * m},
		{floorWriteOp: (paced + floorWriteSamples) * m},
		{floorWriteOp: (paced + floorWriteSamples) * m, bareRoundOp: roundSamples * m},
	}
	if !reflect.DeepEqual(readings, want) {
		t.Errorf("the bench's own commands answered at each reading: %v, want %v", readings, want)
	}
}
