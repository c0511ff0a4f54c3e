-- acquire_queued.lua (after queue.lua): an attempt by a waiter of the wait queue
-- (Acquire after its first attempt was refused). Where the key is free and no live waiter
-- with an earlier ticket is in line (nor a window open, see release.lua) it is
-- acquire.lua (SET key token PX ttl, the fence raised to the proposal where the register
-- held less) and the waiter leaves the queue; where it is free but an earlier waiter is
-- in line, it is handed to that waiter as a release would (handto) and the caller queues;
-- where it is already the waiter's (handed over by a release) it says so; where another
-- token holds it, the waiter joins the queue with its ticket, or renews its lease
-- (unlogged), and the holder is named by the first 8 hex digits of the SHA-1 of its token
-- (waiters holding a minority each can tell a split from a holder).
--
-- KEYS[1] lock key; KEYS[2] fencing register; KEYS[3] wait queue; ARGV[1] token; ARGV[2]
-- ttl in ms; ARGV[3] proposed fence ("0": no fencing); ARGV[4] waiter id ("<client>/<n>");
-- ARGV[5] ticket (decimal); ARGV[6] lease in ms; ARGV[7] attempt number (decimal).
-- Returns {1, register before} set now; {2, register[, fence handed]} already ours (the
-- fence from the hand-off's note, when there is one for our token); {0, PTTL, register,
-- holder} held by another token (also when it was just handed to an earlier waiter);
-- {0, ms left, register, "window"} in a window. A queue key holding something else is
-- refused with an error reply starting FOREIGN_QUEUE.

pxt = true -- a new call (queue.lua)
local reg = redis.call("get", KEYS[2]) or "0"
local v = redis.call("get", KEYS[1])
local s, foreign = readq(KEYS[3])
strict = true -- a page that is not one is refused (queue.lua)
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
    s = put(s, ARGV[4], ARGV[5], ARGV[1], string.format("%d", now + leasems), ARGV[2], ARGV[7], ARGV[7] == "1", leasems)
    handto(KEYS, s, head, 0, now, leasems, false, 0)
    return {0, tonumber(head.ttl), reg, tagof(head.tok)}
  end
end
if not v then
  loud() -- logged, whatever the queue's writes above were
  redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2])
  if ARGV[3] ~= "0" and string.match(reg, "^%d+$") and tonumber(reg) < tonumber(ARGV[3]) then
    redis.call("set", KEYS[2], ARGV[3])
  end
  -- The window is over (a window refuses above), and the note of the last hand-off no
  -- longer describes the key (it may name this very token, handed earlier; noted tells
  -- even when a restart brings the note back).
  local left = rewrite(drop(s, ARGV[4], ""), 0, "")
  if left ~= s then
    quiet()
    writeq(KEYS[3], left, nowms(), 0)
  end
  return {1, reg}
end
quiet()
local now = nowms()
writeq(KEYS[3], put(s, ARGV[4], ARGV[5], ARGV[1], string.format("%d", now + leasems), ARGV[2], ARGV[7], ARGV[7] == "1", leasems), now, leasems)
return {0, redis.call("pttl", KEYS[1]), reg, tagof(v)}
