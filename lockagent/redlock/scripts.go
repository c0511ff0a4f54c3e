package redlock

import (
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// script is one of the library's Lua scripts. A master that has the kit's function library
// (FunctionLibrary, loaded by the admin) runs it as a function with FCALL; elsewhere the
// batcher sends it by EVALSHA, loads it (SCRIPT LOAD) on a master whose cache is unknown
// and falls back to EVAL on NOSCRIPT (a restarted master). See functions.go.
type script struct {
	name   string // stable name: the function is "redlock_<name>_<sha prefix>"
	src    string
	sha    string
	shaArg any // sha as a command argument, boxed once
	fn     string
	fnArg  any      // fn boxed once
	flags  []string // function flags (FunctionLibrary)
}

// newScript names a script: name (lower case letters, digits and '_') is stable across
// versions, the function name adds the script's SHA-1 prefix, so a master whose library
// holds another body of the script has no function of that name (see functions.go).
// flags are the function's flags; allowOOM for a script that must run on a master out of
// memory (a release frees memory).
func newScript(name, src string, flags ...string) *script {
	sum := sha1.Sum([]byte(src))
	sha := hex.EncodeToString(sum[:])
	fn := functionName(name, sha)
	return &script{name: name, src: src, sha: sha, shaArg: sha, fn: fn, fnArg: fn, flags: flags}
}

// queueLua are the wait queue's helpers, shared by the scripts that read or write it
// (see "Waiting across processes" in doc.go). The queue is a string key: a first line
// "<end of the open window>" (master ms, 0: none), then one line per waiter, in ticket
// order: "<waiter id> <ticket> <token> <lease end, master ms> <ttl ms> <attempt>\n",
// where attempt numbers the waiter's attempt that last renewed the entry. It is written
// with redis.set_repl(REPL_NONE): never logged, never fsynced, a hint only. A value of
// another type is left alone and treated as no queue; a string that is not a queue is
// treated as an empty one, and an unreadable line ends the queue. The scripts run on
// every attempt and release of a contended lock, so they work on the string (plain
// finds and substrings, the first live entry is the head) and never parse the whole
// queue into tables. Tickets stay strings (Lua prints large numbers in exponent form)
// and compare as numbers: a longer decimal is larger.
const queueLua = `
local function quiet() pcall(redis.set_repl, redis.REPL_NONE) end
local function loud() pcall(redis.set_repl, redis.REPL_ALL) end
local function nowms()
  local t = redis.call("time")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- readq returns the queue at k ("0\n" when there is none) and whether k holds something
-- else: a value that is not a queue (another type, or a string not in the queue's format)
-- belongs to someone else and is never read as a queue nor overwritten.
local function readq(k)
  local ok, s = pcall(redis.call, "get", k)
  if not ok then return nil, true end
  if not s then return "0\n", false end
  if not string.find(s, "^%d+ ?[%x:%d]*\n") then return nil, true end
  return s, false
end
local function window(s) return tonumber(string.match(s, "^(%d+)")) end
local function note(s) return string.match(s, "^%d+ ([%x:%d]+)\n") or "" end
local function body(s) return string.find(s, "\n", 1, true) + 1 end
local function empty(s) return body(s) > #s end
local function header(w, n)
  if n == "" then return string.format("%d\n", w) end
  return string.format("%d %s\n", w, n)
end
local function setwindow(s, w) return header(w, note(s)) .. string.sub(s, body(s)) end
local function setnote(s, n) return header(window(s), n) .. string.sub(s, body(s)) end
-- tagof names a token as the masters report it: the first 8 hex digits of its SHA-1.
local function tagof(tok) return string.sub(redis.sha1hex(tok), 1, 8) end
-- handed is the note a hand-off leaves: which token it set, with which fence, expiring
-- when (master ms, from TIME and PTTL: exact to a millisecond). The note is memory only,
-- but an AOF rewrite copies it into the AOF's base like any key, and a restart brings it
-- back while the writes after the rewrite that cleared it in memory (all unlogged) are
-- lost: a note is never trusted for what it says, only for a key it still describes.
-- noted returns the note's fence when the key holds tok with the note's expiry, else nil:
-- any other SET of the key (even of the same token, by an extension or by the waiter's
-- own attempt after the handed key expired) gives it an expiry later by at least its TTL,
-- and a master keeps and restores expiries as absolute times (PXAT).
local function handed(key, tok, g, now)
  if not string.match(g, "^%d+$") then return "" end
  return tagof(tok) .. ":" .. g .. ":" .. string.format("%d", now + redis.call("pttl", key))
end
local function noted(n, key, tok, now)
  local tag, f, at = string.match(n, "^(%x+):(%d+):(%d+)$")
  if tag == nil or tag ~= tagof(tok) then return nil end
  local ttl = redis.call("pttl", key)
  if ttl <= 0 or math.abs(tonumber(at) - (now + ttl)) > 1 then return nil end
  return f
end
-- proves says whether the note describes the key as the hand-off to tok with fence g.
local function proves(n, key, tok, g, now) return noted(n, key, tok, now) == g end
local function entry(s, p)
  local id, tk, tok, lease, ttl, n, e = string.match(s, "^(%S+) (%d+) (%S+) (%d+) (%d+) (%d+)\n()", p)
  if id then return {id = id, tk = tk, tok = tok, lease = tonumber(lease), ttl = ttl, n = n, from = p, to = e} end
end
local function cut(s, e) return string.sub(s, 1, e.from - 1) .. string.sub(s, e.to) end
local function later(a, b) return #a > #b or (#a == #b and a > b) end
local function find(s, id)
  local a = string.find(s, "\n" .. id .. " ", 1, true)
  if a then return entry(s, a + 1) end
end
local function drop(s, id)
  local e = find(s, id)
  if e then return cut(s, e) end
  return s
end
local function first(s, now, skip)
  local p = body(s)
  while true do
    local e = entry(s, p)
    if not e then return nil, string.sub(s, 1, p - 1) end
    if e.lease < now then
      s = cut(s, e)
    elseif e.id ~= skip then
      return e, s
    else
      p = e.to
    end
  end
end
local function bytag(s, now, tag)
  local p = body(s)
  while true do
    local e = entry(s, p)
    if not e then return nil end
    if e.lease >= now and tagof(e.tok) == tag then return e end
    p = e.to
  end
end
local function put(s, id, tk, tok, lease, ttl, n)
  local line = id .. " " .. tk .. " " .. tok .. " " .. lease .. " " .. ttl .. " " .. n .. "\n"
  local old = find(s, id)
  if old and old.tk == tk then
    return string.sub(s, 1, old.from - 1) .. line .. string.sub(s, old.to)
  end
  if old then s = cut(s, old) end
  local p = body(s)
  while true do
    local t = string.match(s, "^%S+ (%d+) ", p)
    if not t or later(t, tk) then break end
    p = string.find(s, "\n", p, true) + 1
  end
  return string.sub(s, 1, p - 1) .. line .. string.sub(s, p)
end
local function writeq(k, s, now, keep)
  if empty(s) and window(s) <= now and note(s) == "" then
    redis.call("del", k)
    return
  end
  local ms = redis.call("pttl", k)
  if ms < keep then ms = keep end
  if ms < 1 then ms = 1 end
  redis.call("set", k, s, "PX", string.format("%d", ms))
end
local function tell(key, e, what)
  local client = string.match(e.id, "^(.*)/%d+$") or e.id
  redis.call("publish", key .. GRANT_CHANNEL .. client, e.tok .. " " .. what .. " " .. e.n)
end
-- A hand-off that is logged gives the new holder's key a slack beyond its TTL (a quarter
-- of it, at most a second) and raises the register CHAIN_FENCES - 1 past the new
-- holder's fence, so that the next hand-offs can go without a log write (see releaseBody).
-- proven is true when the release proved (by the note) that the releaser's key is the
-- one this master handed it with fence f, untouched since; left is its PTTL.
local function slack(ttl) return math.min(math.floor(tonumber(ttl) / 4), 1000) end
local function handto(keys, s, e, f, now, keep, proven, left)
  local reg = redis.call("get", keys[2]) or "0"
  local g = "r" .. reg
  local numeric = string.match(reg, "^%d+$") and tonumber(reg) < 9007199254740992 - CHAIN_FENCES
  if proven and numeric and tonumber(reg) > f and left >= tonumber(e.ttl) then
    -- Unlogged (see releaseBody): the key keeps the released key's expiry, the fence is
    -- the releaser's plus one, at or below the register.
    quiet()
    g = string.format("%d", f + 1)
    redis.call("set", keys[1], e.tok, "PX", left)
  else
    loud()
    redis.call("set", keys[1], e.tok, "PX", tonumber(e.ttl) + slack(e.ttl))
    if numeric then
      local n = math.max(tonumber(reg), f) + 1
      g = string.format("%d", n)
      redis.call("set", keys[2], string.format("%d", n + CHAIN_FENCES - 1))
    end
  end
  quiet()
  writeq(keys[3], setnote(drop(s, e.id), handed(keys[1], e.tok, g, now)), now, keep)
  tell(keys[1], e, g)
end
`

// releaseBody is the standard compare-and-delete: other Redlock clients release with the
// same "get == token then del" semantics, so the holders of different libraries exclude
// each other. Then, when the key is free and its wait queue has a live waiter, the lock
// is handed to the first one by ticket, in the same atomic step (handto): the key is set
// to the waiter's token, the waiter's fence is the releaser's fence + 1 (the register + 1
// when the key was not the releaser's or it has no fence), the waiter leaves the queue,
// and "<token> <fence> <attempt>" is published on the key's grant channel of the
// waiter's Client (attempt: the waiter's attempt that last renewed its entry, which ran
// before the hand-off; fence is "r" and the register as read when the register is not a
// number). A release in
// the first openWindow of a handOffPeriod (by the master's clock) opens a window instead:
// the key stays free until the window's end, and the first waiter is told "<token> w<ms>
// <attempt>": try in ms. Without a hand-off, the released token is
// published on the key's release channel (ARGV[2]; empty: no notification) so that
// waiters wake at once. The message (ARGV[3]) is the token, followed by handedOffMark
// when the releasing Client has already handed the lock to one of its own waiters.
//
// A hand-off is logged (fsynced before the waiter is told), like every acquisition,
// unless it is prepared. A logged one gives max(register, releaser's fence) + 1, sets the
// waiter's key with its TTL plus a slack (a quarter of the TTL, at most a second), raises
// the register to the waiter's fence + chainFences - 1, and leaves a note in the queue's
// first line (memory only): the token's tag, the fence and the key's expiry. That
// prepares the hand-offs after it: a release, not durable, whose key the note proves to
// be the one this master handed it with the fence it names, untouched since (same
// expiry to the millisecond), that still has at least the next waiter's TTL left and a
// register above that fence, hands over without a log write. The waiter's key keeps the
// released key's expiry (PX of its PTTL, so never later), its fence is the releaser's
// + 1, at or below the register already logged, and a new note describes it. So a chain
// of hand-offs pays one fsync per slack or per chainFences hand-offs, whichever ends
// first, instead of one each.
//
// Why an unlogged hand-off loses nothing: every write that moves a lock key's expiry
// later is logged (acquisitions, extensions, logged hand-offs); an unlogged hand-off
// keeps the expiry, and an unlogged release only removes the key from memory. So the
// expiry a master restores from its AOF (after a crash, even with no restart delay) is
// never earlier than the one in memory, and that restored key refuses every other client
// until the new holder's key would have expired (the note, in memory, is gone: the next
// hand-off is logged). The register is only ever written by logged writes and is never
// below a fence handed out, and with appendfsync always the master fsyncs them before it
// sends any later reply or notice. Why the fence is right: see "Waiting across
// processes" in doc.go. A holder that dies while others wait keeps the lock blocked for
// up to the slack longer than its TTL.
//
// A holder's release with ARGV[6] "drop" also takes out the entry its acquisition left
// (ARGV[5]) on a master it did not need. The same script takes out a waiter that gives
// up (ARGV[6] "leave": the entry of ARGV[5] goes, and a lock it was handed meanwhile is
// released and handed on, never with a window, and always logged). "leave <tag>" is a
// waiter stepping back from a split (isSplit): the lock goes to the waiter whose token
// has that tag when it is in line, else to the first. A key found free (expired, or
// released by a client that hands nothing over) is handed to the first waiter too.
//
// KEYS[1] lock key; KEYS[2] fencing register; KEYS[3] wait queue; ARGV[1] token; ARGV[2]
// release channel or ""; ARGV[3] message; ARGV[4] the releaser's fence ("0": none);
// ARGV[5] the caller's waiter id or ""; ARGV[6] "", "drop", "leave" or "leave <tag>".
// Returns 0 when the key is not ours, 1 released, 2 released and handed to a waiter.
const releaseBody = queueLua + `
local s = readq(KEYS[3]) -- nil: no queue of ours, only the release runs
local read = s
local mode = ARGV[6] or "" -- callers of the bare release pass only ARGV[1-3]
local leaving = string.sub(mode, 1, 5) == "leave"
if s and (leaving or mode == "drop") then s = drop(s, ARGV[5]) end
local v = redis.call("get", KEYS[1])
local ours = v == ARGV[1]
if v and not ours then
  if s ~= read then
    quiet()
    writeq(KEYS[3], s, nowms(), 0)
  end
  return 0
end
local left, proven = 0, false
if ours then
  left = redis.call("pttl", KEYS[1])
  -- The key is the one this master's last hand-off set, with the fence the releaser
  -- names, untouched since (any other SET of it, even of the same token by an extension
  -- after it expired, gives it another expiry time).
  proven = s ~= nil and not durable and proves(note(s), KEYS[1], ARGV[1], ARGV[4] or "", nowms())
  if durable then loud() else quiet() end
  redis.call("del", KEYS[1])
end
if s and not empty(s) then
  local now = nowms()
  local head
  head, s = first(s, now, "")
  local to = string.match(mode, "^leave (%x+)$")
  if head and to then
    head = bytag(s, now, to) or head
  end
  if head and window(s) <= now then
    if ours and not leaving and now % HANDOFF_PERIOD < OPEN_WINDOW then
      -- A window: the key stays free until its end, and this package's queued attempts
      -- do not take it, so that a client that only polls (another Redlock library) gets
      -- its chance too. Windows are slots of the masters' clocks, so the masters open
      -- theirs together and such a client can win a majority. Only the first waiter is
      -- told, to try when the window closes; nobody else wakes.
      local w = now - now % HANDOFF_PERIOD + OPEN_WINDOW
      quiet()
      writeq(KEYS[3], setwindow(s, w), now, w - now)
      tell(KEYS[1], head, "w" .. string.format("%d", w - now))
      return 1
    end
    -- The releaser's fence counts only for a key it held until now (handto raises the
    -- register above it and above the register as read).
    local f = 0
    if ours and not leaving then f = tonumber(ARGV[4]) or 0 end
    handto(KEYS, s, head, f, now, 0, proven and not leaving, left)
    if ours then return 2 end
    return 0
  end
end
if s and s ~= read then
  quiet()
  writeq(KEYS[3], s, nowms(), 0)
end
if not ours then return 0 end
if ARGV[2] ~= "" then
  redis.call("publish", ARGV[2], ARGV[3])
end
return 1
`

// Hand-offs leave room for clients that only poll: a release in the first openWindow of
// every handOffPeriod, by the master's clock, leaves the key free until the window ends
// (see doc.go).
const (
	handOffPeriod = 100 * time.Millisecond
	openWindow    = 5 * time.Millisecond
)

// chainFences is how many fences a logged hand-off reserves: the register goes that far
// minus one past the new holder's fence, so that up to as many hand-offs after it need no
// log write for their fence (see releaseBody).
const chainFences = 100

// withGrantChannel puts the grant channel's infix and the hand-off constants into a
// script body.
func withGrantChannel(src string) string {
	return strings.NewReplacer("GRANT_CHANNEL", `"`+GrantChannelInfix+`"`,
		"HANDOFF_PERIOD", strconv.FormatInt(handOffPeriod.Milliseconds(), 10),
		"OPEN_WINDOW", strconv.FormatInt(openWindow.Milliseconds(), 10),
		"CHAIN_FENCES", strconv.Itoa(chainFences),
		"FOREIGN_QUEUE", `"`+foreignQueueCode+`"`).Replace(src)
}

// releaseScript is the release without durability (the default): the same
// compare-and-delete, but redis.set_repl(REPL_NONE) keeps the DEL out of the AOF, so the
// master answers without an fsync (with appendfsync always, one fsync is most of a
// round's latency). Safety never depends on a release being durable: a release lost in a
// crash (or left out of the AOF before a clean restart) only brings the key back until its
// own absolute expiry (PXAT), and a key that is present can only refuse an acquisition,
// never grant one; an acquisition logged later replays as SET ... PXAT without NX and
// overwrites it. Under the kit's supervisor a crashed master stays down longer than every
// TTL, so the key has expired before it rejoins, and its clean stops rewrite the AOF from
// memory first (best effort). See "Releases are not logged" in doc.go. A hand-off is an
// acquisition: its SET and register write are logged (the DEL before it is not, and the
// logged SET replays over the released key).
//
// set_repl is called through pcall: on a server that cannot leave a script's writes out
// of the AOF (no set_repl, or Redis < 7 with lua-replicate-commands off) the release still
// runs, logged, instead of failing.
var releaseScript = newScript("release", withGrantChannel("local durable = false"+releaseBody), allowOOM)

// durableReleaseScript is the release logged to the AOF (Options.DurableRelease): the
// master fsyncs the DEL before it answers, as with every other Redlock client.
var durableReleaseScript = newScript("release_durable", withGrantChannel("local durable = true"+releaseBody), allowOOM)

// acquireQueuedScript is an attempt by a waiter of the wait queue (Acquire after its
// first attempt was refused). Where the key is free and no live waiter with an earlier
// ticket is in line (nor a window open, see releaseBody) it is the acquire script (SET
// key token PX ttl, the fence raised to the proposal where the register held less) and
// the waiter leaves the queue; where it is free but an earlier waiter is in line, it is
// handed to that waiter as a release would (handto) and the caller queues; where it is
// already the waiter's (handed over by a release) it
// says so; where another token holds it, the waiter joins the queue with its ticket, or
// renews its lease (unlogged), and the holder is named by the first 8 hex digits of the
// SHA-1 of its token (waiters holding a minority each can tell a split from a holder).
//
// KEYS[1] lock key; KEYS[2] fencing register; KEYS[3] wait queue; ARGV[1] token; ARGV[2]
// ttl in ms; ARGV[3] proposed fence ("0": no fencing); ARGV[4] waiter id ("<client>/<n>");
// ARGV[5] ticket (decimal); ARGV[6] lease in ms; ARGV[7] attempt number (decimal).
// Returns {1, register before} set now; {2, register[, fence handed]} already ours (the
// fence from the hand-off's note, when there is one for our token); {0, PTTL, register,
// holder} held by another token (also when it was just handed to an earlier waiter);
// {0, ms left, register, "window"} in a window.
var acquireQueuedScript = newScript("acquire_queued", withGrantChannel(queueLua+`
local reg = redis.call("get", KEYS[2]) or "0"
local v = redis.call("get", KEYS[1])
local s, foreign = readq(KEYS[3])
if foreign then
  return redis.error_reply(FOREIGN_QUEUE .. " " .. KEYS[3] .. " holds a value that is not a wait queue")
end
if v == ARGV[1] then
  -- Handed to us: the fence the hand-off gave, from its note, when the note still
  -- describes the key (noted: not a note a restart brought back from an AOF rewrite).
  local g = noted(note(s), KEYS[1], ARGV[1], nowms())
  if g then return {2, reg, g} end
  return {2, reg}
end
local leasems = tonumber(ARGV[6])
if not v then
  local now = nowms()
  local w = window(s)
  if w > now then
    return {0, w - now, reg, "window"}
  end
  -- A free key goes to the first live waiter in line, handed over as by a release; the
  -- others queue. Waiters woken together (after a window, an expiry, a release by a
  -- client that hands nothing over) then do not split the masters' votes between them.
  local head
  head, s = first(s, now, ARGV[4])
  if head and later(ARGV[5], head.tk) then
    s = put(s, ARGV[4], ARGV[5], ARGV[1], string.format("%d", now + leasems), ARGV[2], ARGV[7])
    handto(KEYS, s, head, 0, now, leasems, false, 0)
    return {0, tonumber(head.ttl), reg, tagof(head.tok)}
  end
end
if not v then
  redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2])
  if ARGV[3] ~= "0" and string.match(reg, "^%d+$") and tonumber(reg) < tonumber(ARGV[3]) then
    redis.call("set", KEYS[2], ARGV[3])
  end
  -- The window is over (a window refuses above), and the note of the last hand-off no
  -- longer describes the key (it may name this very token, handed earlier; noted tells
  -- even when a restart brings the note back).
  local left = setnote(setwindow(drop(s, ARGV[4]), 0), "")
  if left ~= s then
    quiet()
    writeq(KEYS[3], left, nowms(), 0)
  end
  return {1, reg}
end
quiet()
local now = nowms()
writeq(KEYS[3], put(s, ARGV[4], ARGV[5], ARGV[1], string.format("%d", now + leasems), ARGV[2], ARGV[7]), now, leasems)
return {0, redis.call("pttl", KEYS[1]), reg, tagof(v)}
`))

// extendScript extends the key when it is still ours, and sets it again (NX) on a master
// that lost it (restart after the delay, eviction by an operator) so that a long-held lock
// does not drift down to a bare majority. It never touches another holder's key.
//
// KEYS[1] lock key; ARGV[1] token; ARGV[2] ttl in ms.
// Returns 1 extended, 2 set again, 0 held by another token.
var extendScript = newScript("extend", `
local v = redis.call("get", KEYS[1])
if v == ARGV[1] then
  redis.call("pexpire", KEYS[1], ARGV[2])
  return 1
elseif not v then
  if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
    return 2
  end
end
return 0
`)

// acquireScript is the acquisition on one master when fencing is on: the standard
// SET key token NX PX ttl (the same key, value and semantics as every other Redlock
// client, so holders of other libraries still exclude ours) and, in the same atomic step,
// the optimistic fence write: where the SET succeeded and the fencing register holds
// less than the proposed fence, the register is raised to it. The register is read
// before the SET so that a register of the wrong type fails the script before it wrote
// anything; the script is atomic, so the order is invisible to other clients.
//
// KEYS[1] lock key; KEYS[2] fence key; ARGV[1] token; ARGV[2] ttl in ms; ARGV[3] proposed
// fence (decimal).
// Returns {1, register before the write} when the key was set; {0, PTTL of the key,
// register} when it is held. The register comes back as the stored string ("0" when
// absent); a register that is not a decimal number is reported and left alone.
var acquireScript = newScript("acquire", `
local reg = redis.call("get", KEYS[2]) or "0"
if not redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return {0, redis.call("pttl", KEYS[1]), reg}
end
if string.match(reg, "^%d+$") and tonumber(reg) < tonumber(ARGV[3]) then
  redis.call("set", KEYS[2], ARGV[3])
end
return {1, reg}
`)

// fenceScript is the fallback fence round: on a master that still holds our token, raise
// the fence register to max(stored, proposed + reserve); never lower it. The register
// has no TTL: it must never go backwards. reserve > 0 (a waiter of the wait queue) keeps
// that many fences above ours for the hand-offs after us (see releaseBody).
//
// KEYS[1] lock key; KEYS[2] fence key; ARGV[1] token; ARGV[2] proposed fence; ARGV[3]
// reserve (optional, default 0).
// Returns the stored value after the write, or -1 when the token is not ours there.
var fenceScript = newScript("fence", `
if redis.call("get", KEYS[1]) ~= ARGV[1] then
  return -1
end
local cur = tonumber(redis.call("get", KEYS[2]) or "0") or 0
local p = tonumber(ARGV[2]) + (tonumber(ARGV[3] or "0") or 0)
if p > cur then
  redis.call("set", KEYS[2], string.format("%d", p))
  cur = p
end
return cur
`)

var allScripts = []*script{acquireScript, acquireQueuedScript, releaseScript, durableReleaseScript, extendScript, fenceScript}
