package bench

import (
	"cmp"
	"slices"
	"sync"
	"time"
)

// timelineRecorder keeps, in a worker process, the moments the library reports through
// handofftrace, on CLOCK_MONOTONIC: a master's goroutine starting to send it a request,
// and a hand-off notice arriving from a master. The moments are read from Go's monotonic
// clock (the vDSO, no system call on the paths it times) and put on CLOCK_MONOTONIC by the
// closest pair of readings of both taken when the recorder starts (newTimelineRecorder).
type timelineRecorder struct {
	mono0          int64     // CLOCK_MONOTONIC (ns) ...
	since          time.Time // ... when this was read
	mu             sync.Mutex
	sends, notices []masterEvent
}

// masterEvent is a moment (CLOCK_MONOTONIC ns) and the master it concerns.
type masterEvent struct {
	at     int64
	master int
}

func newTimelineRecorder() (*timelineRecorder, error) {
	r := &timelineRecorder{sends: make([]masterEvent, 0, 1<<14), notices: make([]masterEvent, 0, 1<<13)}
	// CLOCK_MONOTONIC between two readings of Go's clock, matched to their midpoint; a
	// pair further apart (the thread was kept off the CPU) is read again.
	spread := time.Duration(-1)
	for try := 0; try < 10 && (spread < 0 || spread > 20*time.Microsecond); try++ {
		a := time.Now()
		mono, err := monoNow()
		if err != nil {
			return nil, err
		}
		b := time.Now()
		if d := b.Sub(a); spread < 0 || d < spread {
			spread, r.mono0, r.since = d, mono, a.Add(d/2)
		}
	}
	return r, nil
}

func (r *timelineRecorder) sent(master int)   { r.add(&r.sends, master) }
func (r *timelineRecorder) notice(master int) { r.add(&r.notices, master) }

func (r *timelineRecorder) add(to *[]masterEvent, master int) {
	e := masterEvent{at: r.mono0 + int64(time.Since(r.since)), master: master}
	r.mu.Lock()
	*to = append(*to, e)
	r.mu.Unlock()
}

// perHold gives each hold the notices its lock call heard (from the call to its return)
// and the requests its unlock call started sending (likewise), each as {ns after startAt,
// master}; calls are the holds' lock call, its return, unlock call and its return. Nil
// when nothing was reported (an implementation other than the library).
func (r *timelineRecorder) perHold(calls [][4]int64, startAt int64) (notices, sends [][][2]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sends) == 0 && len(r.notices) == 0 {
		return nil, nil
	}
	byTime := func(a, b masterEvent) int { return cmp.Compare(a.at, b.at) } // goroutines append concurrently
	slices.SortFunc(r.sends, byTime)
	slices.SortFunc(r.notices, byTime)
	notices, sends = make([][][2]int64, len(calls)), make([][][2]int64, len(calls))
	for i, c := range calls {
		notices[i] = within(r.notices, c[0], c[1], startAt)
		sends[i] = within(r.sends, c[2], c[3], startAt)
	}
	return notices, sends
}

// within returns the events of es (sorted) from from to to (inclusive), their times less
// startAt.
func within(es []masterEvent, from, to, startAt int64) [][2]int64 {
	i, _ := slices.BinarySearchFunc(es, from, func(e masterEvent, t int64) int { return cmp.Compare(e.at, t) })
	var out [][2]int64
	for ; i < len(es) && es[i].at <= to; i++ {
		out = append(out, [2]int64{es[i].at - startAt, int64(es[i].master)})
	}
	return out
}

// Timeline is where a hand-off's gap goes, from the releasing client's unlock call to
// the next holder's acquisition, for the hand-offs by notice: the next holder heard
// hand-off notices from a majority of the masters between that unlock call and its
// acquisition (the library only: other implementations send none; a waiter that took
// the lock with its own attempt, after a window or an expiry, heard fewer). Each is a p50
// after the unlock call, over the hand-offs measured (Sent over those whose releasing
// client's requests were seen going to a majority).
type Timeline struct {
	N int // hand-offs measured
	// Sent: the unlock call's request to the majority-th master started to go out (its
	// master's goroutine began sending it; go-redis then builds and writes it).
	Sent time.Duration
	// Notices: the notice of the k-th master (by its first notice) reached the next
	// holder, k = 1 to a majority.
	Notices []time.Duration
	// After: the next holder's lock call returned, after the majority-th master's notice
	// (its own p50, not a difference of two).
	After time.Duration
}

// handOffTimeline measures the Timeline of holds sorted by start, on masters masters.
func handOffTimeline(holds []crossHold, masters int) Timeline {
	if masters <= 0 {
		return Timeline{}
	}
	quorum := majority(masters)
	var sent, after []time.Duration
	notices := make([][]time.Duration, quorum)
	for i := 1; i < len(holds); i++ {
		prev, cur := holds[i-1], holds[i]
		heard := firstPerMaster(cur.Notices, prev.End)
		if len(heard) < quorum {
			continue
		}
		for k := range quorum {
			notices[k] = append(notices[k], time.Duration(heard[k]-prev.End))
		}
		after = append(after, time.Duration(cur.Start-heard[quorum-1]))
		if out := firstPerMaster(prev.Sends, prev.End-1); len(out) >= quorum {
			sent = append(sent, time.Duration(out[quorum-1]-prev.End))
		}
	}
	if len(after) == 0 {
		return Timeline{}
	}
	tl := Timeline{N: len(after), Sent: percentile(sent, 0.50), After: percentile(after, 0.50)}
	for _, d := range notices {
		tl.Notices = append(tl.Notices, percentile(d, 0.50))
	}
	return tl
}

// firstPerMaster returns the time of each master's first event after from, in time order
// (events are sorted by time; perHold already ended a hold's notices at its acquisition
// and its sends at its unlock call's return).
func firstPerMaster(es [][2]int64, from int64) []int64 {
	var out []int64
	seen := map[int64]bool{}
	for _, e := range es {
		if e[0] > from && !seen[e[1]] {
			seen[e[1]] = true
			out = append(out, e[0])
		}
	}
	return out
}
