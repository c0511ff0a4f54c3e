package overlap

import (
	"sync"
	"testing"
	"time"
)

type rec struct {
	key, holder string
	start, end  int // milliseconds after t0
	fence       uint64
}

func TestViolations(t *testing.T) {
	tests := []struct {
		name  string
		recs  []rec
		kinds []Kind
	}{
		{"no intervals", nil, nil},
		{"back to back holders", []rec{{"k", "a", 0, 10, 1}, {"k", "b", 10, 20, 2}, {"k", "c", 25, 30, 3}}, nil},
		{"overlapping holders", []rec{{"k", "a", 0, 10, 1}, {"k", "b", 5, 20, 2}}, []Kind{KindOverlap}},
		{"overlap found against the furthest reaching interval", []rec{{"k", "a", 0, 100, 1}, {"k", "b", 10, 20, 2}, {"k", "c", 50, 60, 3}},
			[]Kind{KindOverlap, KindOverlap}},
		{"different keys never overlap", []rec{{"k1", "a", 0, 10, 1}, {"k2", "b", 5, 20, 1}}, nil},
		{"same holder (re-entrant) never overlaps itself", []rec{{"k", "a", 0, 10, 1}, {"k", "a", 5, 8, 1}}, nil},
		{"fence equal to the previous holder's", []rec{{"k", "a", 0, 10, 5}, {"k", "b", 10, 20, 5}}, []Kind{KindFence}},
		{"fence going down", []rec{{"k", "a", 0, 10, 7}, {"k", "b", 10, 20, 8}, {"k", "c", 20, 30, 6}}, []Kind{KindFence}},
		{"recorded out of order but increasing by start", []rec{{"k", "b", 10, 20, 2}, {"k", "a", 0, 10, 1}}, nil},
		{"zero fence is not checked", []rec{{"k", "a", 0, 10, 5}, {"k", "b", 10, 20, 0}}, nil},
		{"an empty interval (end before start) overlaps nothing", []rec{{"k", "a", 0, 10, 1}, {"k", "b", 5, 3, 2}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t0 := time.Now()
			at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
			c := New()
			for _, r := range tt.recs {
				c.Record(r.key, r.holder, at(r.start), at(r.end), r.fence)
			}
			got := c.Violations()
			if len(got) != len(tt.kinds) {
				t.Fatalf("got %d violations %v, want kinds %v", len(got), got, tt.kinds)
			}
			for i, v := range got {
				if v.Kind != tt.kinds[i] {
					t.Errorf("violation %d: kind %s, want %s (%v)", i, v.Kind, tt.kinds[i], v)
				}
				if v.String() == "" {
					t.Errorf("violation %d has no description", i)
				}
			}
			if c.Len() != len(tt.recs) {
				t.Errorf("Len() = %d, want %d", c.Len(), len(tt.recs))
			}
		})
	}
}

func TestOverlapDuration(t *testing.T) {
	t0 := time.Now()
	c := New()
	c.Record("k", "a", t0, t0.Add(10*time.Millisecond), 1)
	c.Record("k", "b", t0.Add(4*time.Millisecond), t0.Add(20*time.Millisecond), 2)
	v := c.Violations()
	if len(v) != 1 || v[0].Overlap != 6*time.Millisecond || v[0].First.Holder != "a" || v[0].Second.Holder != "b" {
		t.Fatalf("got %+v, want one 6ms overlap of a then b", v)
	}
}

func TestConcurrentRecord(t *testing.T) {
	c := New()
	t0 := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				slot := g*100 + i // disjoint slots: no violation expected
				s := t0.Add(time.Duration(slot) * time.Millisecond)
				c.Record("k", string(rune('a'+g))+string(rune(i)), s, s.Add(time.Millisecond), uint64(slot+1))
			}
		}(g)
	}
	wg.Wait()
	if c.Len() != 800 {
		t.Fatalf("Len() = %d, want 800", c.Len())
	}
	if v := c.Violations(); len(v) != 0 {
		t.Fatalf("unexpected violations: %v", v[:min(3, len(v))])
	}
}
