#!lua name=redlock
-- redlock-kit function library, version 9b0b3ea116f1: the Redlock scripts of
-- github.com/redlock-kit/redlock-kit/lockagent/redlock. The admin loads it (FUNCTION LOAD REPLACE);
-- lock users run it with FCALL only.

redis.register_function{function_name='redlock_acquire_2f5b7e1ca8a4', flags={}, callback=function(KEYS, ARGV)
local reg = redis.call("get", KEYS[2]) or "0"
if not redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return {0, redis.call("pttl", KEYS[1]), reg}
end
if string.match(reg, "^%d+$") and tonumber(reg) < tonumber(ARGV[3]) then
  redis.call("set", KEYS[2], ARGV[3])
end
return {1, reg}
end}

redis.register_function{function_name='redlock_acquire_queued_bae0d45636f4', flags={}, callback=function(KEYS, ARGV)
local function quiet() pcall(redis.set_repl, redis.REPL_NONE) end
local function loud() pcall(redis.set_repl, redis.REPL_ALL) end
local function nowms()
  local t = redis.call("time")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function readq(k)
  local ok, s = pcall(redis.call, "get", k)
  if not ok then return nil end
  if not s or not string.find(s, "^%d+ ?[%x:%d]*\n") then return "0\n" end
  return s
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
-- when (master ms, from TIME and PTTL: exact to a millisecond). proves says whether the
-- key is still the one a note describes: any other SET of it (even of the same token, by
-- an extension after it expired) gives it an expiry later by at least its TTL.
local function handed(key, tok, g, now)
  if not string.match(g, "^%d+$") then return "" end
  return tagof(tok) .. ":" .. g .. ":" .. string.format("%d", now + redis.call("pttl", key))
end
local function proves(n, key, tok, g, now)
  local tag, f, at = string.match(n, "^(%x+):(%d+):(%d+)$")
  local ttl = redis.call("pttl", key)
  return tag ~= nil and ttl > 0 and tag == tagof(tok) and f == g and
    math.abs(tonumber(at) - (now + ttl)) <= 1
end
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
  redis.call("publish", key .. ":granted:" .. client, e.tok .. " " .. what .. " " .. e.n)
end
-- A hand-off that is logged gives the new holder's key a slack beyond its TTL (a quarter
-- of it, at most a second) and raises the register 100 - 1 past the new
-- holder's fence, so that the next hand-offs can go without a log write (see releaseBody).
-- proven is true when the release proved (by the note) that the releaser's key is the
-- one this master handed it with fence f, untouched since; left is its PTTL.
local function slack(ttl) return math.min(math.floor(tonumber(ttl) / 4), 1000) end
local function handto(keys, s, e, f, now, keep, proven, left)
  local reg = redis.call("get", keys[2]) or "0"
  local g = "r" .. reg
  local numeric = string.match(reg, "^%d+$") and tonumber(reg) < 9007199254740992 - 100
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
      redis.call("set", keys[2], string.format("%d", n + 100 - 1))
    end
  end
  quiet()
  writeq(keys[3], setnote(drop(s, e.id), handed(keys[1], e.tok, g, now)), now, keep)
  tell(keys[1], e, g)
end

local reg = redis.call("get", KEYS[2]) or "0"
local v = redis.call("get", KEYS[1])
local s = readq(KEYS[3])
if v == ARGV[1] then
  -- Handed to us: the fence the hand-off gave, from its note, when it is ours.
  local tag, g = string.match(s and note(s) or "", "^(%x+):(%d+):")
  if tag and tag == tagof(ARGV[1]) then return {2, reg, g} end
  return {2, reg}
end
local leasems = tonumber(ARGV[6])
if not v and s then
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
  if s then
    -- The window is over (a window refuses above), and the note of the last hand-off no
    -- longer describes the key (it may name this very token, handed earlier).
    local left = setnote(setwindow(drop(s, ARGV[4]), 0), "")
    if left ~= s then
      quiet()
      writeq(KEYS[3], left, nowms(), 0)
    end
  end
  return {1, reg}
end
if s then
  quiet()
  local now = nowms()
  writeq(KEYS[3], put(s, ARGV[4], ARGV[5], ARGV[1], string.format("%d", now + leasems), ARGV[2], ARGV[7]), now, leasems)
end
return {0, redis.call("pttl", KEYS[1]), reg, tagof(v)}
end}

redis.register_function{function_name='redlock_release_8fd0df8c8e5d', flags={'allow-oom'}, callback=function(KEYS, ARGV)
local durable = false
local function quiet() pcall(redis.set_repl, redis.REPL_NONE) end
local function loud() pcall(redis.set_repl, redis.REPL_ALL) end
local function nowms()
  local t = redis.call("time")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function readq(k)
  local ok, s = pcall(redis.call, "get", k)
  if not ok then return nil end
  if not s or not string.find(s, "^%d+ ?[%x:%d]*\n") then return "0\n" end
  return s
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
-- when (master ms, from TIME and PTTL: exact to a millisecond). proves says whether the
-- key is still the one a note describes: any other SET of it (even of the same token, by
-- an extension after it expired) gives it an expiry later by at least its TTL.
local function handed(key, tok, g, now)
  if not string.match(g, "^%d+$") then return "" end
  return tagof(tok) .. ":" .. g .. ":" .. string.format("%d", now + redis.call("pttl", key))
end
local function proves(n, key, tok, g, now)
  local tag, f, at = string.match(n, "^(%x+):(%d+):(%d+)$")
  local ttl = redis.call("pttl", key)
  return tag ~= nil and ttl > 0 and tag == tagof(tok) and f == g and
    math.abs(tonumber(at) - (now + ttl)) <= 1
end
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
  redis.call("publish", key .. ":granted:" .. client, e.tok .. " " .. what .. " " .. e.n)
end
-- A hand-off that is logged gives the new holder's key a slack beyond its TTL (a quarter
-- of it, at most a second) and raises the register 100 - 1 past the new
-- holder's fence, so that the next hand-offs can go without a log write (see releaseBody).
-- proven is true when the release proved (by the note) that the releaser's key is the
-- one this master handed it with fence f, untouched since; left is its PTTL.
local function slack(ttl) return math.min(math.floor(tonumber(ttl) / 4), 1000) end
local function handto(keys, s, e, f, now, keep, proven, left)
  local reg = redis.call("get", keys[2]) or "0"
  local g = "r" .. reg
  local numeric = string.match(reg, "^%d+$") and tonumber(reg) < 9007199254740992 - 100
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
      redis.call("set", keys[2], string.format("%d", n + 100 - 1))
    end
  end
  quiet()
  writeq(keys[3], setnote(drop(s, e.id), handed(keys[1], e.tok, g, now)), now, keep)
  tell(keys[1], e, g)
end

local s = readq(KEYS[3])
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
    if ours and not leaving and now % 100 < 5 then
      -- A window: the key stays free until its end, and this package's queued attempts
      -- do not take it, so that a client that only polls (another Redlock library) gets
      -- its chance too. Windows are slots of the masters' clocks, so the masters open
      -- theirs together and such a client can win a majority. Only the first waiter is
      -- told, to try when the window closes; nobody else wakes.
      local w = now - now % 100 + 5
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
end}

redis.register_function{function_name='redlock_release_durable_166eb35119e6', flags={'allow-oom'}, callback=function(KEYS, ARGV)
local durable = true
local function quiet() pcall(redis.set_repl, redis.REPL_NONE) end
local function loud() pcall(redis.set_repl, redis.REPL_ALL) end
local function nowms()
  local t = redis.call("time")
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function readq(k)
  local ok, s = pcall(redis.call, "get", k)
  if not ok then return nil end
  if not s or not string.find(s, "^%d+ ?[%x:%d]*\n") then return "0\n" end
  return s
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
-- when (master ms, from TIME and PTTL: exact to a millisecond). proves says whether the
-- key is still the one a note describes: any other SET of it (even of the same token, by
-- an extension after it expired) gives it an expiry later by at least its TTL.
local function handed(key, tok, g, now)
  if not string.match(g, "^%d+$") then return "" end
  return tagof(tok) .. ":" .. g .. ":" .. string.format("%d", now + redis.call("pttl", key))
end
local function proves(n, key, tok, g, now)
  local tag, f, at = string.match(n, "^(%x+):(%d+):(%d+)$")
  local ttl = redis.call("pttl", key)
  return tag ~= nil and ttl > 0 and tag == tagof(tok) and f == g and
    math.abs(tonumber(at) - (now + ttl)) <= 1
end
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
  redis.call("publish", key .. ":granted:" .. client, e.tok .. " " .. what .. " " .. e.n)
end
-- A hand-off that is logged gives the new holder's key a slack beyond its TTL (a quarter
-- of it, at most a second) and raises the register 100 - 1 past the new
-- holder's fence, so that the next hand-offs can go without a log write (see releaseBody).
-- proven is true when the release proved (by the note) that the releaser's key is the
-- one this master handed it with fence f, untouched since; left is its PTTL.
local function slack(ttl) return math.min(math.floor(tonumber(ttl) / 4), 1000) end
local function handto(keys, s, e, f, now, keep, proven, left)
  local reg = redis.call("get", keys[2]) or "0"
  local g = "r" .. reg
  local numeric = string.match(reg, "^%d+$") and tonumber(reg) < 9007199254740992 - 100
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
      redis.call("set", keys[2], string.format("%d", n + 100 - 1))
    end
  end
  quiet()
  writeq(keys[3], setnote(drop(s, e.id), handed(keys[1], e.tok, g, now)), now, keep)
  tell(keys[1], e, g)
end

local s = readq(KEYS[3])
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
    if ours and not leaving and now % 100 < 5 then
      -- A window: the key stays free until its end, and this package's queued attempts
      -- do not take it, so that a client that only polls (another Redlock library) gets
      -- its chance too. Windows are slots of the masters' clocks, so the masters open
      -- theirs together and such a client can win a majority. Only the first waiter is
      -- told, to try when the window closes; nobody else wakes.
      local w = now - now % 100 + 5
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
end}

redis.register_function{function_name='redlock_extend_9e166af34557', flags={}, callback=function(KEYS, ARGV)
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
end}

redis.register_function{function_name='redlock_fence_072764e3fe70', flags={}, callback=function(KEYS, ARGV)
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
end}
