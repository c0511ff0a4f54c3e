package redlock

import (
	"crypto/sha1"
	"encoding/hex"
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

// releaseBody is the standard compare-and-delete: other Redlock
// clients release with the same "get == token then del" semantics, so the holders of
// different libraries exclude each other. It additionally publishes the released token on
// the key's release channel (ARGV[2]; empty: no notification) so that waiters wake at once.
// The message (ARGV[3]) is the token, followed by handedOffMark when the releasing Client
// has already handed the lock to one of its own waiters (other processes then keep
// waiting instead of colliding with it).
//
// KEYS[1] lock key; ARGV[1] token; ARGV[2] release channel or ""; ARGV[3] message.
const releaseBody = `
if redis.call("get", KEYS[1]) == ARGV[1] then
  redis.call("del", KEYS[1])
  if ARGV[2] ~= "" then
    redis.call("publish", ARGV[2], ARGV[3])
  end
  return 1
end
return 0
`

// releaseScript is the release without durability (the default): the same
// compare-and-delete, but redis.set_repl(REPL_NONE) keeps the DEL out of the AOF, so the
// master answers without an fsync (with appendfsync always, one fsync is most of a
// round's latency). Safety never depends on a release being durable: a release lost in a
// crash (or left out of the AOF before a clean restart) only brings the key back until its
// own absolute expiry (PXAT), and a key that is present can only refuse an acquisition,
// never grant one; an acquisition logged later replays as SET ... PXAT without NX and
// overwrites it. Under the kit's supervisor a crashed master stays down longer than every
// TTL, so the key has expired before it rejoins, and its clean stops rewrite the AOF from
// memory first (best effort). See "Releases are not logged" in doc.go.
//
// set_repl is called through pcall: on a server that cannot leave a script's writes out
// of the AOF (no set_repl, or Redis < 7 with lua-replicate-commands off) the release still
// runs, logged, instead of failing.
var releaseScript = newScript("release", "pcall(redis.set_repl, redis.REPL_NONE)"+releaseBody, allowOOM)

// durableReleaseScript is the release logged to the AOF (Options.DurableRelease): the
// master fsyncs the DEL before it answers, as with every other Redlock client.
var durableReleaseScript = newScript("release_durable", releaseBody, allowOOM)

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
// the fence register to max(stored, proposed); never lower it. The register has no
// TTL: it must never go backwards.
//
// KEYS[1] lock key; KEYS[2] fence key; ARGV[1] token; ARGV[2] proposed fence.
// Returns the stored value after the write, or -1 when the token is not ours there.
var fenceScript = newScript("fence", `
if redis.call("get", KEYS[1]) ~= ARGV[1] then
  return -1
end
local cur = tonumber(redis.call("get", KEYS[2]) or "0") or 0
local p = tonumber(ARGV[2])
if p > cur then
  redis.call("set", KEYS[2], ARGV[2])
  cur = p
end
return cur
`)

var allScripts = []*script{acquireScript, releaseScript, durableReleaseScript, extendScript, fenceScript}
