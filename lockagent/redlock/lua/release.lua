-- release.lua (releaseBody; the scripts "release" and "release_durable" are queue.lua,
-- this file, and "local durable = false" or "true" in front).
--
-- The standard compare-and-delete: other Redlock clients release with the same
-- "get == token then del" semantics, so the holders of different libraries exclude each
-- other. Then, when the key is free and its wait queue has a live waiter, the lock is
-- handed to the first one by ticket, in the same atomic step (handto): the key is set to
-- the waiter's token, the waiter's fence is the releaser's fence + 1 (the register + 1
-- when the key was not the releaser's or it has no fence), the waiter leaves the queue,
-- and "<token> <fence> <attempt>" is published on the key's grant channel of the waiter's
-- Client (attempt: the waiter's attempt that last renewed its entry, which ran before the
-- hand-off; fence is "r" and the register as read when the register is not a number). A
-- release in the first OPEN_WINDOW ms of every HANDOFF_PERIOD ms (by the master's clock)
-- opens a window instead: the key stays free until the window's end, and the first
-- waiter is told "<token> w<ms> <attempt>": try in ms. Without a hand-off, the released
-- token is published on the key's release channel (ARGV[2]; empty: no notification) so
-- that waiters wake at once. The message (ARGV[3]) is the token, followed by the
-- handed-off mark when the releasing Client has already handed the lock to one of its
-- own waiters.
--
-- A hand-off is logged (fsynced before the waiter is told), like every acquisition,
-- unless it is prepared. A logged one gives max(register, releaser's fence) + 1, sets the
-- waiter's key with its TTL plus a slack (a quarter of the TTL, at most a second), raises
-- the register to the waiter's fence + CHAIN_FENCES - 1, and leaves a note in the queue's
-- first line (memory only): the token's tag, the fence and the key's expiry. That
-- prepares the hand-offs after it: a release, not durable, whose key the note proves to
-- be the one this master handed it with the fence it names, untouched since (same expiry
-- to the millisecond), that still has at least the next waiter's TTL left and a register
-- above that fence, hands over without a log write. The waiter's key keeps the released
-- key's expiry (PXAT of its PEXPIRETIME: the same millisecond; a user without PEXPIRETIME
-- proves no note, see expiry, and its hand-offs are all logged), its fence is the
-- releaser's + 1, at or below the register already logged, and a new note describes it. So a chain of
-- hand-offs pays one fsync per slack or per CHAIN_FENCES hand-offs, whichever ends first,
-- instead of one each.
--
-- Why an unlogged hand-off loses nothing: every write that moves a lock key's expiry
-- later is logged (acquisitions, extensions, logged hand-offs); an unlogged hand-off
-- keeps the expiry, and an unlogged release only removes the key from memory. So the
-- expiry a master restores from its AOF (after a crash, even with no restart delay) is
-- never earlier than the one in memory, and that restored key refuses every other client
-- until the new holder's key would have expired (the note, in memory, is gone: the next
-- hand-off is logged). The register is only ever written by logged writes and is never
-- below a fence handed out, and with appendfsync always the master fsyncs them before it
-- sends any later reply or notice. Why the fence is right: see "Waiting across
-- processes" in the redlock package doc. A holder that dies while others wait keeps the
-- lock blocked for up to the slack longer than its TTL.
--
-- A holder's release with ARGV[6] "drop" also takes out the entry its acquisition left
-- (ARGV[5]) on a master it did not need. The same script takes out a waiter that gives up
-- (ARGV[6] "leave": the entry of ARGV[5] goes, and a lock it was handed meanwhile is
-- released and handed on, never with a window, and always logged). "leave <tag>" is a
-- waiter stepping back from a split (isSplit): the lock goes to the waiter whose token
-- has that tag when it is in line, else to the first. A key found free (expired, or
-- released by a client that hands nothing over) is handed to the first waiter too.
--
-- "release" (durable = false, the default) keeps the DEL out of the AOF
-- (redis.set_repl(REPL_NONE)), so the master answers without an fsync (with appendfsync
-- always, one fsync is most of a round's latency). Safety never depends on a release
-- being durable: a release lost in a crash (or left out of the AOF before a clean
-- restart) only brings the key back until its own absolute expiry (PXAT), and a key that
-- is present can only refuse an acquisition, never grant one; an acquisition logged later
-- replays as SET ... PXAT without NX and overwrites it. Under the kit's supervisor a
-- crashed master stays down longer than every TTL, so the key has expired before it
-- rejoins, and its clean stops rewrite the AOF from memory first (best effort). See
-- "Releases are not logged" in the redlock package doc. A hand-off is an acquisition: its
-- SET and register write are logged (the DEL before it is not, and the logged SET replays
-- over the released key). set_repl is called through pcall: on a server that cannot
-- leave a script's writes out of the AOF (no set_repl, or Redis < 7 with
-- lua-replicate-commands off) the release still runs, logged, instead of failing.
-- "release_durable" (Options.DurableRelease) is logged: the master fsyncs the DEL before
-- it answers, as with every other Redlock client.
--
-- KEYS[1] lock key; KEYS[2] fencing register; KEYS[3] wait queue; ARGV[1] token; ARGV[2]
-- release channel or ""; ARGV[3] message; ARGV[4] the releaser's fence ("0": none);
-- ARGV[5] the caller's waiter id or ""; ARGV[6] "", "drop", "leave" or "leave <tag>".
-- Returns 0 when the key is not ours, 1 released, 2 released and handed to a waiter.

pxt = true -- a new call (queue.lua)
local s = readq(KEYS[3]) -- nil: no queue of ours, only the release runs
local read = s
local mode = ARGV[6] or "" -- callers of the bare release pass only ARGV[1-3]
local leaving = string.sub(mode, 1, 5) == "leave"
if s and (leaving or mode == "drop") then s = drop(s, ARGV[5], ARGV[7] or "") end
local v = redis.call("get", KEYS[1])
local ours = v == ARGV[1]
if v and not ours then
  if s ~= read then
    quiet()
    writeq(KEYS[3], s, nowms(), 0)
  end
  return 0
end
local at, exact, proven = 0, false, false
if ours then
  at, exact = expiry(KEYS[1])
  -- The key is the one this master's last hand-off set, with the fence the releaser
  -- names, untouched since (any other SET of it, even of the same token by an extension
  -- after it expired, gives it another expiry time).
  proven = s ~= nil and not durable and proves(note(s), KEYS[1], ARGV[1], ARGV[4] or "", at, exact)
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
    handto(KEYS, s, head, f, now, 0, proven and not leaving, at)
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
