package chaos

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/svgplot"
)

// Timeline layout, in pixels: a label column, then the time axis.
const (
	tlLabelW = 110.0
	tlPlotW  = 1000.0
	tlRowH   = 14.0
	tlRowGap = 4.0
	tlTop    = 44.0  // room for the title and the time ticks
	tlFenceH = 120.0 // the fence panel under the rows
)

// span is the time range a timeline covers: the workload's span widened to every record
// and fault, so nothing is drawn outside the axis.
func span(in Input) (t0, t1 int64) {
	t0, t1 = in.Start, in.End
	widen := func(s, e int64) {
		if t0 == 0 || s < t0 {
			t0 = s
		}
		t1 = max(t1, e)
	}
	for _, r := range in.Records {
		if r.Op != OpEnd {
			widen(r.Start, max(r.End, r.Deadline))
		}
	}
	for _, f := range in.Faults {
		widen(f.Start, f.End)
	}
	return t0, t1
}

// faultRows names the host rows: every host a fault named, and "clients" for faults that
// name none (a client host's partition or a paused worker).
func faultRows(faults []Fault) []string {
	seen := map[string]bool{}
	var rows []string
	for _, f := range faults {
		names := f.Hosts
		if len(names) == 0 {
			names = []string{"clients"}
		}
		for _, h := range names {
			if !seen[h] {
				seen[h] = true
				rows = append(rows, h)
			}
		}
	}
	sort.Strings(rows)
	return rows
}

// Timeline draws the run: per worker a row of its acquire calls (waits; red when the call
// failed) and holds, per host a row of the faults that touched it, and under them every
// successful acquisition's fence value against the time it was granted.
func Timeline(in Input) string {
	t0, t1 := span(in)
	workers := map[int]bool{}
	for _, r := range in.Records {
		workers[r.Worker] = true
	}
	var wrows []int
	for w := range workers {
		wrows = append(wrows, w)
	}
	sort.Ints(wrows)
	wrow := map[int]int{}
	for i, w := range wrows {
		wrow[w] = i
	}
	hrows := faultRows(in.Faults)
	hrow := map[string]int{}
	for i, h := range hrows {
		hrow[h] = len(wrows) + i
	}
	rowY := func(row int) float64 { return tlTop + float64(row)*(tlRowH+tlRowGap) }
	fenceTop := rowY(len(wrows)+len(hrows)) + 20
	c := svgplot.New(tlLabelW+tlPlotW+20, fenceTop+tlFenceH+30)
	x := svgplot.Scale{D0: float64(t0), D1: float64(t1), P0: tlLabelW, P1: tlLabelW + tlPlotW}
	sec := func(t int64) string { return (time.Duration(t - t0)).Round(time.Millisecond).String() }

	c.Text(0, 14, "title", "start", "timeline: waits (amber, red when failed) and holds (green) per worker; faults per host")
	step := tickStep(time.Duration(t1 - t0))
	for t := t0; t <= t1; t += int64(step) {
		px := x.At(float64(t))
		c.Line(px, tlTop-4, px, fenceTop+tlFenceH, "grid")
		c.Text(px, tlTop-6, "muted", "middle", time.Duration(t-t0).String())
	}
	for i, w := range wrows {
		c.Text(tlLabelW-6, rowY(i)+11, "", "end", fmt.Sprintf("worker %d", w))
	}
	for i, h := range hrows {
		c.Text(tlLabelW-6, rowY(len(wrows)+i)+11, "", "end", h)
	}
	rowAttr := func(row int) svgplot.Attr { return svgplot.Attr{Name: "data-row", Value: strconv.Itoa(row)} }
	var waits, holds []mark
	for _, r := range in.Records {
		if r.Op != OpAcquire {
			continue
		}
		class, what := "wait", "acquired"
		if !r.OK {
			class, what = "wait failed", "failed: "+r.Err
		}
		waits = append(waits, mark{row: wrow[r.Worker], who: fmt.Sprintf("worker %d", r.Worker), class: class, s: r.Start, e: r.End, n: 1,
			title: fmt.Sprintf("worker %d acquire %s %s..%s %s", r.Worker, r.Key, sec(r.Start), sec(r.End), what)})
	}
	for _, h := range Holds(in.Records) {
		holds = append(holds, mark{row: wrow[h.Worker], who: fmt.Sprintf("worker %d", h.Worker), class: "hold", s: h.Start, e: h.End, n: 1,
			title: fmt.Sprintf("worker %d holds %s %s..%s fence %d", h.Worker, h.Key, sec(h.Start), sec(h.End), h.Fence)})
	}
	for _, m := range coalesce(waits, x, "acquire calls", sec) {
		c.Rect(x.At(float64(m.s)), rowY(m.row), x.At(float64(m.e))-x.At(float64(m.s)), tlRowH, m.class, m.title, rowAttr(m.row))
	}
	for _, m := range coalesce(holds, x, "holds", sec) {
		c.Rect(x.At(float64(m.s)), rowY(m.row)+2, x.At(float64(m.e))-x.At(float64(m.s)), tlRowH-4, m.class, m.title, rowAttr(m.row))
	}
	for _, f := range in.Faults {
		names := f.Hosts
		if len(names) == 0 {
			names = []string{"clients"}
		}
		for _, n := range names {
			c.Rect(x.At(float64(f.Start)), rowY(hrow[n]), x.At(float64(f.End))-x.At(float64(f.Start)), tlRowH, "fault",
				fmt.Sprintf("%s on %s %s..%s %s", f.Kind, n, sec(f.Start), sec(f.End), f.Note), rowAttr(hrow[n]))
		}
	}

	// The fence panel: one point per acquisition; on one key the points must climb.
	var top uint64
	for _, r := range in.Records {
		if r.Op == OpAcquire && r.OK {
			top = max(top, r.Fence)
		}
	}
	y := svgplot.Scale{D0: 0, D1: float64(top), P0: fenceTop + tlFenceH, P1: fenceTop}
	c.Text(tlLabelW-6, fenceTop+10, "", "end", fmt.Sprintf("fence %d", top))
	c.Text(tlLabelW-6, fenceTop+tlFenceH, "", "end", "fence 0")
	c.Line(tlLabelW, fenceTop+tlFenceH, tlLabelW+tlPlotW, fenceTop+tlFenceH, "axis")
	for _, r := range in.Records {
		if r.Op == OpAcquire && r.OK {
			c.Circle(x.At(float64(r.End)), y.At(float64(r.Fence)), 2.5, "fence",
				fmt.Sprintf("worker %d %s fence %d at %s", r.Worker, r.Key, r.Fence, sec(r.End)))
		}
	}
	return c.SVG()
}

// mark is one bar of a worker's row before it is drawn.
type mark struct {
	row   int
	who   string // the row's label
	class string
	s, e  int64
	n     int // calls or holds it stands for
	title string
}

// coalesce merges the marks of one row and class that lie within half a pixel of each
// other into one bar titled with their count: a run of minutes has tens of thousands of
// holds, far more than the axis has pixels, and one element each made pages of megabytes
// per minute that look the same.
func coalesce(ms []mark, x svgplot.Scale, what string, sec func(int64) string) []mark {
	sort.SliceStable(ms, func(i, j int) bool {
		if ms[i].row != ms[j].row {
			return ms[i].row < ms[j].row
		}
		if ms[i].class != ms[j].class {
			return ms[i].class < ms[j].class
		}
		return ms[i].s < ms[j].s
	})
	var out []mark
	for _, m := range ms {
		if k := len(out) - 1; k >= 0 && out[k].row == m.row && out[k].class == m.class &&
			x.At(float64(m.s)) <= x.At(float64(out[k].e))+0.5 {
			out[k].e = max(out[k].e, m.e)
			out[k].n += m.n
			out[k].title = fmt.Sprintf("%s: %d %s %s..%s", out[k].who, out[k].n, what, sec(out[k].s), sec(out[k].e))
			continue
		}
		out = append(out, m)
	}
	return out
}

// tickStep is the time axis' step: 1, 2 or 5 times a power of ten, giving at most ten
// ticks, so the labels are round numbers.
func tickStep(total time.Duration) time.Duration {
	for p := time.Millisecond; ; p *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if total <= 10*m*p {
				return m * p
			}
		}
	}
}

// LatencyHistogram draws how long successful Acquire calls took, in bins of equal width
// on a log scale: the calls during a fault are orders of magnitude slower than the rest,
// and a linear scale would put nearly all calls into the first bin.
func LatencyHistogram(recs []Record) string {
	var logMs []float64
	for _, r := range recs {
		if r.Op == OpAcquire && r.OK {
			logMs = append(logMs, math.Log10(max(float64(r.End-r.Start)/1e6, 0.001)))
		}
	}
	c := svgplot.New(600, 220)
	svgplot.Histogram(c, 0, 0, 580, 220, fmt.Sprintf("latency of successful Acquire calls (%d), log scale", len(logMs)), logMs, 30,
		func(v float64) string { return strconv.FormatFloat(math.Pow(10, v), 'g', 3, 64) + " ms" })
	return c.SVG()
}

// HTML is the report as one self-contained page: the summary, the timeline and the
// latency histogram, with no scripts and no external resources.
func HTML(in Input, r *Report) string {
	body := `<p class="empty">No records: this run recorded no operations, so there is nothing to draw.</p>`
	if len(in.Records) > 0 {
		body = Timeline(in) + "\n" + LatencyHistogram(in.Records)
	}
	return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"/><title>chaos run ` + html.EscapeString(r.Run) + `</title>
<style>body{font:14px sans-serif;margin:16px;color:#222}pre{background:#f6f6f6;padding:8px;white-space:pre-wrap}svg{display:block;margin:12px 0}.empty{color:#777}</style>
</head><body>
<h1>chaos run ` + html.EscapeString(r.Run) + `</h1>
<pre>` + html.EscapeString(r.Summary()) + `</pre>
` + body + `
</body></html>
`
}
