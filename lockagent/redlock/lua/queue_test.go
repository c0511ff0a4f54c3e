package lua_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// queueOps runs the queue's helpers rewrite and put (queue.lua) on a string given as ARGV.
const queueOps = `
if ARGV[1] == "rewrite" then
  local id = ARGV[5]
  if id == "" then id = nil end
  return rewrite(ARGV[2], tonumber(ARGV[3]), ARGV[4], id)
end
return put(ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8])`

// queueLine is one waiter's line of the queue: "<id> <ticket> <token> <lease> <ttl> <attempt>".
type queueLine struct{ id, tk, tok, lease, ttl, n string }

func (l queueLine) String() string {
	return strings.Join([]string{l.id, l.tk, l.tok, l.lease, l.ttl, l.n}, " ") + "\n"
}

func queueString(w int64, note string, lines []queueLine) string {
	var b strings.Builder
	if note == "" {
		fmt.Fprintf(&b, "%d\n", w)
	} else {
		fmt.Fprintf(&b, "%d %s\n", w, note)
	}
	for _, l := range lines {
		b.WriteString(l.String())
	}
	return b.String()
}

// laterTicket is the queue's order of tickets: decimals, a longer one is larger.
func laterTicket(a, b string) bool { return len(a) > len(b) || len(a) == len(b) && a > b }

// TestQueueHelpersMatchTheirSpecification: on queues as the scripts write them (lines in
// ticket order, ids unique, lines of any length: a token may be long), the helpers that
// build a new queue give what the queue's documentation says:
//   - rewrite(s, w, n, id): the header of window w and note n, then the lines without
//     waiter id's (all of them when id is not in line);
//   - put(s, id, ...): a waiter in line with the same ticket keeps its place, with its
//     new line; any other line of that id goes; the new line goes before the first line
//     with a later ticket, else at the end.
//
// Each side is computed independently: the helpers on a real master, the specification
// here.
func TestQueueHelpersMatchTheirSpecification(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1})
	admin := cl.Masters[0].Admin()
	ctx := context.Background()
	src := lua.QueuePrelude + queueOps
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 12).Draw(rt, "waiters")
		tickets := rapid.SliceOfN(rapid.Int64Range(1, 1e16), n, n).Draw(rt, "tickets")
		slices.Sort(tickets) // lines in ticket order, as the scripts keep them
		lines := make([]queueLine, n)
		for i := range lines {
			lines[i] = queueLine{
				id:    fmt.Sprintf("c%d/%d", rapid.IntRange(0, 3).Draw(rt, "client"), i),
				tk:    strconv.FormatInt(tickets[i], 10),
				tok:   strings.Repeat("t", rapid.IntRange(1, 700).Draw(rt, "token length")),
				lease: strconv.FormatInt(rapid.Int64Range(0, 1e13).Draw(rt, "lease"), 10),
				ttl:   strconv.Itoa(rapid.IntRange(1, 60000).Draw(rt, "ttl")),
				n:     strconv.Itoa(rapid.IntRange(1, 999).Draw(rt, "attempt")),
			}
		}
		w := rapid.Int64Range(0, 1e13).Draw(rt, "window")
		note := rapid.SampledFrom([]string{"", "1a2b3c4d:17:1795989704733"}).Draw(rt, "note")
		s := queueString(w, note, lines)
		// An id in line or not.
		id := fmt.Sprintf("c%d/%d", rapid.IntRange(0, 3).Draw(rt, "id's client"), rapid.IntRange(0, n).Draw(rt, "id's number"))

		w2 := rapid.Int64Range(0, 1e13).Draw(rt, "new window")
		note2 := rapid.SampledFrom([]string{"", "5e6f7a8b:18:1795989704999"}).Draw(rt, "new note")
		var kept []queueLine
		for _, l := range lines {
			if l.id != id {
				kept = append(kept, l)
			}
		}
		want := queueString(w2, note2, kept)
		got, err := admin.Eval(ctx, src, nil, "rewrite", s, w2, note2, id).Text()
		if err != nil || got != want {
			rt.Fatalf("rewrite(%q, %d, %q, %q) = %q, %v; want %q", s, w2, note2, id, got, err, want)
		}

		// put: the id's line (if any) and a new line for it.
		newLine := queueLine{id: id, tok: "new-token", lease: "1795989764733", ttl: "1000", n: "7"}
		var old *queueLine
		for i := range lines {
			if lines[i].id == id {
				old = &lines[i]
			}
		}
		if old != nil && rapid.Bool().Draw(rt, "renewal") {
			newLine.tk = old.tk
		} else {
			newLine.tk = strconv.FormatInt(rapid.Int64Range(1, 1e16).Draw(rt, "new ticket"), 10)
		}
		var out []queueLine
		placed := false
		for _, l := range lines {
			switch {
			case l.id == id && l.tk == newLine.tk:
				out, placed = append(out, newLine), true
			case l.id == id:
			default:
				if !placed && laterTicket(l.tk, newLine.tk) {
					out, placed = append(out, newLine), true
				}
				out = append(out, l)
			}
		}
		if !placed {
			out = append(out, newLine)
		}
		want = queueString(w, note, out)
		got, err = admin.Eval(ctx, src, nil, "put", s, newLine.id, newLine.tk, newLine.tok, newLine.lease, newLine.ttl, newLine.n).Text()
		if err != nil || got != want {
			rt.Fatalf("put(%q, %v) = %q, %v; want %q", s, newLine, got, err, want)
		}
	})
}
