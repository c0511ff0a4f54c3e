package chaos

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
)

// Operations recorded in a history.
const (
	OpAcquire = "acquire" // Client.Acquire: Start before the call, End after its reply
	OpRead    = "read"    // fenced read of the register
	OpWrite   = "write"   // fenced write of the register (the increment)
	OpRelease = "release" // Lock.Release
	OpPause   = "pause"   // the worker stopped itself (SIGSTOP) while holding; End when it ran again
	OpEnd     = "end"     // the worker finished and flushed its history
)

// Record is one call and its reply, as a worker process saw it. Times are
// CLOCK_MONOTONIC nanoseconds, which is one clock for every process on the machine, so
// records of different processes compare.
type Record struct {
	Worker int    `json:"w"`
	Client int    `json:"c"` // the client namespace ("client host") the worker ran in
	Op     string `json:"op"`
	Key    string `json:"k,omitempty"`
	Start  int64  `json:"s"`
	End    int64  `json:"e"`
	OK     bool   `json:"ok,omitempty"`
	// Err classifies a failure: taken, unavailable, timeout, expired, lost, stale, error.
	Err    string `json:"err,omitempty"`
	Detail string `json:"d,omitempty"` // the error's text, for failures that are not the usual ones
	// Holder names one acquisition (worker and sequence number); every record made under
	// that lock carries it.
	Holder   string `json:"h,omitempty"`
	Fence    uint64 `json:"f,omitempty"`
	Deadline int64  `json:"dl,omitempty"` // acquire: end of the validity on the monotonic clock
	Value    int64  `json:"v,omitempty"`  // read: the value read; write: the value written
	Paused   bool   `json:"p,omitempty"`  // write: the holder was stopped since its read
}

// ReadHistory reads one worker's JSON-lines history.
func ReadHistory(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeHistory(f, path)
}

func decodeHistory(r io.Reader, name string) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

// Hold is one acquisition as the holder relied on it: from the reply of Acquire to the
// end of its validity, or to the start of its release if that came first.
type Hold struct {
	Key    string
	Holder string
	Worker int
	Client int
	Start  int64
	End    int64
	Fence  uint64
}

// Holds extracts every successful acquisition from the records, in start order.
func Holds(recs []Record) []Hold {
	byHolder := map[string]*Hold{}
	var order []string
	for _, r := range recs {
		if r.Op == OpAcquire && r.OK {
			byHolder[r.Holder] = &Hold{Key: r.Key, Holder: r.Holder, Worker: r.Worker, Client: r.Client,
				Start: r.End, End: r.Deadline, Fence: r.Fence}
			order = append(order, r.Holder)
		}
	}
	for _, r := range recs {
		if r.Op != OpRelease {
			continue
		}
		if h := byHolder[r.Holder]; h != nil && r.Start < h.End {
			h.End = r.Start
		}
	}
	out := make([]Hold, 0, len(order))
	for _, id := range order {
		h := *byHolder[id]
		if h.End < h.Start {
			h.End = h.Start // the reply came after the validity: relied on nothing
		}
		out = append(out, h)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out
}
