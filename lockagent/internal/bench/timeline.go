package bench

import (
	"slices"
	"sync"
	"time"
)

// timelineRecorder keeps, in a worker process, the moments the library reports through
// handofftrace, on CLOCK_MONOTONIC: its requests leaving for the masters, and hand-off
// notices arriving.
type timelineRecorder struct {
	mu             sync.Mutex
	sends, notices []int64
}

func (r *timelineRecorder) sent()   { r.add(&r.sends) }
func (r *timelineRecorder) notice() { r.add(&r.notices) }

func (r *timelineRecorder) add(to *[]int64) {
	t, err := monoNow()
	if err != nil {
		return
	}
	r.mu.Lock()
	*to = append(*to, t)
	r.mu.Unlock()
}

// perHold gives each hold the notices its lock call heard (from the call to its return)
// and the requests its unlock call sent (likewise), ns after startAt; calls are the
// holds' lock call, its return, unlock call and its return. Nil when nothing was
// reported (an implementation other than the library).
func (r *timelineRecorder) perHold(calls [][4]int64, startAt int64) (notices, sends [][]int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sends) == 0 && len(r.notices) == 0 {
		return nil, nil
	}
	slices.Sort(r.sends) // goroutines append concurrently
	slices.Sort(r.notices)
	notices, sends = make([][]int64, len(calls)), make([][]int64, len(calls))
	for i, c := range calls {
		notices[i] = within(r.notices, c[0], c[1], startAt)
		sends[i] = within(r.sends, c[2], c[3], startAt)
	}
	return notices, sends
}

// within returns the sorted times ts from from to to (inclusive), less startAt.
func within(ts []int64, from, to, startAt int64) []int64 {
	i, _ := slices.BinarySearch(ts, from)
	var out []int64
	for ; i < len(ts) && ts[i] <= to; i++ {
		out = append(out, ts[i]-startAt)
	}
	return out
}

// Timeline is where a hand-off's gap goes, from the releasing client's unlock call to
// the next holder's acquisition, for the hand-offs by notice: the next holder heard at
// least a majority of the masters' hand-off notices between that unlock call and its
// acquisition (the library only: other implementations send none). Each is a p50 after
// the unlock call.
type Timeline struct {
	N int // hand-offs measured
	// Sent: the unlock call's majority-th request left for its master (requests leave
	// one per master, each from its own goroutine).
	Sent time.Duration
	// Notices: the k-th notice arrived at the next holder, k = 1 to a majority.
	Notices []time.Duration
	// After: the next holder's lock call returned, after the last of Notices (its own
	// p50, not the difference of two).
	After time.Duration
}

// handOffTimeline measures the Timeline of holds sorted by start, on masters masters.
func handOffTimeline(holds []crossHold, masters int) Timeline {
	quorum := masters/2 + 1
	if masters <= 0 {
		return Timeline{}
	}
	var sent, after []time.Duration
	notices := make([][]time.Duration, quorum)
	for i := 1; i < len(holds); i++ {
		prev, cur := holds[i-1], holds[i]
		var heard []int64
		for _, t := range cur.Notices {
			if t > prev.End && t <= cur.Start {
				heard = append(heard, t)
			}
		}
		if len(heard) < quorum {
			continue
		}
		for k := range quorum {
			notices[k] = append(notices[k], time.Duration(heard[k]-prev.End))
		}
		after = append(after, time.Duration(cur.Start-heard[quorum-1]))
		if len(prev.Sends) >= quorum {
			sent = append(sent, time.Duration(prev.Sends[quorum-1]-prev.End))
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
