package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The hand-off in the cross-process scenario, against its floor.
//
// A hand-off is the time from a holder's unlock call to the next holder's acquisition
// (the return of its lock call), across processes, on CLOCK_MONOTONIC. Its floor is one
// fsynced majority write: the least any Redlock needs to move a lock from one process
// to another is one write that a majority of masters fsync before they answer. The
// bench measures that write in the same run, on the same masters, just before each
// cell's window (floorWrites), so both numbers see the same machine.

// floorWriteSamples is how many fsynced majority writes a cell's floor is the median of.
const floorWriteSamples = 200

// What the probe asks the masters, as majority names it (and counts it in answered).
const (
	floorWriteOp = "floor write"
	bareRoundOp  = "bare round"
)

// probe sends the bench's own commands to the masters: floor writes and bare rounds. A
// master that does not answer one within majorityTimeout is left out of the probe's later
// samples (out keeps why), so that it costs one sample that long, not each of hundreds;
// the majority is still counted over every master.
type probe struct {
	clients []*redis.Client
	out     []error
	// answered counts the masters' answers by what was asked (floorWriteOp, bareRoundOp):
	// the bench's own commands.
	answered map[string]int
}

func newProbe(clients []*redis.Client) *probe {
	return &probe{clients: clients, out: make([]error, len(clients)), answered: map[string]int{}}
}

// leftOut names the masters the probe left out, and why.
func (p *probe) leftOut() []string {
	var names []string
	for i, err := range p.out {
		if err != nil {
			names = append(names, fmt.Sprintf("%s (%v)", p.clients[i].Options().Addr, err))
		}
	}
	return names
}

// floorWrites measures n fsynced majority writes, one after another, and returns the
// median and the 99th percentile.
func (p *probe) floorWrites(ctx context.Context, key string, ttl time.Duration, n int) (p50, p99 time.Duration, err error) {
	lat, err := series(n, func() (time.Duration, int, error) { return p.floorWrite(ctx, key, ttl) })
	if err != nil {
		return 0, 0, err
	}
	return percentile(lat, 0.50), percentile(lat, 0.99), nil
}

// The paced floor: the same write made after a pause as long as a hold (at most
// pacedFloorMaxPause), as a hand-off is made after its holder held the lock. On a
// machine that was quiet for a while every step wakes a process whose CPU may have
// gone idle, so one write costs more than in a series of writes one after another
// (measured on the development VM: 1.6x-2.0x after a 20 ms pause; after a 1 ms pause,
// a median of 5% more). It is the floor to read a long hold's gap against.
const (
	pacedFloorMaxPause = 100 * time.Millisecond
	pacedFloorBudget   = 2 * time.Second // the pauses of one cell's paced writes, at most
)

// pacedFloor returns the pause before each paced floor write (the hold, at most
// pacedFloorMaxPause) and how many to make: floorWriteSamples, fewer when their pauses
// would add up to more than pacedFloorBudget (so 20 at least: 2s of 100ms pauses).
func pacedFloor(hold time.Duration) (pause time.Duration, n int) {
	pause = min(hold, pacedFloorMaxPause)
	n = floorWriteSamples
	if pause > 0 {
		n = min(n, int(pacedFloorBudget/pause))
	}
	return pause, n
}

// floorWritesPaced measures n fsynced majority writes, each made after pause, and returns
// the median.
func (p *probe) floorWritesPaced(ctx context.Context, key string, ttl, pause time.Duration, n int) (time.Duration, error) {
	lat, err := series(n, func() (time.Duration, int, error) {
		if !sleepCtx(ctx, pause) {
			return 0, 0, ctx.Err()
		}
		return p.floorWrite(ctx, key, ttl)
	})
	if err != nil {
		return 0, err
	}
	return percentile(lat, 0.50), nil
}

// series takes n samples, one after another, and returns their times; the first that
// fails ends it.
func series(n int, sample func() (time.Duration, int, error)) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for range n {
		d, _, err := sample()
		if err != nil {
			return nil, err
		}
		lat = append(lat, d)
	}
	return lat, nil
}

// floorWrite is one fsynced majority write: a SET PX of key to every master at once,
// timed to the majority's reply. It is the floor's SET NX PX without NX, so that every
// one is a write (and so fsynced with appendfsync always). It returns once every master
// answered or majorityTimeout passed, with how many answered.
func (p *probe) floorWrite(ctx context.Context, key string, ttl time.Duration) (time.Duration, int, error) {
	return p.majority(ctx, func(ctx context.Context, c *redis.Client) error { return c.Set(ctx, key, "floor", ttl).Err() }, floorWriteOp)
}

// majorityTimeout bounds one floor write or bare round.
const majorityTimeout = 2 * time.Second

// majority runs do on every master not left out, at once, and returns how long the
// majority's replies took and how many masters answered without an error; it returns
// once each answered or majorityTimeout passed, and leaves out those that had not. what
// names the operation in its error.
func (p *probe) majority(ctx context.Context, do func(context.Context, *redis.Client) error, what string) (time.Duration, int, error) {
	sample, cancel := context.WithTimeout(ctx, majorityTimeout)
	defer cancel()
	type reply struct {
		i   int
		err error
	}
	quorum := majority(len(p.clients))
	start := time.Now()
	replies := make(chan reply, len(p.clients))
	sent := 0
	for i, c := range p.clients {
		if p.out[i] == nil {
			sent++
			go func() { replies <- reply{i, do(sample, c)} }()
		}
	}
	ok, failed := 0, len(p.clients)-sent
	var at time.Duration
	var last error
	for range sent {
		r := <-replies
		if r.err == nil {
			if ok++; ok == quorum {
				at = time.Since(start)
			}
			continue
		}
		failed++
		last = r.err
		if sample.Err() != nil && ctx.Err() == nil {
			p.out[r.i] = fmt.Errorf("no answer within %v: %w", majorityTimeout, r.err)
			last = p.out[r.i]
		}
	}
	p.answered[what] += ok
	if ok < quorum {
		if last == nil {
			last = errors.Join(p.out...)
		}
		return 0, ok, fmt.Errorf("bench: %s: %d of %d masters failed: %w", what, failed, len(p.clients), last)
	}
	return at, ok, nil
}

// loadedSamples is what floorDuring measured during a window: the floor writes' and the
// bare rounds' medians, how many of each it made (a failed one is left out), and how
// many SETs and PINGs the masters answered (those of failed samples included): the
// bench's own commands, to take out of the masters' work.
type loadedSamples struct {
	floor, round   time.Duration
	writes, rounds int
	sets, pings    int
}

// floorDuring measures, while the workers run, a floor write every floorDuringEvery from
// the shared clock's startAt to end (ns), and a bare round halfway between two of them:
// the floor and the round under the window's load. A failed floor write ends it; a
// failed round is left out.
func (p *probe) floorDuring(ctx context.Context, key string, ttl time.Duration, startAt, end int64) (s loadedSamples) {
	// The masters' answers to the bench's own commands (failed samples' included).
	sets0, pings0 := p.answered[floorWriteOp], p.answered[bareRoundOp]
	defer func() { s.sets, s.pings = p.answered[floorWriteOp]-sets0, p.answered[bareRoundOp]-pings0 }()
	now, err := monoNow()
	if err != nil || !sleepCtx(ctx, time.Duration(startAt-now)) {
		return s
	}
	var lat, rlat []time.Duration
	for ctx.Err() == nil {
		if now, _ = monoNow(); now >= end {
			break
		}
		d, _, err := p.floorWrite(ctx, key, ttl)
		if err != nil {
			break
		}
		lat = append(lat, d)
		if !sleepCtx(ctx, floorDuringEvery/2) {
			break
		}
		if now, _ = monoNow(); now >= end {
			break
		}
		d, _, err = p.bareRound(ctx)
		if err == nil {
			rlat = append(rlat, d)
		}
		if !sleepCtx(ctx, floorDuringEvery/2) {
			break
		}
	}
	s.floor, s.writes, s.round, s.rounds = percentile(lat, 0.50), len(lat), percentile(rlat, 0.50), len(rlat)
	return s
}

// sleepCtx sleeps for d unless ctx ends first; it reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// roundSamples is how many bare rounds a cell's idle round is the median of.
const roundSamples = 200

// bareRounds measures n bare rounds, one after another, and returns the median.
func (p *probe) bareRounds(ctx context.Context, n int) (time.Duration, error) {
	lat, err := series(n, func() (time.Duration, int, error) { return p.bareRound(ctx) })
	if err != nil {
		return 0, err
	}
	return percentile(lat, 0.50), nil
}

// bareRound is the least a message can do through a majority of the masters: a PING to
// every master at once, timed to the majority's reply, with no write, no script and no
// fsync. A hand-off needs at least as much (the holder's release reaches a majority, and
// the next holder hears back from it). Measured idle and during a window, it shows how
// much longer any round through the masters took under the window's load, the lock's
// own work included. It returns once every master answered or majorityTimeout passed,
// with how many answered.
func (p *probe) bareRound(ctx context.Context) (time.Duration, int, error) {
	return p.majority(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() }, bareRoundOp)
}

// floorDuringEvery spaces the floor writes during a window: few enough that their
// fsyncs rarely share a master's event loop turn with a hand-off.
const floorDuringEvery = 50 * time.Millisecond

// handOffs returns the hand-off gaps of holds sorted by start: each hold's start minus
// the end of the hold before it (its unlock call), and the utilisation: time held over
// the wall time from the first start to the last end.
func handOffs(holds []crossHold) (gaps []time.Duration, utilisation float64) {
	if len(holds) == 0 {
		return nil, 0
	}
	var held, lastEnd int64
	for i, h := range holds {
		held += h.End - h.Start
		lastEnd = max(lastEnd, h.End)
		if i > 0 {
			gaps = append(gaps, time.Duration(h.Start-holds[i-1].End))
		}
	}
	if wall := lastEnd - holds[0].Start; wall > 0 {
		utilisation = float64(held) / float64(wall)
	}
	return gaps, utilisation
}

// masterWork is what the masters did, summed over all of them, from INFO: commands run
// by name (scripts' commands included), the time they took (µs; a script's includes its
// commands') and CPU time.
type masterWork struct {
	calls, usec map[string]int64
	cpu, sys    time.Duration // sys: the part in the kernel (network, AOF writes and fsyncs)
	// bench counts the bench's own calls taken out (less), by name.
	bench map[string]int64
}

// benchCommand is what one of the bench's own commands (a floor write's SET, a bare
// round's PING) cost the masters, measured while the workers were idle.
type benchCommand struct {
	usec     float64 // time of one call, µs (INFO commandstats)
	cpu, sys time.Duration
}

// costOf is what one call of name cost between the reading since and w, when the bench
// alone ran it in between (zero when it did not run).
func (w masterWork) costOf(name string, since masterWork) benchCommand {
	n := w.calls[name] - since.calls[name]
	if n <= 0 {
		return benchCommand{}
	}
	return benchCommand{usec: float64(w.usec[name]-since.usec[name]) / float64(n),
		cpu: (w.cpu - since.cpu) / time.Duration(n), sys: (w.sys - since.sys) / time.Duration(n)}
}

// less takes n of the bench's own calls of name out of the reading: their count, their
// time and their CPU (the kernel's part too), at cost each.
func (w *masterWork) less(name string, n int, cost benchCommand) {
	w.calls[name] -= int64(n)
	w.usec[name] -= int64(float64(n) * cost.usec)
	w.cpu -= time.Duration(n) * cost.cpu
	w.sys -= time.Duration(n) * cost.sys
	if w.bench == nil {
		w.bench = map[string]int64{}
	}
	w.bench[name] += int64(n)
}

// readMasterWork reads INFO commandstats and cpu on every admin client.
func readMasterWork(ctx context.Context, admins []*redis.Client) (masterWork, error) {
	w := masterWork{calls: map[string]int64{}, usec: map[string]int64{}}
	for _, c := range admins {
		info, err := c.Info(ctx, "commandstats", "cpu").Result()
		if err != nil {
			return w, fmt.Errorf("bench: INFO on %s: %w", c.Options().Addr, err)
		}
		for line := range strings.SplitSeq(info, "\n") {
			line = strings.TrimSpace(line)
			if name, rest, ok := strings.Cut(line, ":calls="); ok {
				name = strings.TrimPrefix(name, "cmdstat_")
				n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
				w.calls[name] += n
				if _, u, ok := strings.Cut(rest, ",usec="); ok {
					us, _ := strconv.ParseInt(strings.SplitN(u, ",", 2)[0], 10, 64)
					w.usec[name] += us
				}
			}
			for _, f := range []string{"used_cpu_sys:", "used_cpu_user:"} {
				if v, ok := strings.CutPrefix(line, f); ok {
					s, _ := strconv.ParseFloat(v, 64)
					w.cpu += time.Duration(s * float64(time.Second))
					if f == "used_cpu_sys:" {
						w.sys += time.Duration(s * float64(time.Second))
					}
				}
			}
		}
	}
	return w, nil
}

// perAcquisition is the work between two readings per acquisition: commands by name
// (those the window ran at all), the mean time of one call of each, and CPU time. INFO
// itself is left out.
func (w masterWork) perAcquisition(before masterWork, acquisitions int) (calls map[string]float64, each map[string]time.Duration, cpu, sys time.Duration) {
	if acquisitions == 0 {
		return nil, nil, 0, 0
	}
	calls, each = map[string]float64{}, map[string]time.Duration{}
	for name, n := range w.calls {
		if d := n - before.calls[name]; d > 0 && name != "info" {
			calls[name] = float64(d) / float64(acquisitions)
			// A command that was mostly the bench's own gets no time per call: what is
			// left of its time is the error of taking the bench's out at their idle cost.
			if d >= w.bench[name] {
				each[name] = time.Duration(w.usec[name]-before.usec[name]) * time.Microsecond / time.Duration(d)
			}
		}
	}
	n := time.Duration(acquisitions)
	return calls, each, (w.cpu - before.cpu) / n, (w.sys - before.sys) / n
}

// fmtCalls prints commands per acquisition, the most frequent first, each with the mean
// time of one call when known: "fcall 10.00 (45µs) publish 5.00 (2µs)".
func fmtCalls(calls map[string]float64, each map[string]time.Duration) string {
	names := make([]string, 0, len(calls))
	for n := range calls {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if calls[a] != calls[b] {
			if calls[a] > calls[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s %.2f", n, calls[n])
		if d, ok := each[n]; ok {
			fmt.Fprintf(&b, " (%s)", fmtDuration(d))
		}
	}
	return b.String()
}
