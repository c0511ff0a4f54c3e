-- queue.lua: the wait queue's helpers, shared by the scripts that read or write it
-- (release.lua, acquire_queued.lua; see "Waiting across processes" in the redlock package
-- doc). The queue is a string key, the front: a first line "<end of the open window>"
-- (master ms, 0: none)[ <note>][ +<first page>-<last page>], then one line per waiter, in
-- ticket order: "<waiter id> <ticket> <token> <lease end, master ms> <ttl ms> <attempt>\n",
-- where attempt numbers the waiter's attempt that last renewed the entry; the order goes
-- on in the pages (see readpage). It is written with redis.set_repl(REPL_NONE): never
-- logged, never fsynced, a hint only. A value of another type is left alone and treated
-- as no queue; a string that is not a queue is treated as an empty one, and an unreadable line ends the queue. The
-- scripts run on every attempt and release of a contended lock, so they work on the
-- strings (plain finds and substrings, the first live entry is the head), never parse a
-- whole queue into tables, and never read all of a long one: Redis hashes every string a
-- script makes, so a copy costs as much as it is long. Tickets stay strings (Lua prints
-- large numbers in exponent form) and compare as numbers: a longer decimal is larger.
--
-- "releaseBody" in the comments below is the release (release.lua).

local function quiet() pcall(redis.set_repl, redis.REPL_NONE) end
local function loud() pcall(redis.set_repl, redis.REPL_ALL) end
local function nowms()
  local t = redis.call("time")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Per call (readq resets them): the queue's key, the front as read, and the pages pulled
-- into the front (pull).
local qk, qread, gone, strict = "", false, {}, false
local ws, wv, ns, nv, ps, plo, phi, bs, bv -- the header's helpers' last string and answer (below)
-- readq returns the queue at k ("0\n" when there is none) and whether k holds something
-- else: a value that is not a queue (another type, or a string not in the queue's format)
-- belongs to someone else and is never read as a queue nor overwritten.
local function readq(k)
  qk, qread, gone, strict = k, false, {}, false
  local ok, s = pcall(redis.call, "get", k)
  if not ok then return nil, true end
  if not s then return "0\n", false end
  qread = s
  local w = string.match(s, "^(%d+) ?[%x:%d]* ?%+?%d*%-?%d*\n")
  if not w then return nil, true end
  ws, wv = s, tonumber(w) -- window(s), read with the format
  return s, false
end
-- The header's fields (window, note, pages) and where the lines start (body). A script asks
-- the same string for them several times in one call, and each match costs about as much
-- as a short redis.call, so each helper keeps the last string it read and its answer (ws,
-- wv: window's; readq sets them too): a string is a value (equal strings, equal answers),
-- so the answer kept is the one a new match would give, in this call or a later one.
local function window(s)
  if s ~= ws then ws, wv = s, tonumber(string.match(s, "^(%d+)")) end
  return wv
end
local function note(s)
  if s ~= ns then ns, nv = s, string.match(s, "^%d+ ([%x:%d]+)[ \n]") or "" end
  return nv
end
local function pages(s)
  if s ~= ps then
    local lo, hi = string.match(s, "^[^\n]- %+(%d+)%-(%d+)\n")
    ps, plo, phi = s, tonumber(lo), tonumber(hi)
  end
  return plo, phi
end
local function body(s)
  if s ~= bs then bs, bv = s, string.find(s, "\n", 1, true) + 1 end
  return bv
end
local function empty(s) return body(s) > #s and not pages(s) end
local function header(w, n, lo, hi)
  local h = string.format("%d", w)
  if n ~= "" then h = h .. " " .. n end
  if lo and lo <= hi then h = h .. string.format(" +%d-%d", lo, hi) end
  return h .. "\n"
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
  now = now or nowms() -- before PTTL: never later than the key's expiry
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
local function handed(key, tok, g, now, at)
  if not string.match(g, "^%d+$") then return "" end
  return tagof(tok) .. ":" .. g .. ":" .. string.format("%d", at or (expiry(key, now)))
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
-- entry reads the line of s that starts at p: its fields, where it starts and where the next
-- begins (from, to), and s itself (the string those positions are in).
local function entry(s, p)
  local id, tk, tok, lease, ttl, n, e = string.match(s, "^(%S+) (%d+) (%S+) (%d+) (%d+) (%d+)\n()", p)
  if id then return {id = id, tk = tk, tok = tok, lease = tonumber(lease), ttl = ttl, n = n, from = p, to = e, s = s} end
end
local function cut(s, e) return string.sub(s, 1, e.from - 1) .. string.sub(s, e.to) end
local function later(a, b) return #a > #b or (#a == #b and a > b) end
local function find(s, id)
  local a = string.find(s, "\n" .. id .. " ", 1, true)
  if a then return entry(s, a + 1) end
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
  return header(w, n, pages(s)) .. string.sub(s, e and e.to or body(s))
end
local function setwindow(s, w) return rewrite(s, w, note(s)) end
-- Pages: the lines after the front's (ticket order goes on across them) live in pages,
-- "<queue key>:<n>" for n from lo to hi, the header's "+<lo>-<hi>", so that no script
-- copies the whole queue: a hand-off reads the front, a newcomer the last page. A page is
-- a queue with an empty header ("0\n"); a missing one (expired) has no lines. Pages are
-- written like the front (unlogged) and outlive their lines' leases. readpage returns page
-- p, nil when it holds something else (never read as a page nor overwritten: a release
-- takes it as the queue's end, a waiter is refused).
local function readpage(p)
  local ok, t = pcall(redis.call, "get", qk .. ":" .. p)
  if ok and not t then return "0\n" end
  if ok and string.find(t, "^0\n") then return t end
end
local function page(p)
  return readpage(p) or error({err = FOREIGN_QUEUE .. " " .. qk .. ":" .. p .. " holds a value that is not a wait queue page"})
end
local function writepage(p, t, keep)
  local k = qk .. ":" .. p
  for i = #gone, 1, -1 do
    if gone[i] == p then table.remove(gone, i) end -- pulled, and a page again
  end
  quiet()
  if body(t) > #t then
    redis.call("del", k)
  elseif keep <= 0 then
    redis.call("set", k, t, "KEEPTTL")
  else
    redis.call("set", k, t, "PX", string.format("%d", math.max(redis.call("pttl", k), keep)))
  end
end
-- pull returns the front s with the lines of its first page appended (nil: no page, or a
-- page that is not one, which a waiter's attempt refuses: strict); the page key goes when
-- the front is written (writeq).
local function pull(s)
  local lo, hi = pages(s)
  local t = lo and (strict and page(lo) or readpage(lo))
  if not t then return nil end
  gone[#gone + 1] = lo
  if lo == hi then lo = nil end
  return header(window(s), note(s), lo and lo + 1, hi) .. string.sub(s, body(s)) .. string.sub(t, 3)
end
-- first returns the first live entry of s that is not skip's, pulling pages while the
-- front has none, and s as it then is (the expired lines before it cut).
local function first(s, now, skip)
  local p = body(s)
  while true do
    local e = entry(s, p)
    if not e then
      local t = p > #s and pull(s)
      if not t then return nil, string.sub(s, 1, p - 1) end
      p, s = p - body(s) + body(t), t
    elseif e.lease < now then
      s = cut(s, e)
    elseif e.id ~= skip then
      return e, s
    else
      p = e.to
    end
  end
end
-- bytag returns the first live entry whose token has tag: in the front, else in a page
-- (e.page, e.pt: its number and content), read in place.
local function bytag(s, now, tag)
  local lo, hi = pages(s)
  local t, p = s, nil
  while t do
    local i = body(t)
    while true do
      local e = entry(t, i)
      if not e then break end
      if e.lease >= now and tagof(e.tok) == tag then
        if p then e.page, e.pt = p, t end
        return e
      end
      i = e.to
    end
    p = p and p + 1 or lo
    t = p and p <= hi and readpage(p)
  end
end
-- taken returns the front s with header (w, n), without the line of entry e, which leaves
-- its page when it is in one (bytag).
local function taken(s, e, w, n)
  if e.page then writepage(e.page, cut(e.pt, e), 0) end
  if not e.page and e.s == s and e.from == body(s) then
    -- e is the first line of s itself (a hand-off's usual case: s is the string e was read
    -- from, so its positions hold): the line rewrite would find for e.id, since no line
    -- comes before it.
    return header(w, n, pages(s)) .. string.sub(s, e.to)
  end
  return rewrite(s, w, n, e.id)
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
-- lastticket is the ticket of the last line of s (a front or a page), nil when none.
local function lastticket(s)
  local r = lastline(s)
  return r and string.match(s, "^%S+ (%d+) %S+ %d+ %d+ %d+\n$", r)
end
-- seek returns the first of pages lo..hi whose last line's ticket is not earlier than tk
-- (hi when none is), by bisection, reading pages with read (page, or readpage: a page that
-- is not one then gives nil); from an empty page on, it gives up and returns where the
-- search stands.
local function seek(lo, hi, tk, read)
  while lo < hi do
    local m = math.floor((lo + hi) / 2)
    local t = read(m)
    if not t then return nil end
    local l = lastticket(t)
    if not l then return lo end
    if later(tk, l) then lo = m + 1 else hi = m end
  end
  return lo
end
-- inpages returns the page that holds waiter id's line (its number, content and the
-- line's entry), nil when none does, reading pages with read (a nil page ends the search):
-- where ticket tk puts it ("": every page), then, when again is set, in every page (a line
-- of another ticket: a waiter back with a new one).
local function inpages(lo, hi, id, tk, read, again)
  local from = tk ~= "" and seek(lo, hi, tk, read) or lo
  repeat
    for p = from, hi do
      local t = read(p)
      if not t then return end
      local e = find(t, id)
      if e then return p, t, e end
      local f = tk ~= "" and string.match(t, "^%S+ (%d+) ", 3)
      if f and later(f, tk) then break end
    end
    from, again = again and tk ~= "" and lo, false
    tk = ""
  until not from
end
-- drop returns the front s without the line of waiter id, taken out of its page when it is
-- in one; tk, the waiter's ticket ("": not known), tells which pages it can be in. A page
-- that is not one ends the search (never an error: a release calls drop).
local function drop(s, id, tk)
  local e = find(s, id)
  if e then return cut(s, e) end
  local lo, hi = pages(s)
  local last = lo and tk ~= "" and lastticket(s)
  if not lo or last and later(last, tk) then return s end
  local p, t
  p, t, e = inpages(lo, hi, id, tk, readpage)
  if e then writepage(p, cut(t, e), 0) end
  return s
end
-- placed returns s (a front or a page) with line placed by ticket tk; last is the ticket
-- of s's last line (lastticket). A newcomer's ticket is usually the latest: when the last
-- line's ticket is not later, the line goes at the end without walking s (the walk would
-- end there too: lines are in ticket order).
local function placed(s, line, tk, last)
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
-- put places a waiter's line by ticket (a renewal keeps its place) and returns the front.
-- new: the waiter's first attempt here (its line is in no page: none are read for it). A
-- line after every line goes to the front while it has room, then to the last page, or to
-- a new one when that is full; an earlier one goes where its ticket puts it. keep: the
-- lease (ms), which the page written outlives.
-- The front and each page take lines at their end up to lua.QueueBytes.
local function put(s, id, tk, tok, lease, ttl, n, new, keep)
  local line = id .. " " .. tk .. " " .. tok .. " " .. lease .. " " .. ttl .. " " .. n .. "\n"
  local old = find(s, id)
  if old and old.tk == tk then
    return string.sub(s, 1, old.from - 1) .. line .. string.sub(s, old.to)
  end
  if old then s = cut(s, old) end
  local lo, hi = pages(s)
  if lo and not old and not new then
    local p, t, e = inpages(lo, hi, id, tk, page, true)
    if e and e.tk == tk then
      writepage(p, string.sub(t, 1, e.from - 1) .. line .. string.sub(t, e.to), keep)
      return s
    end
    if e then writepage(p, cut(t, e), 0) end
  end
  local last = lastticket(s)
  if last and later(last, tk) or not lo and #s + #line <= QUEUE_BYTES then
    return placed(s, line, tk, last)
  end
  if not lo then
    page(1) -- refused when it is someone else's
    writepage(1, "0\n" .. line, keep)
    return header(window(s), note(s), 1, 1) .. string.sub(s, body(s))
  end
  -- Into the first page whose last line is later than tk, else the last page, or a new
  -- one after it when that is full.
  local at, t
  for p = hi, lo, -1 do
    local u = page(p)
    local l = lastticket(u)
    if p == hi then t, last = u, l end
    if l and not later(l, tk) then break end
    if l then at, t, last = p, u, l end
  end
  at = at or hi
  if at == hi and #t + #line > QUEUE_BYTES and not (last and later(last, tk)) then
    page(hi + 1) -- refused when it is someone else's
    writepage(hi + 1, "0\n" .. line, keep)
    return header(window(s), note(s), lo, hi + 1) .. string.sub(s, body(s))
  end
  writepage(at, placed(t, line, tk, last), keep)
  return s
end
-- writeq writes the front s (the pages pulled into it go), or deletes it when nothing is
-- left, keeping it at least keep ms (the lease of a line just written; 0: as long as it
-- was kept): an unchanged front only has its expiry moved later (PEXPIRE GT).
local function writeq(k, s, now, keep)
  for _, p in ipairs(gone) do redis.call("del", k .. ":" .. p) end
  gone = {}
  if note(s) == "" and empty(s) and window(s) <= now then -- a hand-off's front has a note
    redis.call("del", k)
    return
  end
  if s == qread then
    if keep > 0 then redis.call("pexpire", k, string.format("%d", keep), "GT") end
    return
  end
  if qread and keep <= 0 then
    redis.call("set", k, s, "KEEPTTL")
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
  local g, set = "r" .. reg, nil
  local numeric = string.match(reg, "^%d+$") and tonumber(reg) < 9007199254740992 - CHAIN_FENCES
  if proven and numeric and tonumber(reg) > f and at - now >= tonumber(e.ttl) then
    -- Unlogged (see releaseBody): the key keeps the released key's expiry to the
    -- millisecond (PXAT), the fence is the releaser's plus one, at or below the register.
    quiet()
    g, set = string.format("%d", f + 1), at
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
  writeq(keys[3], taken(s, e, window(s), handed(keys[1], e.tok, g, now, set)), now, keep)
  tell(keys[1], e, g)
end
