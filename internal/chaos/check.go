package chaos

import (
	"fmt"
	"sort"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/overlap"
)

// The checkers' names.
const (
	CheckMutex    = "mutual-exclusion" // no two holds of one key overlap within their validity
	CheckFence    = "fence-order"      // a later acquisition of a key has a larger fence
	CheckLost     = "lost-write"       // the lock-guarded counter ends at its accepted increments
	CheckStale    = "stale-accepted"   // the register accepted an operation from a superseded holder
	CheckLiveness = "liveness"         // while a majority is reachable from a client host, it keeps acquiring
)

// Violation is one thing a checker found.
type Violation struct {
	Check string `json:"check"`
	Key   string `json:"key,omitempty"`
	At    int64  `json:"at"` // monotonic ns
	What  string `json:"what"`
}

func (v Violation) String() string { return v.Check + ": " + v.What }

func monoTime(ns int64) time.Time { return time.Unix(0, ns) }

// CheckHolds finds overlapping holds of one key (mutual exclusion) and fences that do not
// grow with each acquisition (in the order the holds started).
func CheckHolds(holds []Hold) []Violation {
	c := overlap.New()
	for _, h := range holds {
		c.Record(h.Key, h.Holder, monoTime(h.Start), monoTime(h.End), h.Fence)
	}
	var out []Violation
	for _, v := range c.Violations() {
		check := CheckMutex
		if v.Kind == overlap.KindFence {
			check = CheckFence
		}
		out = append(out, Violation{Check: check, Key: v.Key, At: v.Second.Start.UnixNano(), What: v.String()})
	}
	return out
}

// RegisterResult is what the fenced register saw.
type RegisterResult struct {
	Reads, Writes int64 // operations, accepted or not
	StaleReads    int64 `json:"stale_reads_rejected"`
	StaleWrites   int64 `json:"stale_writes_rejected"`
	Accepted      int64 `json:"accepted_writes"`
	Final         int64 `json:"final_counters"` // sum of the counters
	LostWrites    int64 `json:"lost_writes"`
	// PausedWrites are the writes of holders that were stopped (SIGSTOP) past their
	// validity between their read and their write; PausedRejected of them were refused.
	PausedWrites   int64 `json:"paused_holder_writes"`
	PausedRejected int64 `json:"paused_holder_writes_rejected"`
	Violations     []Violation
}

// CheckRegister checks the register's log and final state, and counts what the
// workers' histories say about paused holders.
//   - lost writes: per key, the counter must equal the number of accepted writes, and
//     each accepted write must be one more than the value the previous accepted write
//     left (else an increment was written over);
//   - stale accepted: an operation accepted although a larger fence had been seen, or a
//     write accepted although, since its holder's read, an operation with a larger fence
//     was accepted.
func CheckRegister(states map[string]RegisterState, log []RegisterOp, recs []Record) RegisterResult {
	var res RegisterResult
	for _, k := range sortedKeys(states) {
		s := states[k]
		res.Accepted += s.Accepted
		res.Final += s.Value
		if s.Value != s.Accepted {
			lost := s.Accepted - s.Value
			if lost < 0 {
				lost = -lost
			}
			res.LostWrites += lost
			res.Violations = append(res.Violations, Violation{Check: CheckLost, Key: k,
				What: fmt.Sprintf("%s: the counter is %d after %d accepted increments", k, s.Value, s.Accepted)})
		}
	}
	type readAt struct {
		seq   int64
		fence uint64
	}
	lastValue := map[string]int64{}
	reads := map[string]readAt{}          // holder -> its accepted read
	maxSince := map[string][]RegisterOp{} // key -> accepted ops, in order
	for _, op := range log {
		switch op.Op {
		case OpRead:
			res.Reads++
		case OpWrite:
			res.Writes++
		}
		if !op.Accepted {
			if op.Op == OpRead {
				res.StaleReads++
			} else {
				res.StaleWrites++
			}
			continue
		}
		if op.Fence < op.MaxBefore {
			res.Violations = append(res.Violations, Violation{Check: CheckStale, Key: op.Key, At: op.At,
				What: fmt.Sprintf("%s: %s by %s with fence %d accepted after fence %d", op.Key, op.Op, op.Holder, op.Fence, op.MaxBefore)})
		}
		switch op.Op {
		case OpRead:
			reads[op.Holder] = readAt{seq: op.Seq, fence: op.Fence}
		case OpWrite:
			if rd, ok := reads[op.Holder]; ok {
				for _, other := range maxSince[op.Key] {
					if other.Seq > rd.seq && other.Fence > op.Fence {
						res.Violations = append(res.Violations, Violation{Check: CheckStale, Key: op.Key, At: op.At,
							What: fmt.Sprintf("%s: write by %s (fence %d) accepted after %s by %s with fence %d since its read",
								op.Key, op.Holder, op.Fence, other.Op, other.Holder, other.Fence)})
						break
					}
				}
			}
			if op.Value != lastValue[op.Key]+1 {
				res.Violations = append(res.Violations, Violation{Check: CheckLost, Key: op.Key, At: op.At,
					What: fmt.Sprintf("%s: write by %s (fence %d) set %d over %d: an increment was lost", op.Key, op.Holder, op.Fence, op.Value, lastValue[op.Key])})
			}
			lastValue[op.Key] = op.Value
			maxSince[op.Key] = maxSince[op.Key][:0] // only ops after the latest write matter to later writers' reads
		}
		maxSince[op.Key] = append(maxSince[op.Key], op)
	}
	for _, r := range recs {
		if r.Op == OpWrite && r.Paused {
			res.PausedWrites++
			if !r.OK && r.Err == "stale" {
				res.PausedRejected++
			}
		}
	}
	return res
}

// Fault is one nemesis step.
type Fault struct {
	Kind    string   `json:"kind"`
	Hosts   []string `json:"hosts,omitempty"`
	Clients []int    `json:"clients,omitempty"` // client hosts it applied to (partitions)
	Worker  int      `json:"worker,omitempty"`  // pause-client: the worker stopped
	Start   int64    `json:"start"`
	End     int64    `json:"end"` // healed and every master serving again
	Down    []Down   `json:"down,omitempty"`
	Note    string   `json:"note,omitempty"`
}

// Down says master Master could not be reached from client hosts Clients (nil: from any)
// between Start and End.
type Down struct {
	Master  int   `json:"master"`
	Clients []int `json:"clients,omitempty"`
	Start   int64 `json:"start"`
	End     int64 `json:"end"`
}

func (d Down) hits(client int) bool {
	if d.Clients == nil {
		return true
	}
	for _, c := range d.Clients {
		if c == client {
			return true
		}
	}
	return false
}

// LivenessConfig bounds the liveness check.
type LivenessConfig struct {
	Masters, Clients int
	Start, End       int64 // the workload's span
	// Grace is skipped at the start of each window in which a majority is reachable: a
	// lock set by a holder that lost its majority must first expire (its TTL).
	Grace time.Duration
	// Bound is the longest a client host may go without an acquisition while a majority is
	// reachable from it.
	Bound time.Duration
	// Report is the shortest gap reported as an unavailable window.
	Report time.Duration
}

// Window is a span of one client host's time.
type Window struct {
	Client int   `json:"client"`
	Start  int64 `json:"start"`
	End    int64 `json:"end"`
	// Majority: a majority of masters was reachable from the client host throughout.
	Majority bool `json:"majority_reachable"`
}

// Len is the window's length.
func (w Window) Len() time.Duration { return time.Duration(w.End - w.Start) }

// MajorityWindows returns, per client host, the spans of [Start, End] in which a majority
// of the masters was reachable from it, given the faults' Down entries.
func MajorityWindows(cfg LivenessConfig, faults []Fault) map[int][]Window {
	out := map[int][]Window{}
	quorum := cfg.Masters/2 + 1
	for c := 0; c < cfg.Clients; c++ {
		var downs []Down
		points := []int64{cfg.Start, cfg.End}
		for _, f := range faults {
			for _, d := range f.Down {
				if d.hits(c) {
					downs = append(downs, d)
					points = append(points, d.Start, d.End)
				}
			}
		}
		sort.Slice(points, func(i, j int) bool { return points[i] < points[j] })
		var cur *Window
		for i := 0; i+1 < len(points); i++ {
			a, b := points[i], points[i+1]
			if a < cfg.Start || b > cfg.End || a == b {
				continue
			}
			down := map[int]bool{}
			for _, d := range downs {
				if d.Start <= a && d.End >= b {
					down[d.Master] = true
				}
			}
			ok := cfg.Masters-len(down) >= quorum
			if ok && cur != nil && cur.End == a {
				cur.End = b
				continue
			}
			if cur != nil {
				out[c] = append(out[c], *cur)
				cur = nil
			}
			if ok {
				cur = &Window{Client: c, Start: a, End: b, Majority: true}
			}
		}
		if cur != nil {
			out[c] = append(out[c], *cur)
		}
	}
	return out
}

// LivenessResult lists the gaps between acquisitions.
type LivenessResult struct {
	// Unavailable are the gaps longer than LivenessConfig.Report in which a client host
	// acquired nothing (Majority: a majority was reachable from it the whole time).
	Unavailable []Window
	Violations  []Violation
}

// Liveness checks that in every window in which a majority of masters is reachable from a
// client host, after Grace, the client host's workers complete an acquisition at least
// every Bound.
func Liveness(cfg LivenessConfig, faults []Fault, recs []Record) LivenessResult {
	var res LivenessResult
	acq := map[int][]int64{}
	for _, r := range recs {
		if r.Op == OpAcquire && r.OK {
			acq[r.Client] = append(acq[r.Client], r.End)
		}
	}
	windows := MajorityWindows(cfg, faults)
	inMajority := func(c int, s, e int64) bool {
		for _, w := range windows[c] {
			if w.Start <= s && e <= w.End {
				return true
			}
		}
		return false
	}
	for c := 0; c < cfg.Clients; c++ {
		ts := acq[c]
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		prev := cfg.Start
		gap := func(end int64) {
			if time.Duration(end-prev) > cfg.Report {
				res.Unavailable = append(res.Unavailable, Window{Client: c, Start: prev, End: end, Majority: inMajority(c, prev, end)})
			}
		}
		for _, t := range ts {
			if t < cfg.Start || t > cfg.End {
				continue
			}
			gap(t)
			prev = t
		}
		gap(cfg.End)
		for _, w := range windows[c] {
			from := w.Start + int64(cfg.Grace)
			if w.End-from <= int64(cfg.Bound) {
				continue
			}
			last := from
			for _, t := range ts {
				if t < from {
					continue
				}
				if t > w.End {
					break
				}
				if time.Duration(t-last) > cfg.Bound {
					res.Violations = append(res.Violations, livenessViolation(c, last, t, cfg))
				}
				last = t
			}
			if time.Duration(w.End-last) > cfg.Bound {
				res.Violations = append(res.Violations, livenessViolation(c, last, w.End, cfg))
			}
		}
	}
	return res
}

func livenessViolation(c int, from, to int64, cfg LivenessConfig) Violation {
	return Violation{Check: CheckLiveness, At: from, What: fmt.Sprintf(
		"client host %d acquired nothing for %v (from +%v) while a majority of masters was reachable from it (bound %v)",
		c, time.Duration(to-from).Round(time.Millisecond), time.Duration(from-cfg.Start).Round(time.Millisecond), cfg.Bound)}
}
