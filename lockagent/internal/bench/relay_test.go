package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestRelayTakesATurnAtTheMajority: a relay worker takes a turn once a majority of the
// masters sent it, and times it from that message (a minority's turn is never taken, nor
// a turn already taken again when more of its messages come), passes the next turn to the
// next worker on every master, and stops on the stop message; the worker that takes a
// turn after the window publishes the stop on every master and passes no turn on.
func TestRelayTakesATurnAtTheMajority(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	clients := cluster.LockClients()
	t.Cleanup(func() { _ = closeAll(clients) })
	ctx := context.Background()
	observe := func(channel string) func() []string {
		var subs []func() []string
		for _, m := range cluster.Masters {
			ps := m.Admin().Subscribe(ctx, channel)
			t.Cleanup(func() { _ = ps.Close() })
			if _, err := ps.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			subs = append(subs, func() []string {
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				m, err := ps.ReceiveMessage(rctx)
				if err != nil {
					return []string{err.Error()}
				}
				return []string{m.Payload}
			})
		}
		return func() []string {
			var got []string
			for _, s := range subs {
				got = append(got, s()...)
			}
			return got
		}
	}
	start := func() int64 {
		now, err := monoNow()
		if err != nil {
			t.Skip(err)
		}
		return now
	}

	t.Run("a majority's turn, then the next one's", func(t *testing.T) {
		next := observe("relay:2")
		msgs := make(chan string) // each message taken before the next is sent
		spec := workerSpec{Key: "relay", Index: 1, Count: 3, Hold: time.Millisecond, Duration: time.Hour}
		type result struct {
			res workerResult
			err error
		}
		out := make(chan result, 1)
		startAt := start()
		go func() {
			res, err := relayWork(ctx, spec, clients, msgs, startAt)
			out <- result{res, err}
		}()
		msgs <- "1"
		msgs <- "2"
		msgs <- "bad"       // taken once the "2" before it was handled
		majority := start() // turn 2's majority is the next message
		for _, m := range []string{"2", "2", "2", "1", relayStop} {
			msgs <- m
		}
		r := <-out
		res, err := r.res, r.err
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Holds) > 0 && res.Holds[0][0]+startAt < majority {
			t.Errorf("turn 2 taken %v before its majority's message was sent", time.Duration(majority-res.Holds[0][0]-startAt))
		}
		var turns []int64
		for _, h := range res.Holds {
			turns = append(turns, h[2])
			if h[1] < int64(spec.Hold) {
				t.Errorf("turn %d held %v, want the hold (%v) at least", h[2], time.Duration(h[1]), spec.Hold)
			}
		}
		if !slices.Equal(turns, []int64{2}) {
			t.Errorf("turns taken %v, want [2]: turn 1 came from one master of 3, turn 2's later messages after it was taken", turns)
		}
		if got := next(); !slices.Equal(got, []string{"3", "3", "3"}) {
			t.Errorf("the next worker heard %v, want turn 3 from every master", got)
		}
	})

	t.Run("after the window: the stop, not the next turn", func(t *testing.T) {
		stop, next := observe("relay:"+relayStop), observe("relay:1")
		spec := workerSpec{Key: "relay", Index: 0, Count: 3, Hold: time.Millisecond} // a window of 0
		res, err := relayWork(ctx, spec, clients, make(chan string), start())
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Holds) != 0 {
			t.Errorf("holds %v after the window, want none", res.Holds)
		}
		if got := stop(); !slices.Equal(got, []string{relayStop, relayStop, relayStop}) {
			t.Errorf("the relay's stop channel heard %v, want the stop from every master", got)
		}
		// The next worker's first message on every master is one sent after relayWork
		// returned: it was told nothing.
		for _, m := range cluster.Masters {
			if err := m.Admin().Publish(ctx, "relay:1", "after").Err(); err != nil {
				t.Fatal(err)
			}
		}
		if got := next(); !slices.Equal(got, []string{"after", "after", "after"}) {
			t.Errorf("the next worker heard %v first, want nothing before the stop's end", got)
		}
	})
}

// TestRelayGivesUp: a relay worker that no turn and no stop reach by relayGrace after the
// window stops waiting and reports that it gave up.
func TestRelayGivesUp(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	clients := cluster.LockClients()
	t.Cleanup(func() { _ = closeAll(clients) })
	grace := relayGrace
	relayGrace = 50 * time.Millisecond
	t.Cleanup(func() { relayGrace = grace })
	now, err := monoNow()
	if err != nil {
		t.Skip(err)
	}
	spec := workerSpec{Key: "relay", Index: 1, Count: 3, Hold: time.Millisecond} // a window of 0
	res, err := relayWork(context.Background(), spec, clients, make(chan string), now)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed != 1 || len(res.Errors) != 1 || res.Errors[0] != errRelayStalled.Error() || len(res.Holds) != 0 {
		t.Errorf("gave up %d times (%v), %d turns, want once, saying so, and no turn", res.Failed, res.Errors, len(res.Holds))
	}
}

// TestRelayWithAMasterHung: a relay worker subscribes on every master at once, each within
// its own bound, so a master that hangs (stopped, its connections accepted by the kernel
// and never answered) is left out, whichever it is, and the worker runs on the majority:
// it takes its turns and reports them.
func TestRelayWithAMasterHung(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	if err := cluster.Masters[0].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Masters[0].Resume() })
	// The bound is a guard: the two masters that answer confirm well within it even on a
	// busy machine, and the stopped one never does.
	sub := relaySubscribe
	relaySubscribe = 2 * time.Second
	t.Cleanup(func() { relaySubscribe = sub })
	clients := cluster.LockClients()
	stdin, toWorker := io.Pipe()
	fromWorker, stdout := io.Pipe()
	spec := workerSpec{Impl: relayImpl, Key: "relay-hung", Index: 0, Count: 1, Hold: time.Millisecond, Duration: time.Second}
	var report workerResult
	done := make(chan error, 1)
	go func() {
		done <- serveRelay(context.Background(), bufio.NewReader(stdin), stdout, spec, clients, func(res workerResult) error {
			report = res
			return nil
		})
		_ = stdout.Close()
	}()
	lines := bufio.NewReader(fromWorker)
	if line, err := lines.ReadString('\n'); err != nil || line != "ready\n" {
		_ = toWorker.Close()
		t.Fatalf("worker said %q (%v) before its start, want ready; its report: %+v", line, err, report)
	}
	// Left out of the relay, the master may answer again: the PUBLISHes queued for it go out
	// instead of waiting for their bound at the end.
	if err := cluster.Masters[0].Resume(); err != nil {
		t.Fatal(err)
	}
	now, err := monoNow()
	if err != nil {
		_ = toWorker.Close()
		t.Skip(err)
	}
	if _, err := fmt.Fprintf(toWorker, "%d\n", now); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_ = toWorker.Close()
	if report.Err != "" || report.Failed != 0 || len(report.Holds) == 0 {
		t.Errorf("report %+v, want turns on the two masters that answer", report)
	}
}

// TestRelayWorkers: the bare relay runs real worker processes on real masters, each
// with its own clients: the turns go round the ring (every process takes its turns in
// rotation, so their counts differ by one at most), in order and one at a time, every
// process reports its work, and every worker is reaped. No floor is measured for it and
// it writes no key.
func TestRelayWorkers(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	var started []*exec.Cmd
	cfg := crossConfig(t, cluster, &started)
	const procs = 3
	c, err := runCrossCell(context.Background(), t, cfg, relayImpl, procs)
	if err != nil {
		t.Fatalf("runCross: %v", err)
	}
	if c.Processes != procs || c.Acquisitions < procs || c.MinPer < 1 || c.MaxPer-c.MinPer > 1 {
		t.Errorf("%d turns by %d processes, %d to %d each, want every process's turns in rotation", c.Acquisitions, c.Processes, c.MinPer, c.MaxPer)
	}
	if !c.Fenced || c.Overlaps != 0 || c.FenceViolations != 0 {
		t.Errorf("turns numbered %v: %d overlapping, %d out of order, want none", c.Fenced, c.Overlaps, c.FenceViolations)
	}
	if c.GapP50 <= 0 || c.GapP99 < c.GapP50 || c.Held < cfg.Hold || c.P50Wait <= 0 || c.WorkerCPU <= 0 || c.WorkerWakeups <= 0 {
		t.Errorf("gap %v/%v, hold %v, wait %v, worker CPU %v, %v wake-ups, want them measured", c.GapP50, c.GapP99, c.Held, c.P50Wait, c.WorkerCPU, c.WorkerWakeups)
	}
	if c.FloorWrite != 0 || c.MasterCalls != nil || c.Relay != nil {
		t.Errorf("floor %v, master calls %v, relay %v: the relay is read against the lock's cell, want none of its own", c.FloorWrite, c.MasterCalls, c.Relay)
	}
	for _, m := range cluster.Masters {
		if keys, err := m.Admin().Keys(context.Background(), cfg.KeyPrefix+"*").Result(); err != nil || len(keys) != 0 {
			t.Errorf("master %s: keys %v (err %v), want none", m.Addr, keys, err)
		}
	}
	if len(started) != procs {
		t.Errorf("%d worker processes started, want %d", len(started), procs)
	}
	assertReaped(t, started)
}
