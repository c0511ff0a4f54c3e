// Package svgplot draws the small charts the kit writes for people: the chaos report's
// timeline and histogram and lockagent bench's bars. Output is plain SVG text (no scripts,
// no external resources), so a page that inlines it opens in a browser with no network.
// It is shared so the two reports draw alike and the drawing code exists once.
package svgplot

import (
	"fmt"
	"html"
	"strconv"
	"strings"
)

// Canvas collects SVG elements; SVG returns them as one <svg> element.
type Canvas struct {
	W, H float64
	b    strings.Builder
}

// New is an empty canvas of the given size in pixels.
func New(w, h float64) *Canvas { return &Canvas{W: w, H: h} }

// Attr is one extra attribute (data-* attributes let tests and readers find elements).
type Attr struct{ Name, Value string }

func num(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func (c *Canvas) open(tag string, attrs []Attr, kv ...string) {
	c.b.WriteString("<" + tag)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		c.b.WriteString(" " + kv[i] + `="` + html.EscapeString(kv[i+1]) + `"`)
	}
	for _, a := range attrs {
		c.b.WriteString(" " + a.Name + `="` + html.EscapeString(a.Value) + `"`)
	}
}

// closeWithTitle ends an element, with a <title> child (a browser shows it on hover).
func (c *Canvas) closeWithTitle(tag, title string) {
	if title == "" {
		c.b.WriteString("/>")
		return
	}
	c.b.WriteString("><title>" + html.EscapeString(title) + "</title></" + tag + ">")
}

// Rect draws a rectangle; a width below one pixel is drawn one pixel wide so short
// events stay visible.
func (c *Canvas) Rect(x, y, w, h float64, class, title string, attrs ...Attr) {
	w = max(w, 1)
	c.open("rect", attrs, "x", num(x), "y", num(y), "width", num(w), "height", num(h), "class", class)
	c.closeWithTitle("rect", title)
}

// Circle draws a point.
func (c *Canvas) Circle(cx, cy, r float64, class, title string, attrs ...Attr) {
	c.open("circle", attrs, "cx", num(cx), "cy", num(cy), "r", num(r), "class", class)
	c.closeWithTitle("circle", title)
}

// Line draws a segment (axes, ticks).
func (c *Canvas) Line(x1, y1, x2, y2 float64, class string) {
	c.open("line", nil, "x1", num(x1), "y1", num(y1), "x2", num(x2), "y2", num(y2), "class", class)
	c.b.WriteString("/>")
}

// Text writes a label; anchor is start, middle or end.
func (c *Canvas) Text(x, y float64, class, anchor, s string) {
	c.open("text", nil, "x", num(x), "y", num(y), "class", class, "text-anchor", anchor)
	c.b.WriteString(">" + html.EscapeString(s) + "</text>")
}

// SVG is the canvas as an <svg> element, with the shared style inside it so the element
// stands alone (as a file or inlined in a page).
func (c *Canvas) SVG() string {
	return fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s"><style>%s</style>%s</svg>`,
		num(c.W), num(c.H), num(c.W), num(c.H), style, c.b.String())
}

// Scale maps a data range linearly onto a pixel range.
type Scale struct{ D0, D1, P0, P1 float64 }

// At is v's pixel position; an empty data range maps everything to P0.
func (s Scale) At(v float64) float64 {
	if s.D1 == s.D0 {
		return s.P0
	}
	return s.P0 + (v-s.D0)/(s.D1-s.D0)*(s.P1-s.P0)
}

// style is the shared look. Classes name what a mark is; the chaos report and bench use
// the same ones.
const style = `text{font:12px sans-serif;fill:#222}.title{font-weight:bold;font-size:13px}.axis{stroke:#888;stroke-width:1}.grid{stroke:#e4e4e4;stroke-width:1}` +
	`.hold{fill:#2e7d32}.wait{fill:#f9a825}.wait.failed{fill:#c62828}.fault{fill:#c62828;fill-opacity:.35}.pause{fill:#6a1b9a;fill-opacity:.4}` +
	`.fence{fill:#1565c0}.bar{fill:#1565c0}.bin{fill:#1565c0}.muted{fill:#777}`
