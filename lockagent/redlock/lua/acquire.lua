-- acquire.lua: the acquisition on one master when fencing is on: the standard
-- SET key token NX PX ttl (the same key, value and semantics as every other Redlock
-- client, so holders of other libraries still exclude ours) and, in the same atomic step,
-- the optimistic fence write: where the SET succeeded and the fencing register holds less
-- than the proposed fence, the register is raised to it. The register is read before the
-- SET so that a register of the wrong type fails the script before it wrote anything; the
-- script is atomic, so the order is invisible to other clients.
--
-- KEYS[1] lock key; KEYS[2] fence key; ARGV[1] token; ARGV[2] ttl in ms; ARGV[3] proposed
-- fence (decimal).
-- Returns {1, register before the write} when the key was set; {0, PTTL of the key,
-- register} when it is held. The register comes back as the stored string ("0" when
-- absent); a register that is not a decimal number is reported and left alone.

local reg = redis.call("get", KEYS[2]) or "0"
if not redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return {0, redis.call("pttl", KEYS[1]), reg}
end
if string.match(reg, "^%d+$") and tonumber(reg) < tonumber(ARGV[3]) then
  redis.call("set", KEYS[2], ARGV[3])
end
return {1, reg}
