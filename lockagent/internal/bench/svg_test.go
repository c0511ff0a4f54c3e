package bench

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// bars counts the bars an SVG draws per implementation, failing on malformed XML.
func bars(t *testing.T, svg string) map[string]int {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	d.Strict = true
	out := map[string]int{}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("malformed SVG: %v\n%s", err, svg)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			var class, label string
			for _, a := range se.Attr {
				switch a.Name.Local {
				case "class":
					class = a.Value
				case "data-label":
					label = a.Value
				}
			}
			if class == "bar" {
				out[label]++
			}
		}
	}
}

func TestReportSVG(t *testing.T) {
	full := &Result{Name: Lockagent, Sequential: &Sequential{P50: time.Millisecond, P99: 3 * time.Millisecond},
		Throughput: &Throughput{PerSecond: 5000}, Contention: &Contention{P99Wait: 20 * time.Millisecond},
		Cross: []*CrossProcess{{Processes: 4, PerSecond: 300}}}
	seqOnly := &Result{Name: Redsync, Sequential: &Sequential{P50: 2 * time.Millisecond, P99: 5 * time.Millisecond}}
	cases := []struct {
		name    string
		results []*Result
		want    map[string]int
		empty   bool
	}{
		// lockagent: throughput, p50, p99, wait, cross; redsync: p50 and p99 only.
		{"two implementations", []*Result{full, seqOnly}, map[string]int{Lockagent: 5, Redsync: 2}, false},
		{"no results", nil, map[string]int{}, true}, // negative control: says so, draws no bars
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svg := (&Report{Config: Config{Goroutines: 64, Contenders: 16}, Results: tc.results}).SVG()
			got := bars(t, svg)
			if len(got) != len(tc.want) {
				t.Fatalf("bars per implementation %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Fatalf("bars per implementation %v, want %v", got, tc.want)
				}
			}
			if strings.Contains(svg, "no results") != tc.empty {
				t.Fatalf("empty-state message shown %v, want %v", !tc.empty, tc.empty)
			}
		})
	}
}
