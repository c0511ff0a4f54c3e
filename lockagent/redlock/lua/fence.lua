-- fence.lua: the fallback fence round: on a master that still holds our token, raise the
-- fence register to max(stored, proposed + reserve); never lower it. The register has no
-- TTL: it must never go backwards. reserve > 0 (a waiter of the wait queue) keeps that
-- many fences above ours for the hand-offs after us (see release.lua).
--
-- KEYS[1] lock key; KEYS[2] fence key; ARGV[1] token; ARGV[2] proposed fence; ARGV[3]
-- reserve (optional, default 0).
-- Returns the stored value after the write, or -1 when the token is not ours there.

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
