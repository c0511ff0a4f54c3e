package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestPausedMasterUnderLoad: Liveness B under load. One master is
// SIGSTOPped while many goroutines acquire and release distinct keys: its pipeline is
// stuck and its queue fills. A full queue must cost that master's vote only: the other
// four still decide every round, acquisitions keep succeeding, and releases return at the
// majority instead of waiting for the stuck master.
func TestPausedMasterUnderLoad(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	// The stuck master's queue (16*MaxBatch) fills within the first second at this load:
	// that is the state under test.
	var stuckVotes atomic.Int64 // the paused master's votes given up at once (queue full)
	hooks := redlock.HookFuncs{OnMasterReply: func(e redlock.MasterEvent) {
		if e.Master == 0 && errors.Is(e.Err, redlock.ErrNodeTimeout) && strings.Contains(e.Err.Error(), "queue is full") {
			stuckVotes.Add(1)
		}
	}}
	// A node timeout of a second: on a loaded test machine a healthy master never takes
	// that long, so a healthy master reported as timed out is the defect, not the load.
	// MaxBatch 8 makes the stuck master's queue 128 operations, which requests waiting out
	// their node timeout fill at any speed the machine runs the goroutines (with the default
	// 4096 a loaded machine dropped expired requests faster than it queued new ones, and the
	// state under test never came); the healthy masters have at most one operation per
	// goroutine outstanding, far below it.
	c := newClient(t, cl, redlock.Options{Hooks: hooks, NodeTimeout: time.Second, MaxBatch: 8})
	const paused = 0
	resumeOnCleanup(t, cl.Masters[paused]) // runs before the Client's Close
	if err := cl.Masters[paused].Pause(); err != nil {
		t.Fatalf("pause: %v", err)
	}
	const goroutines = 32
	// The load runs for at least runFor and until the stuck master's queue has filled (the
	// state under test), however long a loaded machine takes to get there; giveUp only ends
	// a run that never gets there.
	const runFor, giveUp = 2 * time.Second, 2 * time.Minute
	start := time.Now()
	running := func() bool {
		elapsed := time.Since(start)
		return elapsed < giveUp && (elapsed < runFor || stuckVotes.Load() == 0)
	}
	var ok, failed atomic.Int64
	var mu sync.Mutex
	var acquireErrs, releaseErrs []error
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; running(); i++ {
				l, err := c.TryAcquire(context.Background(), fmt.Sprintf("paused-load-%d-%d", g, i), 10*time.Second)
				if err != nil {
					failed.Add(1)
					mu.Lock()
					acquireErrs = append(acquireErrs, err)
					mu.Unlock()
					continue
				}
				ok.Add(1)
				if err := l.Release(context.Background()); err != nil {
					mu.Lock()
					releaseErrs = append(releaseErrs, err)
					mu.Unlock()
				}
			}
		}(g)
	}
	wg.Wait()
	t.Logf("master %d paused: %d acquisitions, %d failed; %d requests to it refused at once (queue full)", paused, ok.Load(), failed.Load(), stuckVotes.Load())
	if stuckVotes.Load() == 0 {
		t.Errorf("setup: the paused master's queue never filled, so the test proved nothing: raise the load")
	}
	if ok.Load() <= failed.Load() {
		t.Errorf("%d acquisitions succeeded and %d failed with one master of five paused: want most to succeed", ok.Load(), failed.Load())
	}
	for i, err := range acquireErrs {
		if i == 5 {
			t.Errorf("... %d failed acquisitions in all", len(acquireErrs))
			break
		}
		var ue *redlock.UnavailableError
		if !errors.As(err, &ue) {
			t.Errorf("acquire failed with %v, want *UnavailableError", err)
			continue
		}
		// Four healthy masters out of five make a majority: a failure means a healthy
		// master's request was held up (behind the stuck one) until it timed out.
		for _, me := range ue.Errors {
			if me.Master != paused && errors.Is(me.Err, redlock.ErrNodeTimeout) {
				t.Errorf("acquire failed with healthy master %d reported as a node timeout: %v", me.Master, err)
				break
			}
		}
	}
	for i, err := range releaseErrs {
		if i == 5 {
			break
		}
		t.Errorf("Release with one master paused: %v, want nil (a majority confirmed)", err)
	}
	if len(releaseErrs) > 5 {
		t.Errorf("... %d failed releases in all", len(releaseErrs))
	}
}
