package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Target is one goal the issue sets for the library, compared against redsync.
type Target struct {
	Name    string
	Ratio   float64 // lockagent / redsync for the metric
	Limit   float64
	AtLeast bool // true: Ratio >= Limit passes; false: Ratio <= Limit passes
	Known   bool // both sides were measured
	Value   bool // Ratio is a plain value (a count, an index), not a ratio
}

// Met reports whether the target was reached.
func (t Target) Met() bool {
	if !t.Known {
		return false
	}
	if t.AtLeast {
		return t.Ratio >= t.Limit
	}
	return t.Ratio <= t.Limit
}

// Targets are the three goals of the issue: throughput at 64 goroutines >= 2x redsync,
// sequential p50 <= 0.8x redsync, contention p99 wait <= 0.5x redsync's default.
func (r *Report) Targets() []Target {
	la, rs := r.Result(Lockagent), r.Result(Redsync)
	ts := []Target{
		{Name: fmt.Sprintf("throughput at %d goroutines >= 2x redsync", r.Config.Goroutines), Limit: 2, AtLeast: true},
		{Name: "sequential p50 <= 0.8x redsync", Limit: 0.8},
		{Name: "contention p99 wait <= 0.5x redsync (default retry settings)", Limit: 0.5},
	}
	if la == nil || rs == nil {
		return ts
	}
	if la.Throughput != nil && rs.Throughput != nil && rs.Throughput.PerSecond > 0 {
		ts[0].Ratio, ts[0].Known = la.Throughput.PerSecond/rs.Throughput.PerSecond, true
	}
	if la.Sequential != nil && rs.Sequential != nil && rs.Sequential.P50 > 0 {
		ts[1].Ratio, ts[1].Known = float64(la.Sequential.P50)/float64(rs.Sequential.P50), true
	}
	if la.Contention != nil && rs.Contention != nil && rs.Contention.P99Wait > 0 {
		ts[2].Ratio, ts[2].Known = float64(la.Contention.P99Wait)/float64(rs.Contention.P99Wait), true
	}
	return ts
}

// metric is one row of the table: how to read it from a result and how to show it.
type metric struct {
	name  string
	value func(*Result) (float64, bool)
	show  func(float64) string
}

func (r *Report) metrics() []metric {
	seq := func(f func(*Sequential) float64) func(*Result) (float64, bool) {
		return func(res *Result) (float64, bool) {
			if res.Sequential == nil {
				return 0, false
			}
			return f(res.Sequential), true
		}
	}
	tp := func(f func(*Throughput) float64) func(*Result) (float64, bool) {
		return func(res *Result) (float64, bool) {
			if res.Throughput == nil {
				return 0, false
			}
			return f(res.Throughput), true
		}
	}
	ct := func(f func(*Contention) float64) func(*Result) (float64, bool) {
		return func(res *Result) (float64, bool) {
			if res.Contention == nil {
				return 0, false
			}
			return f(res.Contention), true
		}
	}
	dur := func(v float64) string { return fmtDuration(time.Duration(v)) }
	num := func(v float64) string { return fmt.Sprintf("%.0f", v) }
	c := r.Config
	return []metric{
		{"sequential acquire+release p50", seq(func(s *Sequential) float64 { return float64(s.P50) }), dur},
		{"sequential acquire+release p99", seq(func(s *Sequential) float64 { return float64(s.P99) }), dur},
		{"allocs per acquire+release", seq(func(s *Sequential) float64 { return s.AllocsPerOp }), num},
		{"bytes per acquire+release", seq(func(s *Sequential) float64 { return s.BytesPerOp }), num},
		{fmt.Sprintf("throughput, %d goroutines (pairs/s)", c.Goroutines), tp(func(t *Throughput) float64 { return t.PerSecond }), num},
		{fmt.Sprintf("in-process contention, %d goroutines, one client (acq/s)", c.Contenders), ct(func(x *Contention) float64 { return x.PerSecond }), num},
		{"contention wait p50", ct(func(x *Contention) float64 { return float64(x.P50Wait) }), dur},
		{"contention wait p99", ct(func(x *Contention) float64 { return float64(x.P99Wait) }), dur},
		{"contention wait max", ct(func(x *Contention) float64 { return float64(x.MaxWait) }), dur},
		{"contention fairness (Jain, 1=even)", ct(func(x *Contention) float64 { return x.Jain }), func(v float64) string { return fmt.Sprintf("%.3f", v) }},
		{"contention min/max acq per goroutine", ct(func(x *Contention) float64 {
			if x.MaxPer == 0 {
				return 0
			}
			return float64(x.MinPer) / float64(x.MaxPer)
		}), func(v float64) string { return fmt.Sprintf("%.2f", v) }},
		{"contention gave up (retry limit)", ct(func(x *Contention) float64 { return float64(x.Failed) }), num},
	}
}

// WriteTable prints one row per metric, one column per implementation, then the ratios
// of the library against redsync and against the floor, the targets, and any errors.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{"metric"}
	for _, res := range r.Results {
		header = append(header, res.Name)
	}
	// Ratio columns: FCALL vs EVALSHA, each library variant vs redsync, then the library
	// vs the floor.
	type pair struct{ ours, other *Result }
	var ratios []pair
	for _, p := range [][2]string{{Lockagent, LockagentEvalsha}, {Lockagent, Redsync}, {LockagentDurable, Redsync}, {LockagentNoFence, Redsync}, {Lockagent, Floor}, {LockagentTLS, Lockagent}} {
		if ours, other := r.Result(p[0]), r.Result(p[1]); ours != nil && other != nil {
			ratios = append(ratios, pair{ours, other})
			header = append(header, p[0]+"/"+p[1])
		}
	}
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, m := range r.metrics() {
		row := []string{m.name}
		for _, res := range r.Results {
			if v, ok := m.value(res); ok {
				row = append(row, m.show(v))
			} else {
				row = append(row, "n/a")
			}
		}
		for _, p := range ratios {
			row = append(row, ratio(m, p.ours, p.other))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	c := r.Config
	fmt.Fprintf(w, "\nsequential: %d pairs and throughput: %v per implementation, each in %d interleaved rounds; contention: one %v window each; TTL %v; hold %v.\n",
		c.Iterations, c.Duration, c.Rounds, c.Duration, c.TTL, c.Hold)
	fmt.Fprintln(w, "lockagent: default options (fencing tokens on: one round per acquisition when the Client's cached fence is current, a second round otherwise; releases applied in memory, not logged to the AOF, so no fsync).")
	fmt.Fprintln(w, "lockagent runs its scripts as the kit's function library (FCALL: the lock user may run no other Lua); lockagent-evalsha is the same library on a user that may EVAL but not FCALL, so its scripts go by EVALSHA (how they ran before the function library).")
	fmt.Fprintln(w, "lockagent-durable: Options.DurableRelease (releases logged and fsynced, like redsync's and the floor's); lockagent-nofence: Options.NoFencing.")
	fmt.Fprintln(w, "redsync: v4 with its DEFAULT options (32 tries, 50-250ms random retry delay); a mutex per acquisition.")
	fmt.Fprintln(w, "floor: bare go-redis fan-out (SET NX PX on every master + EVALSHA compare-and-delete, logged), waiting for every master, one attempt, so no contention row.")
	fmt.Fprintln(w, "allocs/bytes: runtime.MemStats deltas over the sequential loop, whole process (background goroutines included).")
	if r.Result(LockagentTLS) != nil {
		fmt.Fprintln(w, "lockagent-tls: default options over TLS (TLS 1.3, ECDSA P-256), on as many TLS-only masters with the same config: lockagent-tls/lockagent is the cost of TLS.")
	}
	if err := r.writeCross(w); err != nil {
		return err
	}
	if ts := append(r.Targets(), r.CrossTargets()...); len(ts) > 0 {
		fmt.Fprintln(w, "\ntargets (lockagent with default options vs redsync):")
		for _, t := range ts {
			status := "not measured"
			if t.Known {
				status = "MISSED"
				if t.Met() {
					status = "met"
				}
				if t.Value {
					status = fmt.Sprintf("%.3g  %s", t.Ratio, status)
				} else {
					status = fmt.Sprintf("%.2fx  %s", t.Ratio, status)
				}
			}
			fmt.Fprintf(w, "  %-62s %s\n", t.Name, status)
		}
	}
	for _, res := range r.Results {
		for _, e := range errorLines(res) {
			fmt.Fprintf(w, "%s: %s\n", res.Name, e)
		}
	}
	return nil
}

func ratio(m metric, a, b *Result) string {
	if a == nil || b == nil {
		return "n/a"
	}
	va, oka := m.value(a)
	vb, okb := m.value(b)
	if !oka || !okb || vb == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", va/vb)
}

func errorLines(res *Result) []string {
	var out []string
	if s := res.Sequential; s != nil && s.Errors > 0 {
		out = append(out, fmt.Sprintf("sequential: %d errors, e.g. %s", s.Errors, strings.Join(s.ErrorExamples, " | ")))
	}
	if t := res.Throughput; t != nil && t.Errors > 0 {
		out = append(out, fmt.Sprintf("throughput: %d errors, e.g. %s", t.Errors, strings.Join(t.ErrorExamples, " | ")))
	}
	if c := res.Contention; c != nil && len(c.ErrorExamples) > 0 {
		out = append(out, fmt.Sprintf("contention: %d gave up, e.g. %s", c.Failed, strings.Join(c.ErrorExamples, " | ")))
	}
	for _, c := range res.Cross {
		if len(c.ErrorExamples) > 0 {
			out = append(out, fmt.Sprintf("cross-process (%d processes): %d gave up, e.g. %s", c.Processes, c.Failed, strings.Join(c.ErrorExamples, " | ")))
		}
	}
	return out
}

func fmtDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// writeCross prints the cross-process scenario: one row per implementation and process
// count, each against redsync at the same count, and the safety checks.
func (r *Report) writeCross(w io.Writer) error {
	var rows []*Result
	for _, res := range r.Results {
		if len(res.Cross) > 0 {
			rows = append(rows, res)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	rs := r.Result(Redsync)
	fmt.Fprintf(w, "\ncross-process contention: P worker processes per implementation, each with its own client, one key, hold %v, TTL %v, one %v window each:\n",
		r.Config.Hold, r.Config.TTL, r.Config.Duration)
	if r.Config.CrossPlacement != "" {
		fmt.Fprintf(w, "placement %s.\n", r.Config.CrossPlacement)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "impl\tprocesses\tacq/s\twait p50\twait p99\twait max\tJain\tmin/max per process\tgave up\toverlaps\tfence order\tacq/s vs redsync\tp99 vs redsync\t")
	for _, res := range rows {
		for _, c := range res.Cross {
			fence := "n/a"
			if c.Fenced {
				fence = "ok"
				if c.FenceViolations > 0 {
					fence = fmt.Sprintf("%d VIOLATIONS", c.FenceViolations)
				}
			}
			vsAcq, vsP99 := "", ""
			if res != rs && rs != nil {
				if o := rs.CrossAt(c.Processes); o != nil {
					if o.PerSecond > 0 {
						vsAcq = fmt.Sprintf("%.2fx", c.PerSecond/o.PerSecond)
					}
					if o.P99Wait > 0 {
						vsP99 = fmt.Sprintf("%.2fx", float64(c.P99Wait)/float64(o.P99Wait))
					}
				}
			}
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\t%.3f\t%d/%d\t%d\t%d\t%s\t%s\t%s\t\n", res.Name, c.Processes, c.PerSecond,
				fmtDuration(c.P50Wait), fmtDuration(c.P99Wait), fmtDuration(c.MaxWait), c.Jain, c.MinPer, c.MaxPer, c.Failed, c.Overlaps, fence, vsAcq, vsP99)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "overlaps: every hold (from the lock call's return to the unlock call) checked against every other on CLOCK_MONOTONIC, one clock for all processes; fence order: fences strictly increase in acquisition order (n/a: no fencing tokens).")
	return r.writeHandOff(w, rows)
}

// writeHandOff prints the cross-process scenario's hand-offs against their floor, one
// fsynced majority write measured just before each window, and the masters' work per
// acquisition when it was counted.
func (r *Report) writeHandOff(w io.Writer, rows []*Result) error {
	fmt.Fprintln(w, "\nhand-off against the floor: gap = a holder's unlock call to the next holder's acquisition (across processes, CLOCK_MONOTONIC); floor = one fsynced majority write on the same masters, measured just before each window:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "impl\tprocesses\tfloor write p50\tgap p50\tgap p50/floor\tgap p99\tgap p99/floor p99\tfloor at the hold's pace p50\tgap p50/it\tfloor under load p50\tgap p50/floor under load\tbare round p50 idle/under load\trounds\tgap p50 less the load\t/floor\thold mean\tutilisation\tutilisation at floor\tbare relay gap p50\tgap p50 - relay\t")
	var work []string
	relays := false // some cell has a relay: its legend is printed
	for _, res := range rows {
		var base *CrossProcess // the first cell with a relay: growth is read from it
		for _, c := range res.Cross {
			chained := "n/a"
			if c.Fenced && c.Acquisitions > 1 {
				chained = fmt.Sprintf("%.1f%%, gap p50 %s", 100*float64(c.Chained)/float64(c.Acquisitions-1), fmtDuration(c.ChainedGapP50))
			}
			work = append(work, fmt.Sprintf("  %s, %d processes: workers: CPU %s, %.1f wake-ups; chained hand-offs %s", res.Name, c.Processes,
				fmtDuration(c.WorkerCPU), c.WorkerWakeups, chained))
			if tl := c.Timeline; tl.N > 0 {
				work = append(work, fmt.Sprintf("  %s, %d processes: timeline of %d hand-offs by notice: request to the %s master going out at %s; notices from %d masters at the next holder at %s; its lock call returned %s after the %s",
					res.Name, c.Processes, tl.N, ordinal(len(tl.Notices)), orNA(tl.Sent), len(tl.Notices), joinDurations(tl.Notices), fmtDuration(tl.After), ordinal(len(tl.Notices))))
			}
			lessLoad, lessLoadRatio := "n/a", "n/a"
			if g, ok := c.GapLessLoad(); ok {
				lessLoad, lessLoadRatio = fmtDuration(g), over(g, c.FloorWrite)
			}
			relayGap, lockOwn := "n/a", "n/a"
			if rl := c.Relay; rl != nil {
				relays = true
				order := "in order"
				if rl.Overlaps > 0 || rl.FenceViolations > 0 {
					order = fmt.Sprintf("NOT in order (%d overlaps, %d out of order)", rl.Overlaps, rl.FenceViolations)
				}
				if rl.Failed > 0 {
					order += fmt.Sprintf(", STALLED: %d of its workers gave up waiting for a turn", rl.Failed)
				}
				line := fmt.Sprintf("  %s, %d processes: bare relay: %d turns %s, gap p50 %s, p99 %s; workers: CPU %s, %.1f wake-ups per turn",
					res.Name, c.Processes, rl.Acquisitions, order, orNA(rl.GapP50), orNA(rl.GapP99), fmtDuration(rl.WorkerCPU), rl.WorkerWakeups)
				if rl.GapP50 > 0 { // a relay with a gap: its columns, and growth from the first such cell
					relayGap, lockOwn = fmtDuration(rl.GapP50), strings.TrimPrefix(signed(c.GapP50-rl.GapP50), "+")
					if base == nil {
						base = c
					} else {
						line += fmt.Sprintf("; since %d processes, the relay's gap p50 grew %s, the lock's %s", base.Processes,
							signed(rl.GapP50-base.Relay.GapP50), signed(c.GapP50-base.GapP50))
					}
				}
				work = append(work, line)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s/%s\t%d\t%s\t%s\t%s\t%.3f\t%s\t%s\t%s\t\n", res.Name, c.Processes, orNA(c.FloorWrite),
				fmtDuration(c.GapP50), over(c.GapP50, c.FloorWrite), fmtDuration(c.GapP99), over(c.GapP99, c.FloorWriteP99),
				orNA(c.FloorPaced), over(c.GapP50, c.FloorPaced), orNA(c.FloorLoaded), over(c.GapP50, c.FloorLoaded), orNA(c.RoundIdle), orNA(c.RoundLoaded), c.RoundLoadedN, lessLoad, lessLoadRatio,
				fmtDuration(c.Held), c.Utilisation, utilAtFloor(c), relayGap, lockOwn)
			if c.MasterCalls != nil {
				work = append(work, fmt.Sprintf("  %s, %d processes: master CPU %s (kernel %s; a floor write: %s); %s", res.Name, c.Processes,
					fmtDuration(c.MasterCPU), fmtDuration(c.MasterSys), orNA(c.FloorCPU), fmtCalls(c.MasterCalls, c.MasterCall)))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	pause, _ := pacedFloor(r.Config.Hold)
	fmt.Fprintf(w, "floor at the hold's pace: the same write, each made after a pause as long as the hold (%v; at most %v), as a hand-off is made after a hold: on a machine quiet for that long, every step may wake an idle CPU; read a long hold's gap against it.\n", pause, pacedFloorMaxPause)
	fmt.Fprintf(w, "floor under load: floor writes during the window, one every %v; hold mean above the hold (%v): how late nanosleep(2) woke the holder, this machine's wake-up latency under the window's load.\n", floorDuringEvery, r.Config.Hold)
	fmt.Fprintf(w, "bare round: a PING to every master at once, timed to the majority's reply (no write, no script, no fsync), %d idle just before the window and, during it, one halfway between two floor writes (rounds: how many); gap p50 less the load = gap p50 - (bare round under load - bare round idle), never below zero, with %d rounds under load at least: the gap without what the window's load added to a bare round. A diagnostic, not a floor: that load is mostly the lock's own work.\n", roundSamples, minLoadedRounds)
	fmt.Fprintln(w, "utilisation = time held / wall time; utilisation at floor = hold mean / (hold mean + floor write p50), what a gap of one fsynced majority write would give.")
	if relays {
		fmt.Fprintln(w, "bare relay: right after the library's cell, as many worker processes pass a turn around a ring through the same masters, with the same hold and client stack and no lock: a PUBLISH to every master at once, and the next process takes its turn at the majority's messages (no script, no key, no fsync): a hand-off by notice without the lock's work, so growth it shows with the processes is there without the lock; gap p50 - relay is what the lock adds to it (which may grow too: its scripts and its workers do more per acquisition with more waiters).")
	}
	if len(work) > 0 {
		fmt.Fprintln(w, "work per acquisition: workers (all together: CPU time, voluntary context switches = wake-ups; chained = fence is the previous hold's + 1, a hand-off without a log write); timeline (p50s after the releasing client's unlock call, of the hand-offs whose next holder heard notices from a majority of the masters before it acquired: when the unlock call's request to the majority-th master started to go out, when the notice of each master of that majority reached the next holder, and how long after the last of them its lock call returned); masters (all together: INFO cpu and commandstats over the window; scripts' commands included, and counted in the script's time too; in parentheses the mean time of one call):")
		for _, l := range work {
			fmt.Fprintln(w, l)
		}
	}
	return nil
}

// signed writes d with its sign: "+48µs", "-3µs".
func signed(d time.Duration) string {
	if d < 0 {
		return "-" + fmtDuration(-d)
	}
	return "+" + fmtDuration(d)
}

// ordinal writes n as "1st", "2nd", "3rd", "4th"...
func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// joinDurations writes ds as "304µs, 388µs, 473µs".
func joinDurations(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = fmtDuration(d)
	}
	return strings.Join(s, ", ")
}

func orNA(d time.Duration) string {
	if d <= 0 {
		return "n/a"
	}
	return fmtDuration(d)
}

// over is a/b as a ratio ("n/a" without b).
func over(a, b time.Duration) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}

// minLoadedRounds is the fewest bare rounds under load GapLessLoad uses.
const minLoadedRounds = 5

// GapLessLoad is the gap p50 less how much longer a bare round took under the window's
// load than idle (more when the loaded round was the quicker), never below zero, and
// whether it is known: both rounds measured, at least minLoadedRounds under load. It
// says how much of the gap any round through the masters paid in that window, the
// lock's own work included, so it is a diagnostic, not a floor: a library that loads
// the machine more slows the bare round too.
func (c *CrossProcess) GapLessLoad() (time.Duration, bool) {
	if c.RoundIdle <= 0 || c.RoundLoaded <= 0 || c.RoundLoadedN < minLoadedRounds {
		return 0, false
	}
	return max(0, c.GapP50-(c.RoundLoaded-c.RoundIdle)), true
}

func utilAtFloor(c *CrossProcess) string {
	if c.FloorWrite <= 0 || c.Held <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", float64(c.Held)/float64(c.Held+c.FloorWrite))
}

// CrossTargets are the goals for the cross-process scenario: at 8 and 16 processes
// acq/s >= 1.3x redsync, p99 wait <= 0.5x redsync and Jain >= 0.95 (lockagent with
// default options); lockagent's acq/s at 16 processes >= 0.9x its acq/s at 8; no
// overlapping holds and no fence order violations in any row.
func (r *Report) CrossTargets() []Target {
	la, rs := r.Result(Lockagent), r.Result(Redsync)
	if la == nil || len(la.Cross) == 0 {
		return nil
	}
	var ts []Target
	for _, p := range []int{8, 16} {
		c := la.CrossAt(p)
		if c == nil {
			continue
		}
		acq := Target{Name: fmt.Sprintf("cross-process, %d processes: acq/s >= 1.3x redsync", p), Limit: 1.3, AtLeast: true}
		p99 := Target{Name: fmt.Sprintf("cross-process, %d processes: p99 wait <= 0.5x redsync", p), Limit: 0.5}
		if rs != nil {
			if o := rs.CrossAt(p); o != nil {
				if o.PerSecond > 0 {
					acq.Ratio, acq.Known = c.PerSecond/o.PerSecond, true
				}
				if o.P99Wait > 0 {
					p99.Ratio, p99.Known = float64(c.P99Wait)/float64(o.P99Wait), true
				}
			}
		}
		ts = append(ts, acq, p99,
			Target{Name: fmt.Sprintf("cross-process, %d processes: Jain >= 0.95", p), Limit: 0.95, AtLeast: true, Ratio: c.Jain, Known: true, Value: true})
	}
	for _, c := range la.Cross {
		if c.FloorWrite > 0 && c.Processes >= 8 {
			ts = append(ts, Target{Name: fmt.Sprintf("cross-process, %d processes: hand-off gap p50 <= 1.1x one fsynced majority write", c.Processes),
				Limit: 1.1, Ratio: float64(c.GapP50) / float64(c.FloorWrite), Known: true})
		}
		if c.Processes >= 8 {
			ts = append(ts, Target{Name: fmt.Sprintf("cross-process, %d processes: Jain >= 0.99", c.Processes), Limit: 0.99, AtLeast: true, Ratio: c.Jain, Known: true, Value: true})
		}
	}
	if c8, c16 := la.CrossAt(8), la.CrossAt(16); c8 != nil && c16 != nil && c8.PerSecond > 0 {
		ts = append(ts, Target{Name: "cross-process: acq/s at 16 >= 0.9x acq/s at 8", Limit: 0.9, AtLeast: true,
			Ratio: c16.PerSecond / c8.PerSecond, Known: true})
	}
	overlaps, violations := 0, 0
	for _, res := range r.Results {
		for _, c := range res.Cross {
			overlaps += c.Overlaps
			violations += c.FenceViolations
		}
	}
	return append(ts,
		Target{Name: "cross-process: overlapping holds == 0", Limit: 0, Ratio: float64(overlaps), Known: true, Value: true},
		Target{Name: "cross-process: fence order violations == 0", Limit: 0, Ratio: float64(violations), Known: true, Value: true})
}
