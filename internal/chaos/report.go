package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Input is everything a run recorded.
type Input struct {
	Label        string
	Seed         uint64
	Records      []Record
	Faults       []Fault
	States       map[string]RegisterState
	Log          []RegisterOp
	Workers      int
	Clients      int
	Keys         int
	Masters      int
	TTL          time.Duration
	RestartDelay time.Duration
	Work         time.Duration
	Start, End   int64 // monotonic span of the workload
	Elapsed      time.Duration
}

// Report is a run's result, for machines (JSON) and people (Summary).
type Report struct {
	Run          string `json:"run"`
	Seed         uint64 `json:"seed"`
	Replay       string `json:"replay"`
	Duration     string `json:"duration"`
	Workers      int    `json:"workers"`
	ClientHosts  int    `json:"client_hosts"`
	Keys         int    `json:"keys"`
	TTL          string `json:"ttl"`
	RestartDelay string `json:"restart_delay"`
	Work         string `json:"work_under_lock"`

	Acquisitions int64 `json:"acquisitions"`
	// Contended acquisitions: while the Acquire call ran, another worker was acquiring or
	// holding the same key.
	Contended     int64            `json:"contended_acquisitions"`
	AcquireFailed map[string]int64 `json:"acquire_failures"`
	Releases      map[string]int64 `json:"releases"`

	Faults   map[string]int `json:"faults"`
	FaultLog []Fault        `json:"fault_log"`

	Overlaps        int            `json:"overlaps"`
	FenceViolations int            `json:"fence_violations"`
	Register        RegisterResult `json:"register"`

	Unavailable            []Window `json:"unavailable_windows"`
	UnavailableMax         string   `json:"unavailable_longest"`
	UnavailableMaxMajority string   `json:"unavailable_longest_with_majority"`
	LivenessViolations     int      `json:"liveness_violations"`

	ViolationCounts map[string]int `json:"violation_counts"`
	// ViolationsByFault attributes each violation to the last fault injected before it
	// ("none" when it came before the first).
	ViolationsByFault map[string]int `json:"violations_by_fault"`
	Violations        []Violation    `json:"violations"` // the first 100
	Safe              bool           `json:"safe"`       // no overlap, fence, lost-write or stale-write violation
	Live              bool           `json:"live"`

	input Input // what the report was made from, for its pictures
}

// Analyze runs every checker over a run's records.
func Analyze(in Input) *Report {
	r := &Report{Run: in.Label, Seed: in.Seed, Replay: fmt.Sprintf("CHAOS_SEED=%d", in.Seed),
		Duration: in.Elapsed.Round(time.Second).String(), Workers: in.Workers, ClientHosts: in.Clients, Keys: in.Keys,
		TTL: in.TTL.String(), RestartDelay: in.RestartDelay.String(), Work: in.Work.String(),
		AcquireFailed: map[string]int64{}, Releases: map[string]int64{}, Faults: map[string]int{}, FaultLog: in.Faults,
		ViolationCounts: map[string]int{}, input: in}
	for _, rec := range in.Records {
		switch rec.Op {
		case OpAcquire:
			if rec.OK {
				r.Acquisitions++
			} else {
				r.AcquireFailed[rec.Err]++
			}
		case OpRelease:
			if rec.OK {
				r.Releases["ok"]++
			} else {
				r.Releases[rec.Err]++
			}
		}
	}
	r.Contended = contended(in.Records)
	for _, f := range in.Faults {
		r.Faults[f.Kind]++
	}
	var all []Violation
	for _, v := range CheckHolds(Holds(in.Records)) {
		if v.Check == CheckMutex {
			r.Overlaps++
		} else {
			r.FenceViolations++
		}
		all = append(all, v)
	}
	r.Register = CheckRegister(in.States, in.Log, in.Records)
	all = append(all, r.Register.Violations...)
	r.Register.Violations = nil
	// The bound leaves room for a starved machine: the short run under the race detector on
	// two loaded cores went 8 s without an acquisition while a majority was reachable.
	live := Liveness(LivenessConfig{Masters: in.Masters, Clients: in.Clients, Start: in.Start, End: in.End,
		Grace: 2 * in.TTL, Bound: 5*in.TTL + 2*time.Second, Report: time.Second}, in.Faults, in.Records)
	r.Unavailable = live.Unavailable
	var longest, longestMaj time.Duration
	for _, w := range live.Unavailable {
		longest = max(longest, w.Len())
		if w.Majority {
			longestMaj = max(longestMaj, w.Len())
		}
	}
	r.UnavailableMax, r.UnavailableMaxMajority = longest.Round(time.Millisecond).String(), longestMaj.Round(time.Millisecond).String()
	r.LivenessViolations = len(live.Violations)
	all = append(all, live.Violations...)
	r.ViolationsByFault = map[string]int{}
	for _, v := range all {
		r.ViolationCounts[v.Check]++
		cause := "none"
		for _, f := range in.Faults {
			if f.Start <= v.At {
				cause = f.Kind
			}
		}
		r.ViolationsByFault[cause]++
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].At < all[j].At })
	if len(all) > 100 {
		all = all[:100]
	}
	r.Violations = all
	r.Safe = r.Overlaps == 0 && r.FenceViolations == 0 && r.Register.LostWrites == 0 &&
		r.ViolationCounts[CheckLost] == 0 && r.ViolationCounts[CheckStale] == 0
	r.Live = r.LivenessViolations == 0
	return r
}

// contended counts the successful acquisitions whose Acquire call overlapped, on the same
// key, another worker's Acquire call or hold (a worker's own calls never overlap).
func contended(recs []Record) int64 {
	type iv struct {
		s, e   int64
		worker int
		ok     bool
	}
	byKey := map[string][]iv{}
	holds := Holds(recs)
	for _, rec := range recs {
		if rec.Op == OpAcquire {
			byKey[rec.Key] = append(byKey[rec.Key], iv{rec.Start, rec.End, rec.Worker, rec.OK})
		}
	}
	for _, h := range holds {
		byKey[h.Key] = append(byKey[h.Key], iv{h.Start, h.End, h.Worker, false})
	}
	var n int64
	for _, ivs := range byKey {
		sort.Slice(ivs, func(i, j int) bool { return ivs[i].s < ivs[j].s })
		// The furthest-reaching earlier interval of a worker other than x's: the two
		// furthest reaches of distinct workers are kept.
		type reach struct {
			e      int64
			worker int
		}
		best, second := reach{worker: -1}, reach{worker: -1}
		for i, x := range ivs {
			other := best
			if other.worker == x.worker {
				other = second
			}
			hit := other.worker >= 0 && other.e > x.s
			for j := i + 1; !hit && j < len(ivs) && ivs[j].s < x.e; j++ {
				hit = ivs[j].worker != x.worker
			}
			if hit && x.ok {
				n++
			}
			switch {
			case x.worker == best.worker:
				best.e = max(best.e, x.e)
			case x.e > best.e:
				second, best = best, reach{x.e, x.worker}
			case x.worker == second.worker:
				second.e = max(second.e, x.e)
			case x.e > second.e:
				second = reach{x.e, x.worker}
			}
		}
	}
	return n
}

// WriteFiles writes report.json, summary.txt and report.html (the summary with a timeline
// and a latency histogram) into dir.
func (r *Report) WriteFiles(dir string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(r.Summary()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.html"), []byte(HTML(r.input, r)), 0o644)
}

// Summary is the report for people.
func (r *Report) Summary() string {
	var b strings.Builder
	verdict := "SAFE"
	if !r.Safe {
		verdict = "VIOLATIONS FOUND"
	}
	if r.Safe && !r.Live {
		verdict = "SAFE, NOT LIVE"
	}
	fmt.Fprintf(&b, "chaos run %q: %s\n", r.Run, verdict)
	fmt.Fprintf(&b, "  seed %d (replay with %s), %s, %d worker processes on %d client hosts, %d keys, ttl %s, restart_delay %s, work under lock %s\n",
		r.Seed, r.Replay, r.Duration, r.Workers, r.ClientHosts, r.Keys, r.TTL, r.RestartDelay, r.Work)
	fmt.Fprintf(&b, "  acquisitions %d (contended %d); acquire failures %s; releases %s\n",
		r.Acquisitions, r.Contended, counts(r.AcquireFailed), counts(r.Releases))
	fk := map[string]int64{}
	total := 0
	for k, v := range r.Faults {
		fk[k] = int64(v)
		total += v
	}
	fmt.Fprintf(&b, "  faults %d: %s\n", total, counts(fk))
	fmt.Fprintf(&b, "  overlaps %d, fence violations %d\n", r.Overlaps, r.FenceViolations)
	if len(r.ViolationsByFault) > 0 {
		byFault := map[string]int64{}
		for k, v := range r.ViolationsByFault {
			byFault[k] = int64(v)
		}
		fmt.Fprintf(&b, "  violations after each fault kind: %s\n", counts(byFault))
	}
	fmt.Fprintf(&b, "  register: %d accepted increments, counters sum %d, lost writes %d; stale writes rejected %d, stale reads rejected %d; paused holders' writes %d, rejected %d\n",
		r.Register.Accepted, r.Register.Final, r.Register.LostWrites, r.Register.StaleWrites, r.Register.StaleReads,
		r.Register.PausedWrites, r.Register.PausedRejected)
	withMaj := 0
	for _, w := range r.Unavailable {
		if w.Majority {
			withMaj++
		}
	}
	fmt.Fprintf(&b, "  unavailable windows (>1s without an acquisition on a client host) %d, longest %s; %d with a majority reachable (longest %s); liveness violations %d\n",
		len(r.Unavailable), r.UnavailableMax, withMaj, r.UnavailableMaxMajority, r.LivenessViolations)
	for i, v := range r.Violations {
		if i == 10 {
			fmt.Fprintf(&b, "  ... %d more in report.json\n", len(r.Violations)-10)
			break
		}
		fmt.Fprintf(&b, "  VIOLATION %s\n", v)
	}
	return b.String()
}

func counts(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
