-- queue.lua: the wait queue's helpers, shared by the scripts that read or write it
-- (release.lua, acquire_queued.lua; see "Waiting across processes" in the redlock package
-- doc). The queue is a string key: a first line "<end of the open window>" (master ms,
-- 0: none), then one line per waiter, in ticket order:
-- "<waiter id> <ticket> <token> <lease end, master ms> <ttl ms> <attempt>\n", where
-- attempt numbers the waiter's attempt that last renewed the entry. It is written with
-- redis.set_repl(REPL_NONE): never logged, never fsynced, a hint only. A value of another
-- type is left alone and treated as no queue; a string that is not a queue is treated as
-- an empty one, and an unreadable line ends the queue. The scripts run on every attempt
-- and release of a contended lock, so they work on the string (plain finds and
-- substrings, the first live entry is the head) and never parse the whole queue into
-- tables. Tickets stay strings (Lua prints large numbers in exponent form) and compare as
-- numbers: a longer decimal is larger.
--
-- "releaseBody" in the comments below is the release (release.lua).

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
-- tagof names a token as the masters report it: the first 8 hex digits of its SHA-1.
local function tagof(tok) return string.sub(redis.sha1hex(tok), 1, 8) end
-- expiry is when key expires (master ms), or PTTL's -2 (no key) or -1 (no TTL), and
-- whether that is exact: the master's own PEXPIRETIME is. A user whose ACL predates the
-- library's use of it (a lock user not yet migrated), or a server without it, gets TIME +
-- PTTL, which is not (off by as long as the master was kept off the CPU between the two
-- calls, or by a frozen script clock): only an exact expiry proves a note (noted), so such
-- a user's hand-offs are all logged. The first refusal is remembered for the rest of the
-- script: one error reply per call, not one per key read. The library defines these
-- helpers once for every call, so each script that uses them starts with pxt = true.
local pxt = true -- PEXPIRETIME not refused yet
local function expiry(key, now)
  local at = pxt and redis.pcall("pexpiretime", key)
  if type(at) == "number" then return at, true end
  pxt = false
  local ttl = redis.call("pttl", key)
  if ttl < 0 then return ttl, false end
  return now + ttl, false
end
-- handed is the note a hand-off leaves: which token it set, with which fence, expiring
-- when (master ms, expiry). The note is memory only,
-- but an AOF rewrite copies it into the AOF's base like any key, and a restart brings it
-- back while the writes after the rewrite that cleared it in memory (all unlogged) are
-- lost: a note is never trusted for what it says, only for a key it still describes.
-- noted returns the note's fence when the key holds tok with exactly the note's expiry
-- (read exactly: at, exact from the caller, or expiry here), else nil: any other SET of
-- the key (even of the same token, by an extension or by the waiter's own attempt after
-- the handed key expired) gives it an expiry later by at least its TTL, and a master keeps
-- and restores expiries as absolute times (PXAT). A note whose expiry was not read exactly
-- is never later than the key's: it matches no later key either.
local function handed(key, tok, g, now)
  if not string.match(g, "^%d+$") then return "" end
  return tagof(tok) .. ":" .. g .. ":" .. string.format("%d", (expiry(key, now)))
end
local function noted(n, key, tok, now, at, exact)
  local tag, f, nat = string.match(n, "^(%x+):(%d+):(%d+)$")
  if tag == nil or tag ~= tagof(tok) then return nil end
  if at == nil then at, exact = expiry(key, now) end
  if not exact or at <= 0 or tonumber(nat) ~= at then return nil end
  return f
end
-- proves says whether the note describes the key as the hand-off to tok with fence g.
local function proves(n, key, tok, g, at, exact) return noted(n, key, tok, 0, at, exact) == g end
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
-- rewrite returns the queue s with the header of window w and note n, without the line of
-- waiter id (nil or absent: no line goes). The server hashes every string a script makes,
-- whole, so each copy of the queue costs as much as the queue is long: the usual cases (no
-- line goes, or the first one) make two strings (the rest of the queue, then the new
-- queue), where taking the line out and then changing the header made four.
local function rewrite(s, w, n, id)
  local e = id and find(s, id)
  if e and e.from ~= body(s) then
    s, e = cut(s, e), nil
  end
  return header(w, n) .. string.sub(s, e and e.to or body(s))
end
local function setwindow(s, w) return rewrite(s, w, note(s)) end
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
-- lastline is where the last line of s starts (nil: s is one line), found in the tail of
-- s (from its start when the tail holds no line break) without copying the queue.
local function lastline(s)
  local from = #s > 512 and #s - 512 or 1
  while true do
    local a, q = nil, string.find(s, "\n", from, true)
    while q and q < #s do
      a, q = q, string.find(s, "\n", q + 1, true)
    end
    if a or from == 1 then return a and a + 1 end
    from = 1
  end
end
-- put places a waiter's line by ticket (a renewal keeps its place). A newcomer's ticket is
-- usually the latest: when the last line's ticket is not later, the line goes at the end
-- without walking the queue (the walk would end there too: lines are in ticket order).
local function put(s, id, tk, tok, lease, ttl, n)
  local line = id .. " " .. tk .. " " .. tok .. " " .. lease .. " " .. ttl .. " " .. n .. "\n"
  local old = find(s, id)
  if old and old.tk == tk then
    return string.sub(s, 1, old.from - 1) .. line .. string.sub(s, old.to)
  end
  if old then s = cut(s, old) end
  local r = lastline(s)
  local last = r and string.match(s, "^%S+ (%d+) %S+ %d+ %d+ %d+\n$", r)
  if last and not later(last, tk) then return s .. line end
  local p = body(s)
  while true do
    local t = string.match(s, "^%S+ (%d+) ", p)
    local q = t and not later(t, tk) and string.find(s, "\n", p, true)
    if not q then break end -- a later ticket, or an unreadable line (it ends the queue)
    p = q + 1
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
-- one this master handed it with fence f, untouched since; at is its expiry (master ms).
local function slack(ttl) return math.min(math.floor(tonumber(ttl) / 4), 1000) end
local function handto(keys, s, e, f, now, keep, proven, at)
  local reg = redis.call("get", keys[2]) or "0"
  local g = "r" .. reg
  local numeric = string.match(reg, "^%d+$") and tonumber(reg) < 9007199254740992 - CHAIN_FENCES
  if proven and numeric and tonumber(reg) > f and at - now >= tonumber(e.ttl) then
    -- Unlogged (see releaseBody): the key keeps the released key's expiry to the
    -- millisecond (PXAT), the fence is the releaser's plus one, at or below the register.
    quiet()
    g = string.format("%d", f + 1)
    redis.call("set", keys[1], e.tok, "PXAT", string.format("%d", at))
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
  writeq(keys[3], rewrite(s, window(s), handed(keys[1], e.tok, g, now), e.id), now, keep)
  tell(keys[1], e, g)
end
