package chaos

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// acq, rel build the records of one hold: acquired at s (ms), validity until dl, released at r.
func acq(w int, holder, key string, s, dl int64, fence uint64) Record {
	return Record{Worker: w, Op: OpAcquire, Key: key, Holder: holder, Start: (s - 1) * ms, End: s * ms, OK: true, Fence: fence, Deadline: dl * ms}
}

func rel(w int, holder, key string, r int64) Record {
	return Record{Worker: w, Op: OpRelease, Key: key, Holder: holder, Start: r * ms, End: (r + 1) * ms, OK: true}
}

func checks(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Check)
	}
	return out
}

func TestCheckHolds(t *testing.T) {
	tests := []struct {
		name string
		recs []Record
		want []string
	}{
		{"back to back", []Record{acq(0, "a", "k", 0, 100, 1), rel(0, "a", "k", 10), acq(1, "b", "k", 11, 110, 2), rel(1, "b", "k", 20)}, nil},
		{"second holder before the first released", []Record{acq(0, "a", "k", 0, 100, 1), rel(0, "a", "k", 50), acq(1, "b", "k", 30, 130, 2), rel(1, "b", "k", 60)},
			[]string{CheckMutex}},
		{"paused holder released late but its validity had ended", []Record{acq(0, "a", "k", 0, 20, 1), acq(1, "b", "k", 30, 130, 2), rel(1, "b", "k", 40), rel(0, "a", "k", 45)}, nil},
		{"validity still running when the next holder came", []Record{acq(0, "a", "k", 0, 40, 1), acq(1, "b", "k", 30, 130, 2), rel(0, "a", "k", 45), rel(1, "b", "k", 50)},
			[]string{CheckMutex}},
		{"holder without a release holds until its deadline", []Record{acq(0, "a", "k", 0, 40, 1), acq(1, "b", "k", 39, 130, 2)}, []string{CheckMutex}},
		{"different keys", []Record{acq(0, "a", "k1", 0, 100, 1), acq(1, "b", "k2", 10, 100, 1)}, nil},
		{"fence does not grow", []Record{acq(0, "a", "k", 0, 100, 7), rel(0, "a", "k", 10), acq(1, "b", "k", 11, 110, 7), rel(1, "b", "k", 20)},
			[]string{CheckFence}},
		{"fence goes back", []Record{acq(0, "a", "k", 0, 100, 53), rel(0, "a", "k", 10), acq(1, "b", "k", 11, 110, 1), rel(1, "b", "k", 20)},
			[]string{CheckFence}},
		{"failed acquisitions hold nothing", []Record{acq(0, "a", "k", 0, 100, 1),
			{Worker: 1, Op: OpAcquire, Key: "k", Holder: "b", Start: 5 * ms, End: 6 * ms, Err: "taken"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checks(CheckHolds(Holds(tt.recs)))
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("violations %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRegisterRefusesSmallerFences(t *testing.T) {
	r := NewRegister(func() int64 { return 0 })
	if v, ok, _ := r.Read("k", "a", 5); !ok || v != 0 {
		t.Fatalf("read with fence 5 on a new register: %d %v", v, ok)
	}
	if ok, _ := r.Write("k", "a", 5, 1); !ok {
		t.Fatal("write with the fence just read was refused")
	}
	if _, ok, max := r.Read("k", "b", 4); ok || max != 5 {
		t.Fatalf("read with fence 4 after 5: ok %v, max %d", ok, max)
	}
	if ok, _ := r.Write("k", "b", 4, 2); ok {
		t.Fatal("write with fence 4 after 5 was accepted")
	}
	if ok, _ := r.Write("k", "c", 0, 2); ok {
		t.Fatal("write without a fence was accepted")
	}
	if v, ok, _ := r.Read("k", "d", 9); !ok || v != 1 {
		t.Fatalf("read with fence 9: %d %v", v, ok)
	}
	states, log := r.Snapshot()
	if s := states["k"]; s.Value != 1 || s.Accepted != 1 || s.MaxFence != 9 {
		t.Fatalf("state %+v", s)
	}
	res := CheckRegister(states, log, nil)
	if len(res.Violations) != 0 || res.StaleReads != 1 || res.StaleWrites != 2 || res.Accepted != 1 {
		t.Fatalf("result %+v", res)
	}
}

func TestRegisterOverASocket(t *testing.T) {
	r := NewRegister(func() int64 { return 0 })
	sock := filepath.Join(t.TempDir(), "r.sock")
	if err := r.Serve(sock); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := DialRegister(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if v, err := c.Read("k", "a", 3); err != nil || v != 0 {
		t.Fatalf("read: %d %v", v, err)
	}
	if err := c.Write("k", "a", 3, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.Write("k", "b", 2, 7); !errors.Is(err, ErrStale) {
		t.Fatalf("write with a smaller fence: %v, want ErrStale", err)
	}
	if v, err := c.Read("k", "c", 4); err != nil || v != 1 {
		t.Fatalf("read: %d %v", v, err)
	}
	if _, err := c.Read("k c", "x", 1); err == nil || errors.Is(err, ErrStale) {
		t.Fatalf("malformed request: %v, want a protocol error", err)
	}
}

func TestCheckRegisterFindsLostAndStaleWrites(t *testing.T) {
	t.Run("increments in turn", func(t *testing.T) {
		r := NewRegister(func() int64 { return 0 })
		for f := uint64(1); f <= 5; f++ {
			v, _, _ := r.Read("k", "h", f)
			r.Write("k", "h", f, v+1)
		}
		states, log := r.Snapshot()
		if res := CheckRegister(states, log, nil); len(res.Violations) != 0 || res.LostWrites != 0 || res.Accepted != 5 {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("two holders with one fence interleave: a lost write", func(t *testing.T) {
		r := NewRegister(func() int64 { return 0 })
		va, _, _ := r.Read("k", "a", 5)
		vb, _, _ := r.Read("k", "b", 5)
		r.Write("k", "a", 5, va+1)
		r.Write("k", "b", 5, vb+1)
		states, log := r.Snapshot()
		res := CheckRegister(states, log, nil)
		if res.LostWrites != 1 || !contains(checks(res.Violations), CheckLost) {
			t.Fatalf("lost writes %d, violations %v", res.LostWrites, res.Violations)
		}
	})
	t.Run("a register that accepts a stale write", func(t *testing.T) {
		states := map[string]RegisterState{"k": {MaxFence: 9, Value: 2, Accepted: 2}}
		log := []RegisterOp{
			{Seq: 1, Key: "k", Op: OpRead, Holder: "a", Fence: 8, Value: 0, Accepted: true},
			{Seq: 2, Key: "k", Op: OpRead, Holder: "b", Fence: 9, Value: 0, Accepted: true, MaxBefore: 8},
			{Seq: 3, Key: "k", Op: OpWrite, Holder: "b", Fence: 9, Value: 1, Accepted: true, MaxBefore: 9},
			{Seq: 4, Key: "k", Op: OpWrite, Holder: "a", Fence: 8, Value: 2, Accepted: true, MaxBefore: 8}, // lies about MaxBefore
		}
		res := CheckRegister(states, log, nil)
		if !contains(checks(res.Violations), CheckStale) {
			t.Fatalf("violations %v, want %s", res.Violations, CheckStale)
		}
	})
	t.Run("paused holders' writes are counted", func(t *testing.T) {
		recs := []Record{{Op: OpWrite, Paused: true, Err: "stale"}, {Op: OpWrite, Paused: true, OK: true}, {Op: OpWrite, OK: true}}
		res := CheckRegister(nil, nil, recs)
		if res.PausedWrites != 2 || res.PausedRejected != 1 {
			t.Fatalf("%+v", res)
		}
	})
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestLiveness(t *testing.T) {
	sec := int64(time.Second)
	cfg := LivenessConfig{Masters: 5, Clients: 2, Start: 0, End: 30 * sec, Grace: time.Second, Bound: 2 * time.Second, Report: time.Second}
	// Three masters cut off from client 0 from 10s to 20s.
	faults := []Fault{{Kind: FaultCutMajority, Down: []Down{
		{Master: 0, Clients: []int{0}, Start: 10 * sec, End: 20 * sec},
		{Master: 1, Clients: []int{0}, Start: 10 * sec, End: 20 * sec},
		{Master: 2, Clients: []int{0}, Start: 10 * sec, End: 20 * sec}}}}
	every := func(client int, from, to int64, skip func(int64) bool) []Record {
		var out []Record
		for ts := from; ts <= to; ts += sec / 10 {
			if !skip(ts) {
				out = append(out, Record{Client: client, Op: OpAcquire, OK: true, End: ts})
			}
		}
		return out
	}
	t.Run("no acquisition without a majority is fine", func(t *testing.T) {
		recs := every(0, 0, 30*sec, func(ts int64) bool { return ts > 10*sec && ts < 21*sec })
		recs = append(recs, every(1, 0, 30*sec, func(int64) bool { return false })...)
		res := Liveness(cfg, faults, recs)
		if len(res.Violations) != 0 {
			t.Fatalf("violations: %v", res.Violations)
		}
		if len(res.Unavailable) != 1 || res.Unavailable[0].Majority || res.Unavailable[0].Client != 0 {
			t.Fatalf("unavailable windows: %+v", res.Unavailable)
		}
	})
	t.Run("a client host with a majority that stops acquiring", func(t *testing.T) {
		recs := every(0, 0, 30*sec, func(int64) bool { return false })
		recs = append(recs, every(1, 0, 30*sec, func(ts int64) bool { return ts > 12*sec && ts < 18*sec })...)
		res := Liveness(cfg, faults, recs)
		if len(res.Violations) != 1 || !strings.Contains(res.Violations[0].What, "client host 1") {
			t.Fatalf("violations: %v", res.Violations)
		}
		if len(res.Unavailable) != 1 || !res.Unavailable[0].Majority {
			t.Fatalf("unavailable windows: %+v", res.Unavailable)
		}
	})
	t.Run("a client host that never recovers after the partition heals", func(t *testing.T) {
		recs := every(0, 0, 30*sec, func(ts int64) bool { return ts > 10*sec })
		recs = append(recs, every(1, 0, 30*sec, func(int64) bool { return false })...)
		res := Liveness(cfg, faults, recs)
		if len(res.Violations) != 1 || !strings.Contains(res.Violations[0].What, "client host 0") {
			t.Fatalf("violations: %v", res.Violations)
		}
	})
}

func TestContended(t *testing.T) {
	alone := []Record{acq(0, "a", "k", 1, 100, 1), rel(0, "a", "k", 10), acq(0, "b", "k", 20, 100, 2), rel(0, "b", "k", 30),
		acq(1, "c", "other", 5, 100, 1)}
	if n := contended(alone); n != 0 {
		t.Fatalf("one worker per key: %d contended", n)
	}
	// Worker 1 waits (its call spans 5..15 ms) while worker 0 holds k (1..10 ms): worker 1's
	// acquisition is contended; worker 0's was not (nobody else wanted k during its call).
	waiting := []Record{acq(0, "a", "k", 1, 100, 1), rel(0, "a", "k", 10),
		{Worker: 1, Op: OpAcquire, Key: "k", Holder: "b", Start: 5 * ms, End: 15 * ms, OK: true, Fence: 2, Deadline: 100 * ms}, rel(1, "b", "k", 20)}
	if n := contended(waiting); n != 1 {
		t.Fatalf("a waiter and a holder: %d contended, want 1", n)
	}
}

func TestAnalyzeReportsViolations(t *testing.T) {
	recs := []Record{acq(0, "a", "k", 0, 100, 1), acq(1, "b", "k", 30, 130, 1), rel(0, "a", "k", 50), rel(1, "b", "k", 60),
		{Op: OpEnd}}
	rep := Analyze(Input{Label: "test", Seed: 42, Records: recs, Workers: 2, Clients: 1, Keys: 1, Masters: 5,
		TTL: time.Second, Start: 0, End: 100 * ms})
	if rep.Safe || rep.Overlaps != 1 || rep.FenceViolations != 1 || rep.Acquisitions != 2 {
		t.Fatalf("report %+v", rep)
	}
	s := rep.Summary()
	for _, want := range []string{"VIOLATIONS FOUND", "CHAOS_SEED=42", "overlaps 1", "VIOLATION mutual-exclusion"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
}
