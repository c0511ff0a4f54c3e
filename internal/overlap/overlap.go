// Package overlap checks lock histories for violations of mutual exclusion and fencing.
//
// Callers record, per key, the interval during which a holder relied on a lock
// ([acquired, min(validity deadline, release start)]) and the fencing token it got. All
// times must come from one process's monotonic clock (time.Now()), so intervals recorded
// by many goroutines are comparable. The checker then reports:
//   - overlap: two different holders relied on the same key at the same moment;
//   - fence: in acquisition (start) order, a holder's fencing token is not larger than an
//     earlier holder's.
//
// A Checker is safe for concurrent use.
package overlap

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// Kind is the kind of a violation.
type Kind string

// The violations the checker finds.
const (
	KindOverlap Kind = "overlap" // validity intervals of different holders intersect
	KindFence   Kind = "fence"   // fencing token not strictly increasing in acquisition order
)

// Interval is one holder's use of a lock.
type Interval struct {
	Key    string
	Holder string    // identifies the acquisition (e.g. the lock token)
	Start  time.Time // when the acquisition completed
	End    time.Time // validity deadline, or when the holder started releasing if earlier
	Fence  uint64    // fencing token; 0 means none (not checked)
	Seq    int       // recording order, for reports
}

func (iv Interval) String() string {
	return fmt.Sprintf("%s#%d holder %s fence %d", iv.Key, iv.Seq, iv.Holder, iv.Fence)
}

// Violation is one pair of intervals that breaks a property.
type Violation struct {
	Kind   Kind
	Key    string
	First  Interval // the earlier-starting interval
	Second Interval
	// Overlap is how long both holders relied on the key at once (KindOverlap only).
	Overlap time.Duration
}

func (v Violation) String() string {
	switch v.Kind {
	case KindOverlap:
		return fmt.Sprintf("overlap on %q: %s and %s both held it for %v", v.Key, v.First, v.Second, v.Overlap)
	default:
		return fmt.Sprintf("fence not increasing on %q: %s acquired after %s", v.Key, v.Second, v.First)
	}
}

// Checker accumulates intervals.
type Checker struct {
	mu    sync.Mutex
	byKey map[string][]Interval
	n     int
}

// New returns an empty Checker.
func New() *Checker { return &Checker{byKey: map[string][]Interval{}} }

// Record adds holder's interval on key. end before start is recorded as an empty
// interval (a holder whose validity was already over relied on nothing).
func (c *Checker) Record(key, holder string, start, end time.Time, fence uint64) {
	if end.Before(start) {
		end = start
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	c.byKey[key] = append(c.byKey[key], Interval{Key: key, Holder: holder, Start: start, End: end, Fence: fence, Seq: c.n})
}

// Len returns how many intervals were recorded.
func (c *Checker) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Violations returns every overlap and fence violation found so far, by key then start.
// Intervals of the same holder never conflict with each other (re-entrant holds).
func (c *Checker) Violations() []Violation {
	c.mu.Lock()
	keys := make([]string, 0, len(c.byKey))
	hist := make(map[string][]Interval, len(c.byKey))
	for k, ivs := range c.byKey {
		keys = append(keys, k)
		hist[k] = append([]Interval(nil), ivs...)
	}
	c.mu.Unlock()
	sort.Strings(keys)
	var out []Violation
	for _, k := range keys {
		out = append(out, check(k, hist[k])...)
	}
	return out
}

func check(key string, ivs []Interval) []Violation {
	sort.SliceStable(ivs, func(i, j int) bool { return ivs[i].Start.Before(ivs[j].Start) })
	var out []Violation
	// Overlaps: sweep in start order, remembering the interval that reaches furthest.
	var reach *Interval
	for i := range ivs {
		iv := &ivs[i]
		if reach != nil && iv.Start.Before(reach.End) && iv.Holder != reach.Holder && iv.End.After(iv.Start) && reach.End.After(reach.Start) {
			end := min(iv.End.Sub(iv.Start), reach.End.Sub(iv.Start))
			out = append(out, Violation{Kind: KindOverlap, Key: key, First: *reach, Second: *iv, Overlap: end})
		}
		if reach == nil || iv.End.After(reach.End) {
			reach = iv
		}
	}
	// Fences: strictly increasing across different holders, in start order.
	var last *Interval
	for i := range ivs {
		iv := &ivs[i]
		if iv.Fence == 0 {
			continue
		}
		if last != nil && iv.Holder != last.Holder && iv.Fence <= last.Fence {
			out = append(out, Violation{Kind: KindFence, Key: key, First: *last, Second: *iv})
		}
		if last == nil || iv.Fence > last.Fence {
			last = iv
		}
	}
	return out
}
