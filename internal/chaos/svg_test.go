package chaos

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// element is one parsed element of the page: its name and attributes.
type element struct {
	name  string
	attrs map[string]string
}

// parsePage parses the whole page as XML (strict), so a broken page fails the test.
func parsePage(t *testing.T, page string) []element {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict = true
	var out []element
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("report.html is not well-formed: %v\n%s", err, page)
		}
		if se, ok := tok.(xml.StartElement); ok {
			e := element{name: se.Name.Local, attrs: map[string]string{}}
			for _, a := range se.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			out = append(out, e)
		}
	}
}

func withClass(els []element, name, class string) []element {
	var out []element
	for _, e := range els {
		if e.name == name && e.attrs["class"] == class {
			out = append(out, e)
		}
	}
	return out
}

func attrF(t *testing.T, e element, name string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(e.attrs[name], 64)
	if err != nil {
		t.Fatalf("%s %s=%q: %v", e.name, name, e.attrs[name], err)
	}
	return v
}

// history is a small run of four seconds: worker 0 holds early, worker 1 fails once,
// worker 2 holds from 1 s to 2 s; one kill on m1 and one partition of m2 and m3.
func history() Input {
	const base = int64(10 * time.Second)
	s := func(d float64) int64 { return base + int64(d*float64(time.Second)) }
	return Input{Label: "pictures", Start: base, End: s(4), TTL: time.Second,
		Records: []Record{
			{Worker: 0, Op: OpAcquire, Key: "k<&>", Start: s(0), End: s(0.1), OK: true, Holder: "0-1", Fence: 1, Deadline: s(1)},
			{Worker: 0, Op: OpRelease, Key: "k<&>", Start: s(0.5), End: s(0.55), OK: true, Holder: "0-1"},
			{Worker: 1, Op: OpAcquire, Key: "k<&>", Start: s(0.2), End: s(0.6), Err: "taken"},
			{Worker: 2, Op: OpAcquire, Key: "k<&>", Start: s(0.9), End: s(1), OK: true, Holder: "2-1", Fence: 2, Deadline: s(3)},
			{Worker: 2, Op: OpRelease, Key: "k<&>", Start: s(2), End: s(2.05), OK: true, Holder: "2-1"},
		},
		Faults: []Fault{
			{Kind: "kill", Hosts: []string{"m1"}, Start: s(2.5), End: s(3.5)},
			{Kind: "partition", Hosts: []string{"m2", "m3"}, Start: s(1.5), End: s(2)},
		}}
}

func TestReportHTML(t *testing.T) {
	type want struct {
		svgs, holds, waits, failed, faults, fences int
		empty                                      bool
	}
	cases := []struct {
		name string
		in   Input
		want want
	}{
		{"small run", history(), want{svgs: 2, holds: 2, waits: 2, failed: 1, faults: 3, fences: 2}},
		// The negative control: nothing recorded gives a page that says so, not a broken one.
		{"empty history", Input{Label: "empty"}, want{empty: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			page := HTML(tc.in, Analyze(tc.in))
			els := parsePage(t, page)
			count := func(name, class string) int { return len(withClass(els, name, class)) }
			svgs := 0
			for _, e := range els {
				if e.name == "svg" {
					svgs++
				}
			}
			got := want{svgs: svgs, holds: count("rect", "hold"), waits: count("rect", "wait"), failed: count("rect", "wait failed"),
				faults: count("rect", "fault"), fences: count("circle", "fence"), empty: len(withClass(els, "p", "empty")) == 1}
			if got != tc.want {
				t.Fatalf("elements: got %+v, want %+v", got, tc.want)
			}
			if tc.want.empty && !strings.Contains(page, "nothing to draw") {
				t.Fatalf("the empty page does not say why it is empty:\n%s", page)
			}
		})
	}
}

// TestTimelinePositions: marks sit in their row at their time.
func TestTimelinePositions(t *testing.T) {
	els := parsePage(t, Timeline(history()))
	px := func(sec float64) float64 { return tlLabelW + tlPlotW*sec/4 } // the run spans 4 s
	rowY := func(row int) float64 { return tlTop + float64(row)*(tlRowH+tlRowGap) }
	near := func(a, b float64) bool { return a-b < 0.01 && b-a < 0.01 }

	var hold *element
	for _, e := range withClass(els, "rect", "hold") {
		if e.attrs["data-row"] == "2" {
			hold = &e
		}
	}
	if hold == nil {
		t.Fatal("no hold in worker 2's row (row 2)")
	}
	if x, w, y := attrF(t, *hold, "x"), attrF(t, *hold, "width"), attrF(t, *hold, "y"); !near(x, px(1)) || !near(w, px(2)-px(1)) || !near(y, rowY(2)+2) {
		t.Fatalf("worker 2's hold at x=%.2f width=%.2f y=%.2f, want x=%.2f width=%.2f y=%.2f", x, w, y, px(1), px(2)-px(1), rowY(2)+2)
	}
	// Host rows follow the three worker rows, sorted: m1 (row 3), m2 (4), m3 (5).
	rows := map[string]float64{}
	for _, e := range withClass(els, "rect", "fault") {
		rows[e.attrs["data-row"]] = attrF(t, e, "x")
	}
	if wantRows := map[string]float64{"3": px(2.5), "4": px(1.5), "5": px(1.5)}; len(rows) != 3 || !near(rows["3"], wantRows["3"]) ||
		!near(rows["4"], wantRows["4"]) || !near(rows["5"], wantRows["5"]) {
		t.Fatalf("fault bands by row (x): %v, want %v", rows, wantRows)
	}
	// Fences climb: the later acquisition's point is higher (smaller y).
	fences := withClass(els, "circle", "fence")
	if len(fences) != 2 || attrF(t, fences[1], "cy") >= attrF(t, fences[0], "cy") {
		t.Fatalf("fence points %v: want two, the second (fence 2) above the first", fences)
	}
}

// TestWriteFilesWritesHTML: the report directory gets the page next to report.json.
func TestWriteFilesWritesHTML(t *testing.T) {
	dir := t.TempDir()
	in := history()
	if err := Analyze(in).WriteFiles(dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatalf("WriteFiles wrote no report.html: %v", err)
	}
	if holds := withClass(parsePage(t, string(page)), "rect", "hold"); len(holds) != 2 {
		t.Fatalf("report.html has %d holds, want 2", len(holds))
	}
}

func TestTickStep(t *testing.T) {
	for _, tc := range []struct{ total, want time.Duration }{
		{4 * time.Second, 500 * time.Millisecond},
		{2*time.Minute + 1600*time.Millisecond, 20 * time.Second},
		{10 * time.Second, time.Second},
		{0, time.Millisecond}, // an empty run still gets a positive step
	} {
		if got := tickStep(tc.total); got != tc.want {
			t.Errorf("tickStep(%v) = %v, want %v", tc.total, got, tc.want)
		}
	}
}

// TestTimelineCoalesces: calls and holds closer than half a pixel are drawn as one bar
// that says how many it stands for (a long run has far more holds than pixels); the small
// run above, whose marks are far apart, keeps one bar each.
func TestTimelineCoalesces(t *testing.T) {
	const ms = int64(time.Millisecond)
	in := Input{Start: ms, End: ms + 4000*ms} // 1000 px for 4 s: 0.25 px per ms
	for i := int64(0); i < 2000; i++ {
		at := ms + 2*i*ms
		holder := "0-" + strconv.FormatInt(i, 10)
		in.Records = append(in.Records,
			Record{Worker: 0, Op: OpAcquire, Key: "k", Start: at, End: at + ms/2, OK: true, Holder: holder, Fence: uint64(i + 1), Deadline: at + 10*ms},
			Record{Worker: 0, Op: OpRelease, Key: "k", Start: at + ms, End: at + ms + ms/4, OK: true, Holder: holder})
	}
	els := parsePage(t, Timeline(in))
	holds, waits := withClass(els, "rect", "hold"), withClass(els, "rect", "wait")
	if len(holds) != 1 || len(waits) != 1 {
		t.Fatalf("%d hold bars and %d wait bars, want one each", len(holds), len(waits))
	}
	if fences := withClass(els, "circle", "fence"); len(fences) != 2000 {
		t.Fatalf("%d fence points, want one per acquisition (2000)", len(fences))
	}
	if page := Timeline(in); !strings.Contains(page, "worker 0: 2000 holds") {
		t.Fatal("the merged hold bar does not say it stands for 2000 holds")
	}
}
