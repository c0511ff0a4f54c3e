package svgplot

import (
	"fmt"
	"math"
)

// Bar is one labelled value of a bar chart.
type Bar struct {
	Label string
	Value float64
	Shown string // the value as text (with its unit)
}

// barH is one bar's height; BarsHeight says how tall Bars draws.
const barH, barGap, chartTitleH = 18.0, 6.0, 22.0

// BarsHeight is the height Bars takes for n bars.
func BarsHeight(n int) float64 { return chartTitleH + float64(n)*(barH+barGap) + 4 }

// Bars draws a horizontal bar chart at (x, y), w wide: a title, then per bar its label,
// a bar proportional to its value (the largest fills the width) and the value as text.
func Bars(c *Canvas, x, y, w float64, title string, bars []Bar) {
	c.Text(x, y+14, "title", "start", title)
	const labelW, valueW = 130.0, 110.0
	top := 0.0
	for _, b := range bars {
		top = max(top, b.Value)
	}
	sc := Scale{0, top, x + labelW, x + w - valueW}
	for i, b := range bars {
		by := y + chartTitleH + float64(i)*(barH+barGap)
		c.Text(x+labelW-6, by+13, "", "end", b.Label)
		c.Rect(x+labelW, by, sc.At(b.Value)-(x+labelW), barH, "bar", b.Label+": "+b.Shown,
			Attr{"data-label", b.Label})
		c.Text(sc.At(b.Value)+6, by+13, "", "start", b.Shown)
	}
}

// Histogram draws the distribution of values in bins equal-width bins over [min, max]
// in the box (x, y, w, h): a title, one rect per non-empty bin, the axis with its ends
// labelled by show. With no values it says so instead.
func Histogram(c *Canvas, x, y, w, h float64, title string, values []float64, bins int, show func(float64) string) {
	c.Text(x, y+14, "title", "start", title)
	plotTop, plotBottom := y+chartTitleH, y+h-18
	if len(values) == 0 || bins <= 0 {
		c.Text(x+w/2, (plotTop+plotBottom)/2, "muted", "middle", "no values recorded")
		return
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range values {
		lo, hi = min(lo, v), max(hi, v)
	}
	counts := make([]int, bins)
	for _, v := range values {
		i := bins / 2 // all values equal: one bin in the middle
		if hi > lo {
			i = min(int((v-lo)/(hi-lo)*float64(bins)), bins-1)
		}
		counts[i]++
	}
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	xs := Scale{0, float64(bins), x + 40, x + w}
	ys := Scale{0, float64(most), plotBottom, plotTop}
	c.Line(x+40, plotBottom, x+w, plotBottom, "axis")
	c.Line(x+40, plotTop, x+40, plotBottom, "axis")
	c.Text(x+36, plotTop+10, "", "end", fmt.Sprint(most))
	c.Text(x+36, plotBottom, "", "end", "0")
	binW := (hi - lo) / float64(bins)
	for i, n := range counts {
		if n == 0 {
			continue
		}
		from := lo + float64(i)*binW
		c.Rect(xs.At(float64(i))+1, ys.At(float64(n)), xs.At(float64(i+1))-xs.At(float64(i))-2, plotBottom-ys.At(float64(n)),
			"bin", fmt.Sprintf("%s to %s: %d", show(from), show(from+binW), n), Attr{"data-count", fmt.Sprint(n)})
	}
	c.Text(x+40, plotBottom+14, "", "start", show(lo))
	c.Text(x+w, plotBottom+14, "", "end", show(hi))
}
