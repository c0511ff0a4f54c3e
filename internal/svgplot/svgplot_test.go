package svgplot

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// marks counts the elements of the given name and class in an SVG, failing on malformed XML.
func marks(t *testing.T, svg, name, class string) int {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	n := 0
	for {
		tok, err := d.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return n
			}
			t.Fatalf("malformed SVG: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == name {
			for _, a := range se.Attr {
				if a.Name.Local == "class" && a.Value == class {
					n++
				}
			}
		}
	}
}

func TestHistogram(t *testing.T) {
	show := func(v float64) string { return "v" }
	cases := []struct {
		name   string
		values []float64
		bins   int
		rects  int
		empty  bool
	}{
		{"two clusters", []float64{1, 1, 1, 10, 10}, 10, 2, false},
		{"one value", []float64{3, 3}, 5, 1, false},
		{"no values", nil, 5, 0, true}, // negative control: says so, draws no bins
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New(400, 200)
			Histogram(c, 0, 0, 400, 200, "t <&>", tc.values, tc.bins, show)
			svg := c.SVG()
			if got := marks(t, svg, "rect", "bin"); got != tc.rects {
				t.Fatalf("bins drawn %d, want %d", got, tc.rects)
			}
			if got := strings.Contains(svg, "no values recorded"); got != tc.empty {
				t.Fatalf("empty-state message shown %v, want %v", got, tc.empty)
			}
		})
	}
}

func TestBars(t *testing.T) {
	c := New(500, BarsHeight(2))
	Bars(c, 0, 0, 500, "throughput", []Bar{{"a", 10, "10/s"}, {"b", 5, "5/s"}})
	if got := marks(t, c.SVG(), "rect", "bar"); got != 2 {
		t.Fatalf("bars %d, want 2", got)
	}
	if s := (Scale{0, 10, 100, 200}); s.At(5) != 150 || (Scale{1, 1, 7, 9}).At(3) != 7 {
		t.Fatalf("Scale: 5 in [0,10]->[100,200] = %v, want 150; an empty range maps to P0", s.At(5))
	}
}
