package bench

import (
	"fmt"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/svgplot"
)

// svgWidth is the chart's width in pixels.
const svgWidth = 720.0

// SVG draws the run for people: per scenario one bar chart with a bar per implementation
// (throughput, sequential p50 and p99, in-process contention p99 wait and, when it ran, the
// cross-process acquisitions/s at the largest process count). The same drawing as the
// chaos report's (internal/svgplot); a standalone SVG file with no scripts.
func (r *Report) SVG() string {
	type panel struct {
		title string
		bars  []svgplot.Bar
	}
	dur := func(d time.Duration) string { return d.Round(time.Microsecond).String() }
	var tp, p50, p99, wait, cross panel
	tp.title = fmt.Sprintf("throughput: acquire+release pairs/s at %d goroutines (higher is better)", r.Config.Goroutines)
	p50.title = "sequential acquire+release p50 (lower is better)"
	p99.title = "sequential acquire+release p99 (lower is better)"
	wait.title = fmt.Sprintf("contention: p99 wait, %d goroutines on one key (lower is better)", r.Config.Contenders)
	for _, res := range r.Results {
		if t := res.Throughput; t != nil {
			tp.bars = append(tp.bars, svgplot.Bar{Label: res.Name, Value: t.PerSecond, Shown: fmt.Sprintf("%.0f/s", t.PerSecond)})
		}
		if s := res.Sequential; s != nil {
			p50.bars = append(p50.bars, svgplot.Bar{Label: res.Name, Value: float64(s.P50), Shown: dur(s.P50)})
			p99.bars = append(p99.bars, svgplot.Bar{Label: res.Name, Value: float64(s.P99), Shown: dur(s.P99)})
		}
		if c := res.Contention; c != nil {
			wait.bars = append(wait.bars, svgplot.Bar{Label: res.Name, Value: float64(c.P99Wait), Shown: dur(c.P99Wait)})
		}
		if n := len(res.Cross); n > 0 && res.Cross[n-1] != nil {
			x := res.Cross[n-1]
			cross.title = fmt.Sprintf("cross-process: acquisitions/s, %d processes on one key (higher is better)", x.Processes)
			cross.bars = append(cross.bars, svgplot.Bar{Label: res.Name, Value: x.PerSecond, Shown: fmt.Sprintf("%.0f/s", x.PerSecond)})
		}
	}
	var panels []panel
	for _, p := range []panel{tp, p50, p99, wait, cross} {
		if len(p.bars) > 0 {
			panels = append(panels, p)
		}
	}
	h := 10.0
	for _, p := range panels {
		h += svgplot.BarsHeight(len(p.bars)) + 12
	}
	c := svgplot.New(svgWidth, max(h, 40))
	if len(panels) == 0 {
		c.Text(svgWidth/2, 24, "muted", "middle", "no results: no scenario ran")
		return c.SVG()
	}
	y := 4.0
	for _, p := range panels {
		svgplot.Bars(c, 4, y, svgWidth-8, p.title, p.bars)
		y += svgplot.BarsHeight(len(p.bars)) + 12
	}
	return c.SVG()
}
