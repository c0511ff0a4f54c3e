-- extend.lua: extends the key when it is still ours, and sets it again (NX) on a master
-- that lost it (restart after the delay, eviction by an operator) so that a long-held
-- lock does not drift down to a bare majority. It never touches another holder's key.
--
-- KEYS[1] lock key; ARGV[1] token; ARGV[2] ttl in ms.
-- Returns 1 extended, 2 set again, 0 held by another token.

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
