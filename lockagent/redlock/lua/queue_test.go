package lua_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"pgregory.net/rapid"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// queueOps runs the queue's helpers (queue.lua) on the queue at KEYS[1] and its pages,
// writing the result back as the scripts do (writeq):
//   - "rewrite" w note id: the front with a new header, without id's line;
//   - "put" id tk tok lease ttl n new: id's line placed;
//   - "drop" id tk: id's line taken out;
//   - "first" now skip: the first live line that is not skip's taken out, as a hand-off
//     does (the expired lines before it go too); returns its id ("" when none);
//   - "bytag" now tag: the first live line whose token has the tag taken out, likewise.
const queueOps = `
local s = readq(KEYS[1])
local now, keep, out = 0, 0, "ok"
if ARGV[1] == "rewrite" then
  local id = ARGV[4]
  if id == "" then id = nil end
  s = rewrite(s, tonumber(ARGV[2]), ARGV[3], id)
elseif ARGV[1] == "put" then
  keep = 600000
  s = put(s, ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8] == "1", keep)
elseif ARGV[1] == "drop" then
  s = drop(s, ARGV[2], ARGV[3])
else
  now = tonumber(ARGV[2])
  local e
  if ARGV[1] == "bytag" then
    e = bytag(s, now, ARGV[3])
  else
    e, s = first(s, now, ARGV[3])
  end
  out = ""
  if e then
    out = e.id
    s = taken(s, e, window(s), note(s))
  end
end
writeq(KEYS[1], s, now, keep)
return out`

// queueLine is one waiter's line of the queue: "<id> <ticket> <token> <lease> <ttl> <attempt>".
type queueLine struct{ id, tk, tok, lease, ttl, n string }

func (l queueLine) String() string {
	return strings.Join([]string{l.id, l.tk, l.tok, l.lease, l.ttl, l.n}, " ") + "\n"
}

func joinLines(lines []queueLine) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.String())
	}
	return b.String()
}

// laterTicket is the queue's order of tickets: decimals, a longer one is larger.
func laterTicket(a, b string) bool { return len(a) > len(b) || len(a) == len(b) && a > b }

var (
	pageRange   = regexp.MustCompile(` \+([0-9]+)-([0-9]+)$`)
	frontHeader = regexp.MustCompile(`^([0-9]+)(?: ([0-9a-f:]+))?(?: \+[0-9]+-[0-9]+)?$`)
)

// readQueue reads the queue at key as the scripts keep it: its header, then its lines,
// those of the front and then those of each page in order. It fails the test on a page key
// left outside the header's range.
func readQueue(rt *rapid.T, ctx context.Context, admin *redis.Client, key string) (header, lines string) {
	front, err := admin.Get(ctx, key).Result()
	if err == redis.Nil {
		front = "0\n"
	} else if err != nil {
		rt.Fatal(err)
	}
	header, lines, _ = strings.Cut(front, "\n")
	lo, hi := 1, 0
	if m := pageRange.FindStringSubmatch(header); m != nil {
		lo, _ = strconv.Atoi(m[1])
		hi, _ = strconv.Atoi(m[2])
	}
	for p := 1; p <= max(hi+2, 12); p++ {
		v, err := admin.Get(ctx, fmt.Sprintf("%s:%d", key, p)).Result()
		if err == redis.Nil {
			continue
		}
		if p < lo || p > hi {
			rt.Fatalf("page %d left behind (header %q)", p, header)
		}
		if !strings.HasPrefix(v, "0\n") {
			rt.Fatalf("page %d: %q", p, v)
		}
		if ttl := admin.PTTL(ctx, fmt.Sprintf("%s:%d", key, p)).Val(); ttl <= 0 {
			rt.Fatalf("page %d has no TTL (%v)", p, ttl)
		}
		lines += v[2:]
	}
	return header, lines
}

// TestQueueHelpersMatchTheirSpecification: on queues as the scripts write them (lines in
// ticket order, ids unique, lines of any length: a token may be long, so pages fill after
// a line or two), split between the front (the queue key) and its pages at any points,
// the helpers give what the queue's documentation says, the front's lines then the pages'
// read as one queue:
//   - rewrite(s, w, n, id): the header of window w and note n, the pages kept, then the
//     lines without waiter id's when it is in the front;
//   - put(s, id, ...): a waiter in line with the same ticket keeps its place, with its
//     new line; any other line of that id goes; the new line goes before the first line
//     with a later ticket, else at the end;
//   - drop(s, id, tk): the line of id goes, wherever it is;
//   - first(s, now, skip), then the hand-off's rewrite: the first line whose lease is not
//     over and that is not skip's goes, and every expired line before it;
//   - bytag(s, now, tag), then the hand-off's rewrite: the first line whose lease is not
//     over and whose token has the tag goes, and nothing else.
//
// After each, the front keeps its window and note (rewrite's new ones), and it goes exactly
// when nothing is left in it (no line, no page), it has no note and its window is over.
// Each side is computed independently: the helpers on a real master (as a script, or as a
// function library whose state outlives its calls, as on the masters), the specification
// here. No page is left outside the header's range, and every page has a TTL.
func TestQueueHelpersMatchTheirSpecification(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1})
	admin := cl.Masters[0].Admin()
	ctx := context.Background()
	src := lua.QueuePrelude + queueOps
	// The same helpers as a function library, as the masters run them: the library's top
	// level (the helpers and what they keep between calls) is made once, when it loads,
	// and outlives every call, so a call sees what the calls before it (on other queues)
	// left there.
	lib := "#!lua name=queuetest\n" + lua.QueuePrelude + "\nredis.register_function('queueops', function(KEYS, ARGV)\n" +
		queueOps + "\nend)\n"
	if err := admin.FunctionLoadReplace(ctx, lib).Err(); err != nil {
		t.Fatal(err)
	}
	const key = "q:waitq"
	// A window is often 0 (none), so that fronts left with no line and no note, whose
	// window is over, go.
	msTime := rapid.OneOf(rapid.Just(int64(0)), rapid.Int64Range(0, 1e13))
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
		// The front holds the first lines, pages lo.. the rest, a few each (a page may be
		// empty or missing: it expired).
		inFront := rapid.IntRange(0, n).Draw(rt, "lines in the front")
		w := msTime.Draw(rt, "window")
		note := rapid.SampledFrom([]string{"", "1a2b3c4d:17:1795989704733"}).Draw(rt, "note")
		header := strconv.FormatInt(w, 10)
		if note != "" {
			header += " " + note
		}
		admin.FlushAll(ctx)
		pipe := admin.Pipeline()
		lo := rapid.IntRange(1, 3).Draw(rt, "first page")
		hi := lo - 1
		for rest := lines[inFront:]; len(rest) > 0 || rapid.IntRange(0, 4).Draw(rt, "an empty page") == 0 && hi < lo+1; {
			k := min(len(rest), rapid.IntRange(0, 3).Draw(rt, "lines in the page"))
			if hi >= lo+4 {
				k = len(rest) // at most six pages
			}
			hi++
			if k > 0 || rapid.Bool().Draw(rt, "empty page kept") {
				pipe.Set(ctx, fmt.Sprintf("%s:%d", key, hi), "0\n"+joinLines(rest[:k]), 10*time.Minute)
			}
			rest = rest[k:]
		}
		if hi >= lo {
			header += fmt.Sprintf(" +%d-%d", lo, hi)
		}
		pipe.Set(ctx, key, header+"\n"+joinLines(lines[:inFront]), 10*time.Minute)
		if _, err := pipe.Exec(ctx); err != nil {
			rt.Fatal(err)
		}
		before := joinLines(lines)

		asFunction := rapid.Bool().Draw(rt, "as a function")
		run := func(args ...any) string {
			var cmd *redis.Cmd
			if asFunction {
				cmd = admin.FCall(ctx, "queueops", []string{key}, args...)
			} else {
				cmd = admin.Eval(ctx, src, []string{key}, args...)
			}
			out, err := cmd.Text()
			if err != nil {
				rt.Fatalf("%v: %v", args, err)
			}
			return out
		}
		without := func(ls []queueLine, id string) []queueLine {
			return slices.DeleteFunc(slices.Clone(ls), func(l queueLine) bool { return l.id == id })
		}
		id := fmt.Sprintf("c%d/%d", rapid.IntRange(0, 3).Draw(rt, "id's client"), rapid.IntRange(0, n).Draw(rt, "id's number"))
		var old *queueLine
		for i := range lines {
			if lines[i].id == id {
				old = &lines[i]
			}
		}
		var want []queueLine
		// The header the front keeps (its window and note; every op but rewrite keeps the
		// queue's), and the time writeq is given ("now": the front goes when nothing is left
		// in it, its window is over by then and it has no note).
		wantW, wantNote, now := w, note, int64(0)
		switch op := rapid.SampledFrom([]string{"rewrite", "put", "drop", "first", "bytag"}).Draw(rt, "op"); op {
		case "rewrite":
			w2 := msTime.Draw(rt, "new window")
			note2 := rapid.SampledFrom([]string{"", "5e6f7a8b:18:1795989704999"}).Draw(rt, "new note")
			wantW, wantNote = w2, note2
			run("rewrite", w2, note2, id)
			want = slices.Concat(without(lines[:inFront], id), lines[inFront:])
			h, _ := readQueue(rt, ctx, admin, key)
			wantHeader := strconv.FormatInt(w2, 10)
			if note2 != "" {
				wantHeader += " " + note2
			}
			if m := pageRange.FindString(header); m != "" {
				wantHeader += m
			}
			if h != wantHeader && len(want) > 0 {
				rt.Fatalf("rewrite: header %q, want %q", h, wantHeader)
			}
		case "put":
			newLine := queueLine{id: id, tok: "new-token", lease: "1795989764733", ttl: "1000", n: "7"}
			if old != nil && rapid.Bool().Draw(rt, "renewal") {
				newLine.tk = old.tk
			} else {
				newLine.tk = strconv.FormatInt(rapid.Int64Range(1, 1e16).Draw(rt, "new ticket"), 10)
			}
			// new: the waiter's first attempt, so never in line.
			isNew := old == nil && rapid.Bool().Draw(rt, "first attempt")
			placed := false
			for _, l := range lines {
				switch {
				case l.id == id && l.tk == newLine.tk:
					want, placed = append(want, newLine), true
				case l.id == id:
				default:
					if !placed && laterTicket(l.tk, newLine.tk) {
						want, placed = append(want, newLine), true
					}
					want = append(want, l)
				}
			}
			if !placed {
				want = append(want, newLine)
			}
			flag := "0"
			if isNew {
				flag = "1"
			}
			run("put", newLine.id, newLine.tk, newLine.tok, newLine.lease, newLine.ttl, newLine.n, flag)
		case "drop":
			tk := ""
			if old != nil && rapid.Bool().Draw(rt, "ticket known") {
				tk = old.tk
			}
			run("drop", id, tk)
			want = without(lines, id)
		case "bytag":
			now = rapid.Int64Range(0, 1e13).Draw(rt, "now")
			tok := strings.Repeat("t", rapid.IntRange(1, 700).Draw(rt, "token length sought"))
			sum := sha1.Sum([]byte(tok))
			got := run("bytag", now, hex.EncodeToString(sum[:])[:8])
			wantID := ""
			want = lines
			for i, l := range lines {
				if lease, _ := strconv.ParseInt(l.lease, 10, 64); lease >= now && l.tok == tok {
					wantID = l.id
					want = slices.Delete(slices.Clone(lines), i, i+1)
					break
				}
			}
			if got != wantID {
				rt.Fatalf("bytag(now %d, tag of %d t's) = %q, want %q (queue %q)", now, len(tok), got, wantID, before)
			}
		case "first":
			now = rapid.Int64Range(0, 1e13).Draw(rt, "now")
			skip := rapid.SampledFrom([]string{"", id}).Draw(rt, "skip")
			got := run("first", now, skip)
			wantID := ""
			for _, l := range lines {
				if lease, _ := strconv.ParseInt(l.lease, 10, 64); lease >= now && l.id != skip {
					wantID = l.id // the first live line that is not skip's
					break
				}
			}
			if wantID == "" {
				// No live line: the expired ones went, skip's stays.
				want = nil
				for _, l := range lines {
					if lease, _ := strconv.ParseInt(l.lease, 10, 64); lease >= now {
						want = append(want, l)
					}
				}
			} else {
				// The expired lines after the head stay.
				want = nil
				head := slices.IndexFunc(lines, func(l queueLine) bool { return l.id == wantID })
				for i, l := range lines {
					lease, _ := strconv.ParseInt(l.lease, 10, 64)
					if i < head && lease < now || i == head {
						continue
					}
					want = append(want, l)
				}
			}
			if got != wantID {
				rt.Fatalf("first(now %d, skip %q) = %q, want %q (queue %q)", now, skip, got, wantID, before)
			}
		}
		h, got := readQueue(rt, ctx, admin, key)
		if got != joinLines(want) {
			rt.Fatalf("lines after: %q\nwant %q\nbefore %q", got, joinLines(want), before)
		}
		switch m := frontHeader.FindStringSubmatch(h); {
		case admin.Exists(ctx, key).Val() == 0:
			if len(want) > 0 || wantW > now || wantNote != "" {
				rt.Fatalf("the front is gone, with window %d at %d, note %q and %d lines (before %q)", wantW, now, wantNote, len(want), before)
			}
		case m == nil:
			rt.Fatalf("the front's header %q is not one", h)
		case len(want) == 0 && wantW <= now && wantNote == "" && !pageRange.MatchString(h):
			rt.Fatalf("the front %q is kept, with no line, no page, no note and window %d at %d (before %q)", h, wantW, now, before)
		case m[1] != strconv.FormatInt(wantW, 10) || m[2] != wantNote:
			rt.Fatalf("the front's header %q, want window %d and note %q (before %q)", h, wantW, wantNote, before)
		}
	})
}
