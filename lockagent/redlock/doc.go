// Package redlock is a Redlock client over N independent Redis masters (go-redis/v9),
// with fencing tokens, release notifications, re-entrant holds and auto-renewal.
//
// # Usage
//
//	locker, err := redlock.Open("client.json", redlock.Options{}) // the modules' client_config
//	lock, err := locker.Acquire(ctx, "jobs:nightly", 10*time.Second, redlock.WithAutoRenew())
//	if err != nil { ... }                 // *TakenError, *UnavailableError, ctx's error, ...
//	defer lock.Release(ctx)
//	doWork(lock.Context(), lock.Fence())  // stop when the context ends; fence every write
//
// Open reads the client file of a kit deployment (endpoints, lock user, CA, key prefix,
// max TTL, quorum) and makes one go-redis client per master with MasterOptions; New takes
// go-redis clients you built (one per independent master, an odd number >= 3).
//
// A Client is safe for concurrent use by any number of goroutines; so is a Lock. Each
// Client runs one batcher goroutine per master that sends whatever operations are waiting
// as one pipeline (a lone operation goes out at once), so concurrent lockers share round
// trips and, under appendfsync always, fsyncs.
//
// # The algorithm
//
// Acquire: take the monotonic time T1; send SET key token NX PX ttl to every master at
// once (token: 20 bytes from crypto/rand, base64url; with fencing on, the SET runs inside
// the acquire script, see Fencing tokens); wait for each master at most the node timeout
// (Options.NodeTimeout, by default clamp(ttl/200, 10ms, 50ms)). The lock is acquired
// when a majority (N/2+1) said OK and the validity
//
//	validity = ttl - (now - T1) - (ttl*DriftFactor + 2ms)
//
// is still positive once the fence is known (after the fencing round, when one is
// needed); Lock.Deadline is T1 + ttl - drift. The call
// returns as soon as a majority answered; the other replies are still collected in the
// background (for Hooks). On failure, or when ctx ends, the token is released on every
// master, including the ones that timed out (a reply can be lost after the key was set),
// with a bound (Options.CleanupTimeout) that the caller's cancellation does not cut short.
//
// The node timeout is enforced by the library, whatever the go-redis client options:
// callers wait for their own reply with their own deadline, never for a pipeline, so a
// stopped (SIGSTOP) master costs one node timeout. Each master has at most one pipeline in
// flight, which keeps its commands in the order they were issued: a release queued after
// an acquire that timed out reaches the master after that acquire, even across a pause.
//
// Release runs the standard compare-and-delete script on every master
// (if GET == token then DEL; not logged to the AOF unless Options.DurableRelease, see
// Releases are not logged) and additionally PUBLISHes the token on
// key+ReleaseChannelSuffix. Extend runs "if GET == token then PEXPIRE, elseif the key is
// missing then SET NX PX" on every master: the holder keeps all masters, not a shrinking
// majority; another holder's key is never touched. An extension counts only when a
// majority confirmed within the remaining validity, by the same arithmetic as acquire; an
// acquisition can be extended Options.MaxExtensions times (default 100), so a holder
// cannot keep a lock forever. Scripts run as functions of the kit's function library
// (FCALL) on a master that has it (FunctionLibrary, loaded by the admin at every start);
// where FCALL fails the call is sent again with EVAL, and when that works the master gets
// EVALSHA for the next calls (see Scripts).
//
// # Releases are not logged
//
// By default the release script starts with redis.set_repl(redis.REPL_NONE): the DEL is
// applied in memory and left out of the AOF, so a master with appendfsync always answers a
// release without an fsync (unless the same pipeline or event-loop pass also carries a
// logged write), and a sequential acquire+release pays one fsync instead of two.
// Acquisitions, extensions and fence registers are logged and fsynced before the master
// answers, as the safety model requires (a prepared hand-off of the wait queue is
// covered by writes logged before it: see "Prepared hand-offs" under "Waiting across
// processes"). Why this is safe:
//
//   - A release that did not reach the AOF can come back only when the master replays its
//     AOF (a restart), and it comes back as the key it was, with its original absolute
//     expiry (Redis logs SET ... PX as SET ... PXAT). Its token belongs to a finished hold:
//     tokens are random per acquisition, and this package refuses to extend or release a
//     released Lock again, so nobody holds it.
//   - A key that is present on a master can only make that master refuse an acquisition;
//     it can never make it grant one (every script compares tokens). Mutual exclusion
//     needs a majority of grants, so a key that came back cannot admit a second holder.
//   - Every SET that granted a key is logged, and replays without NX (SET key token PXAT t),
//     so after a restart each master holds the key of the last SET it logged, over any
//     released key, exactly as it did before for every live holder. (A prepared hand-off
//     is not logged; a key it replaced is, with an expiry no earlier than its own.)
//   - Fencing registers are only raised by logged writes; a release only writes one when
//     it hands the lock to a waiter, logged like an acquisition.
//
// What it costs: a key that comes back makes its master refuse that lock name until the
// key's original expiry (at most the TTL). Under the kit's supervisor a crashed master
// stays down longer than every TTL, so its keys have expired before it rejoins, and a
// clean stop by the supervisor rewrites the AOF from memory first (best effort), so a
// clean restart normally does not bring released keys back either. A master restarted some
// other way (a SHUTDOWN by hand, a copy of its AOF), or after a rewrite that failed, may
// show released keys until they expire: the next holder then gets
// fewer masters (a bare majority when two of five came back) and tolerates fewer failures
// until those keys expire; if keys came back on a majority, the name cannot be locked
// until they expire.
//
// Options.DurableRelease logs releases like every other Redlock client does (the DEL is
// fsynced before the master answers). Use it against masters with replicas, which never
// see an unlogged DEL and would keep the key (not a Redlock deployment; see Masters and
// connections), or when masters are restarted outside the kit's supervisor. On a server
// that cannot leave a script's writes out of the AOF (no set_repl, or Redis before 7 with
// lua-replicate-commands off), the release is logged anyway.
//
// # Wire compatibility
//
// The key is the lock name as given (Options.KeyPrefix is explicit), the value a random
// token, acquisition the standard SET key token NX PX ttl (a plain command with
// NoFencing; with fencing, the same command inside the acquire script, which adds a
// write of the sibling fencing register only) and release the standard
// compare-and-delete, so a lock held through this package and one held through another
// Redlock library (for example redsync) under the same name exclude each other. Sibling
// names are reserved: key+FenceSuffix (the fencing register), key+QueueSuffix (the wait
// queue) and key+QueueSuffix+":<n>" (its pages), and the pub/sub channels key+ReleaseChannelSuffix and
// key+GrantChannelInfix+<Client id>. They all start with the key, so a lock user confined
// to a key prefix can use every feature.
//
// # Waiting
//
// TryAcquire makes one attempt. Acquire retries until it gets the lock, ctx ends, or
// Options.MaxRetries retries failed. By default, once an attempt is refused, the waiter
// joins the key's wait queue on the masters (next section) and the lock is handed to it
// in turn. With Options.NoWaitQueue (or NoNotifications), between attempts a waiter
// sleeps until the first of: a release notification (the waiter subscribes to the key's
// release channel; one shared pub/sub connection per master per Client), the moment the
// key expires on enough masters (from the PTTL replies of the refused attempt), or a
// random delay in [RetryDelayMin, RetryDelayMax] (in its upper half once the
// subscription is confirmed, since notifications then do the work). Waiters of one Client
// then queue first come, first served: a release wakes the oldest, and a release by the
// same Client wakes it at once without jitter; waiters in other processes wake after a
// jitter of about a millisecond that doubles after each collision, and, however small,
// they collide: the more processes wait, the fewer acquisitions succeed. Notifications
// are an optimisation only: a lost notification, or a holder using a library that
// publishes nothing, costs latency, never correctness.
//
// # Waiting across processes: the wait queue
//
// Locks are contended by many processes, each with its own Client. If every waiting
// process woke on a release, they would all send SET NX at once, split the masters'
// votes, and back off. Instead each master keeps, beside the lock, a queue of waiters
// (key+QueueSuffix), and a release hands the lock to the first of them directly:
//
//   - A refused Acquire puts an entry in every master's queue: its ticket (the wall-clock
//     microsecond of its first queued attempt, the same on every master, so masters that
//     have the same waiters order them alike), its Client's id, the token it will hold
//     the key with, its TTL and a lease. It renews the entry (and the lease) with an
//     attempt every 2*RetryDelayMax or so; queue writes are never logged to the AOF (a
//     hint, like releases). The queue key holds the first entries (about 1 KB of them);
//     the later ones go on in pages (key+QueueSuffix+":<n>"), so that a hand-off reads
//     only the first entries and a newcomer only the last page: neither costs more with
//     a longer queue.
//   - The release script deletes the key as always (compare-and-delete) and, when the
//     queue has a live entry, sets the key to the first one's token, in the same atomic
//     step: a logged, fsynced write, like every acquisition (unless prepared, below). The
//     waiter's fence is max(register, the releaser's fence) + 1, and the register is
//     raised past it; the hand-off is published on that waiter's Client's grant channel.
//     Each master does this on its own; a release that hands the lock over costs the
//     waiter no round trip, and wakes nobody else.
//   - The waiter holds the lock once a majority of masters handed it over (or its own
//     attempts set the key where it was free), with the usual validity: each key was set
//     after the waiter's attempt that last renewed its entry there (the notice names that
//     attempt), so validity counts from that attempt's send time, minus the drift. Its
//     fence is the value a majority of those masters raised the register to; when they
//     disagree, the fallback fence round runs, as after an ordinary attempt.
//   - A free key goes to the first live waiter in line: other queued attempts wait their
//     turn rather than split the votes. A release in the first 5 ms of every 100 ms of
//     the master's clock leaves the key free until those 5 ms end, and queued attempts do
//     not take it then, so that clients that only poll (other Redlock libraries) get
//     their chance. The masters' clocks put their windows together, so such a client can
//     win a majority in one; clocks further apart than the window make that rarer.
//   - A waiter that gives up leaves every queue (and releases, handing on, a key it was
//     handed meanwhile); a holder's release removes entries its acquisition left on
//     masters it did not need.
//   - Prepared hand-offs. A hand-off that is logged prepares the ones after it: it gives
//     the new holder's key a slack beyond its TTL (a quarter of the TTL, at most a
//     second), raises the register 99 past the new holder's fence (a queued waiter's
//     fallback fence round does the same), and leaves a note in the queue (memory only):
//     the token it set, the fence it gave, and the key's expiry. A release then hands
//     over without a log write when the note proves that the released key is the one
//     this master handed over with the releaser's fence and untouched since (same token,
//     same fence, same expiry to the millisecond: any other SET of the key, even of the
//     same token by a late extension after it expired, gives it a later expiry), the key
//     still has at least the next waiter's TTL left, and the register is above that
//     fence. The waiter's key keeps the released key's expiry and its fence is the
//     releaser's + 1, at or below the logged register; the new note describes it. The
//     waiter is told without waiting for an fsync, and a chain of hand-offs pays one
//     fsync per second of slack (or per 100 hand-offs) instead of one each. Otherwise
//     (a hold longer than the slack, a waiter asking for a longer TTL, a durable release,
//     a holder without a fence or whose fence came from a fence round, a restarted
//     master, a lost queue) the hand-off is logged as above, which starts a new chain.
//     A waiter's attempt that finds the key already its own reads its fence from the
//     note under the same proof (its token and the key's expiry).
//   - A note is never trusted for what it says, only for a key it still describes. It
//     is memory only, but an AOF rewrite (auto-rewrite, BGREWRITEAOF, the supervisor's
//     compaction) copies it into the AOF's base with every other key, and a restart
//     brings it back while the unlogged writes that cleared it are gone: the key may by
//     then be another SET's (the waiter's own, after its handed key expired and another
//     client held with a higher fence). Every such SET gives the key a later expiry, and
//     masters keep and restore expiries as absolute times, so the note's expiry no
//     longer matches and the note proves nothing: the hand-off is logged, the waiter
//     runs the fence round.
//
// Why this keeps the guarantees:
//
//   - Mutual exclusion is untouched. A key is still only set where it was free: by SET NX
//     PX or by the release script in the very step that deleted the previous holder's
//     key. A lock is still held only with a majority of such keys, counted from a moment
//     before each was set. The queue only decides whose token goes in; it can only make
//     a master refuse, never grant.
//   - Fencing: the argument of "Fencing tokens" holds for hand-offs too. A logged
//     hand-off gives max(register, releaser's fence) + 1 and writes the register above
//     it in the same step. A prepared one gives the releaser's fence + 1 only where the
//     note proves the released key is the one this master handed with that fence and
//     nobody set it since: the key was present from that hand-off to this release, so
//     no other client took that master in between. The waiter uses a handed fence only
//     when a majority of masters handed it the same value. Any client B that acquired
//     after the releaser left a register at or above B's fence (above the releaser's) on
//     a majority, which shares a master with the waiter's: there, a logged hand-off gave
//     more than B's fence, and a prepared one cannot have happened (B held the key in
//     between). So the waiter's fence is above B's, and above every earlier one.
//     Otherwise it reads the registers and runs the fence round.
//   - A prepared hand-off loses nothing in a crash. Every write that moves a lock key's
//     expiry later is logged (acquisitions, extensions, logged hand-offs); a prepared
//     hand-off keeps the released key's expiry (or shortens it), and an unlogged release
//     only deletes. So the expiry a master restores from its AOF (even restarted at once,
//     without the supervisor's delay) is never earlier than the one in memory: the
//     restored key, with an earlier holder's token, refuses everyone until the last
//     holder's key would have expired. The register is only written by logged writes,
//     and with appendfsync always a master fsyncs them before it sends any later reply or
//     notice. Cost: a holder that dies while others wait blocks the lock for up to the
//     slack longer than its TTL; after a restart without the delay, the new holder cannot
//     release or extend the restored key (it has an earlier token), which then blocks the
//     name until it expires, like a released key that came back. Fences jump by up to 100
//     where a chain ends early; they still only increase.
//   - Nothing waits forever on a dead waiter. An entry lives until its lease (three
//     renewal periods plus a second, 2.2 s by default) runs out. A waiter that died
//     after its last renewal may be handed the lock within that time; the lock then
//     frees up at that acquisition's TTL, as when a holder dies.
//   - It degrades to the behaviour without the queue. A master that is down, slow or
//     restarted (its queue lost: queue writes are not logged) has no say or no queue. A
//     queue key holding anything else (another application's key) is never read as a
//     queue nor overwritten: a release there hands nothing over, and a queued Acquire
//     returns a *ForeignQueueError (it matches ErrInvalid) naming the key. Queues that
//     disagree (an entry missing on some master) can hand the key to different waiters
//     on different masters; a waiter holding a minority while no one can hold a majority
//     gives its keys back and comes back with a new token and a new ticket, at the back
//     of the line (all but the one whose token sorts first do so; had they kept their
//     places, those ahead of that one could pass the keys among themselves). A master that does not answer can hide
//     such a split (two waiters with two of five masters each, the fifth stopped: each
//     might be looking at a holder of three); when the picture stays the same for a
//     renewal period, the same rule applies. Waiters keep their timers: a release by a
//     client that hands nothing over (another Redlock library) is noticed within a
//     renewal period.
//   - It stays wire-compatible. Other Redlock clients never read the queue: their SET NX
//     excludes and is excluded as before, and they get the key in the windows left after
//     runs of hand-offs, or when their polling finds it free. They are not starved,
//     though a client that retries fast takes more than its share (releases by them hand
//     nothing over, and queued waiters notice within a renewal period).
//   - Fairness is by ticket, so it depends on the hosts' wall clocks agreeing roughly: a
//     host whose clock is behind by d queues ahead of waiters that arrived up to d before
//     it. Never more than a place in line.
//
// # The protocol's invariants and fault model
//
// What the library promises, for every interleaving of the faults below:
//
//   - Exclusion: no two clients hold a lock within the validity each was told (the
//     deadline of Lock.Deadline).
//   - Fences strictly increase in acquisition order: a holder's fence is above the fence
//     of every holder before it.
//   - The reported validity never outlasts the key on a majority of the masters: until
//     the deadline, a majority holds a key that refuses every other client (the
//     holder's own, or an earlier holder's key a restart brought back with a later
//     expiry).
//
// The faults it is built for: a master that crashes and stays down past every TTL (the
// kit's restart hold); a master that crashes and restarts at once, or stops cleanly and
// restarts, with or without rewriting its AOF first (unlogged writes are then lost, or
// kept, as of the last rewrite); an AOF rewrite at any moment (it persists every key,
// the wait queue and its notes included, which a restart then brings back as they were);
// a client paused for any length of time; messages (replies and hand-off notices) lost,
// late, reordered or delivered twice; keys expiring. Not covered: clocks that drift
// apart by more than the drift allowance, a master restarted at once that lost a logged
// write (appendfsync other than always), or a master that answers for another's data.
//
// What the library trusts, and why it may: nothing in memory a restart can lose or a
// rewrite can resurrect decides a fence or a validity on its own. A note is trusted only
// while it describes the key as it is (token and expiry); the queue only orders waiters
// (a lost or stale queue can make a master refuse, never grant); a waiter's record of a
// grant is replaced by a newer hand-off and dropped for an older one, and its validity
// counts from the attempt before the key was set. A value at the queue's key (or at one of
// its pages) that is not a queue is refused, never overwritten.
//
// A script call is sent once. A message may be lost, but a command is never delivered
// twice: go-redis resends a command whose reply it lost on a connection error unless the
// client is built with MaxRetries -1 or the command says it must not be resent. Every
// command the Client sends says so (go-redis v9's Cmder.NoRetry; a pipeline holding one is
// not retried either), whatever the client's options are when it is sent: rdb.Options() is
// the live struct go-redis reads per command, so a MaxRetries raised after New would
// otherwise resend. NoRetry gates go-redis's own retry loop only, not hooks: a go-redis
// hook (redis.Hook, added with AddHook) on a client given to New must not call next twice
// for a command whose NoRetry() is true, nor for a pipeline holding one; a hook that resends
// on a connection error without asking replays a release
// (TestReplayedReleaseThroughHook: two holders). The library cannot check this (go-redis
// lists no hooks): prefer Open (or NewFromConfig), whose clients it builds itself, with no
// hook of yours. New also refuses a client that may resend (*RetryingClientError, which
// matches ErrInvalid: a *redis.Client without MaxRetries -1, a Sentinel failover, Cluster
// or Ring client, or a client of a type it cannot inspect). The release is why:
// a release that ran, lost its reply to a crash of its master and ran again after an
// immediate restart deletes the releaser's key that the restart brought back from the
// AOF; that key is what keeps the new holder of an unlogged hand-off safe on that master,
// so a third client could hold beside it (TestReplayedReleaseAfterCrashKeepsHandOff,
// TestReplayedReleaseThroughGoRedis). The other scripts would survive a replay, with or
// without a crash in between (the first run's logged writes are fsynced before its reply,
// so a restart keeps them; its unlogged writes, queue entries and notes, may be lost):
//
//   - acquire: the second SET NX finds the first run's key and refuses; the client counts
//     a refusal where it holds the key (a lost vote, and a key its failure cleanup
//     deletes). Raising the register is a max: running it twice changes nothing.
//   - queued attempt: a second run finds the key its first run set ("ours", counted
//     from the last attempt this master answered "queued", before the first run was
//     sent), or renews the entry again, or finds the key handed to an earlier waiter by
//     the first run (logged) and queues. A note it reads counts only while it describes
//     the key (token and expiry).
//   - extend: a second PEXPIRE moves the key's expiry later than the client counted
//     (validity counts from the first send); a second "set again" finds the first run's
//     key and extends it. It never touches another token's key, and a moved expiry makes
//     a note prove nothing (the next hand-off is logged). The release goes out after the
//     extension's pipeline, replays included, so it cannot resurrect a released key.
//   - fence round: a max on a register that only goes up, where the key holds the token.
//   - notices: PUBLISH is not resent by a receiver; a notice that comes twice, late or
//     out of order counts only for the latest hand-off it can be (see Waiting across
//     processes), and a release notice only wakes.
//   - a durable release, and a release or a waiter's leave whose hand-off was logged:
//     after a restart the master holds the new holder's key, so the second run finds a
//     key that is not the releaser's and does nothing.
//
// The hand-off protocol is checked three ways: a Promela model of it (model/handoff.pml,
// `make model`, run in CI: an exhaustive search of three masters and three clients in six
// configurations that together cover the faults above, within bounds of time and
// attempts; three negative controls, with a fix removed or the replay put back, must
// each yield a counterexample),
// stateful property tests on real masters (TestProtocolStateMachine: random sequences of
// the protocol's moves, each a whole turn of an actor with the faults that strike during
// it drawn as its parameters: lock cycles with a hand-off, the waiter's turns with a
// pause past its TTL and fence rounds failed by restarts, other clients, rewrites,
// restarts and crashes; the invariants checked at every acquisition and move, failures
// shrunk; with the stale-note fix reverted it found that hole, see its comment; `make
// fuzz-protocol DURATION=1h` for long runs), and regression tests of each hole
// found (TestStaleNoteAfterRewriteAndRestart, TestWaitQueueStaleReleaseFence,
// TestReplayedReleaseThroughGoRedis). docs/protocol.md maps the model's steps to these
// scripts.
//
// # Validity, renewal and the lock's context
//
// Lock.Context is cancelled when the validity runs out (cause ErrExpired), when an
// extension finds the lock taken (ErrLost), on Release (ErrReleased), or, with auto-renewal,
// when renewal fails for good. Auto-renewal (WithAutoRenew, Lock.AutoRenew) extends the
// lock by its TTL every third of the TTL, retries a master outage until the validity runs
// out, and stops at Options.MaxExtensions; the context then ends at the deadline with a
// cause that wraps both ErrExpired and the reason. Nothing can stop a holder that is
// paused after it checked its context (GC, swap, SIGSTOP): that is what fencing is for.
//
// # Fencing tokens
//
// Every acquisition gets a fencing token (Lock.Fence) from a quorum register stored on
// each master under key+FenceSuffix, a plain integer with no TTL that only ever goes up.
//
// The Client proposes F = 1 + the largest fence it has seen for the key: its own fences
// and the registers masters returned to it, remembered for the most recently used few
// thousand names (F = 1 when it knows none). On each master the acquisition is one
// script: SET key token NX PX ttl; only where that SET succeeded, the register is raised
// to F if it held less; the script returns the register as it was. Then:
//
//   - one round: when a majority of masters granted the key and each of them held less
//     than F, the fence is F. This is the common case: a new name, or a name whose last
//     holder used this Client.
//   - fallback: otherwise (another Client moved the fence on, or this Client never saw
//     it), the client proposes P = 1 + the largest register read where its SET succeeded
//     (it needs a majority of such reads, so P > F), and a second round (OpFence) raises
//     the register to max(stored, P) on every master where the key still holds its
//     token; the fence is P once a majority confirmed, before the validity ran out (else
//     the acquisition fails and is released).
//
// When a majority granted but not yet a majority with a lower register, the client waits
// for the other masters' replies at most as long as the majority took (about what the
// fallback round would cost); they usually arrive together.
//
// Guarantee: if holder A's hold ended (release, or validity deadline) before holder B
// acquired, then B.Fence() > A.Fence(). Why: however A got its fence, the register is at
// least A.Fence() on a majority Q_A of masters, each written while A's key was on that
// master (in the script right after A's SET, or by the fence round, which checks the
// token). B decided on a majority Q_B of masters where its SET succeeded and it read the
// register in the same atomic script. Q_A and Q_B intersect in some master M. B's SET NX
// succeeded on M while A's key was absent, and after A's write there: had it come
// before, B's key would have kept A out of M until it expired, after the moment B
// acquired (clock assumptions below), yet A's whole hold ended before that moment. As
// registers never decrease, B read at least A.Fence() on M. B's fence is larger than
// every register it read on Q_B (F on the first path, P on the fallback), so larger than
// A.Fence().
//
// A register raised without an acquisition (on the masters that granted an attempt that
// then failed, or that granted late) is harmless: nothing requires a register to equal a
// fence, only that registers never go down and that every fence handed out is at or
// below the registers of a majority; a higher register only makes later fences larger.
// Fences are per lock name, start at 1, strictly increase, and may skip values.
// Re-entrant holds share their acquisition's fence. Values are exact up to 2^53 (Lua
// numbers): a register at or above 2^53 (only an operator can put one there) is reported
// as that master's error, never wrapped around, so the name can no longer be fenced. The Client's memory of fences is a hint only: a wrong or forgotten value
// costs the fallback round, never the guarantee.
//
// The guarantee assumes what Redlock's mutual exclusion assumes (clock rates within
// DriftFactor, no clock steps on masters, a crashed master kept down longer than the
// largest TTL, fsync'd AOF) and one more thing: registers have no TTL, so the restart
// delay does not protect them. A master that comes back without its data (lost or
// repaired AOF, new disk, FLUSHALL) forgets its registers. The next fence is still larger
// as long as a majority of masters keep a register at or above the previous holder's
// fence; since every master where the holder's SET succeeded (normally all N) ends up
// with such a register (raised by the acquire script or by the fence round), up to
// N-(N/2+1) masters (2 of 5) may lose their registers at once. More losses, or a break of
// mutual exclusion, can hand out a fence that is not larger than an earlier one.
// Registers use a few dozen bytes per lock name and are never evicted (noeviction): use
// a bounded set of names, or Options.NoFencing (then the acquisition is a plain SET NX
// PX and no register is written).
//
// The resource must enforce the fence: store the largest fence it has accepted and
// reject writes with a smaller one. Commit the protected write (a database transaction
// carrying the fence) before Release, never after: released first, another holder may
// already be writing.
//
// # Re-entrant holds
//
// With WithReentrant(owner), a second acquisition of the same key by the same owner on the
// same Client, while the first is valid, returns at once a new Lock handle on the same
// hold (same token and fence) and counts one more hold; if the requested TTL reaches
// beyond the current deadline by more than a tenth of the TTL the lock is extended first
// (one round, counted in MaxExtensions; at the limit the re-entry keeps the current
// deadline instead of failing), and WithAutoRenew on a re-entry renews the shared hold. Each handle is released once;
// the masters are only released when the last handle is. Without WithReentrant, or for
// another owner, or from another Client or process, a second acquisition is an ordinary
// contender and is refused while the lock is held.
//
// # Errors
//
// All errors work with errors.Is/As: *TakenError (matches ErrTaken: held by another
// client, lists the refusing masters, FreeIn estimates when it frees up),
// *UnavailableError (matches ErrUnavailable: too few masters confirmed; it counts every
// master once, Votes + Refused + len(Errors) == Masters, and lists one MasterError per
// failed master naming the cause: "connection refused", "connection reset", "timed
// out", ErrNodeTimeout for a master that did not answer within the node timeout, or a
// *DeniedError), ErrDenied (a master refused the credentials or a command: WRONGPASS,
// NOAUTH, NOPERM; the *DeniedError carries the server's message, and Acquire returns it
// at once when the denying masters leave no majority, else retries), ErrLost, ErrExpired, ErrTTLTooLong, ErrExtensionLimit,
// ErrReleased, ErrClosed, ErrInvalid (bad arguments, such as a name ending in
// FenceSuffix or QueueSuffix, or with QueueSuffix+":" in it). errors.Is(err, syscall.ECONNREFUSED) and the like work through the
// per-master errors. The caller's context errors pass through (Acquire wraps them
// together with the last attempt's error). WithRetryHook shows each failed attempt of
// Acquire while it waits.
//
// # Masters and connections
//
// Pass one go-redis client per independent master (no replicas, no Sentinel, no Cluster),
// built with redis.NewClient from MasterOptions, an odd number of them, at least 3 (New
// refuses others with a *MasterCountError: a majority of an even count tolerates no more
// failures than one fewer). New refuses a Sentinel failover client (redis.NewFailoverClient,
// or redis.NewUniversalClient with MasterName): the replica Sentinel promotes lacks the
// writes not yet replicated, held keys and raised fence registers among them. Each client
// is authenticated as a user allowed SET, GET, DEL, PEXPIRE, PTTL, PEXPIRETIME, FCALL,
// PUBLISH, SUBSCRIBE, UNSUBSCRIBE and PING (internal/redisconf.LockUserCommands). A user
// without PEXPIRETIME (an ACL written by an earlier version) still locks, but its
// hand-offs are all logged: only an exact expiry proves a prepared hand-off.
//
// # Scripts
//
// The scripts are Lua files in package lua (embedded), which also builds the kit's Redis
// Function library from them (FunctionLibrary, library "redlock"). The admin loads it at
// every start of a master (the kit's runtimes do; `lockagent functions` prints it for
// masters the kit does not run), so that a lock user needs FCALL and may run no Lua of its
// own. On a master where the function is missing
// (not loaded, another library version, Redis < 7) or the user may not FCALL, the Client
// sends the call again at once with EVAL; when that works, the master's later pipelines
// use EVALSHA, with every script loaded (SCRIPT LOAD) ahead of the first. A NOSCRIPT reply
// (a restarted master has no script cache) is answered with EVAL, and the master tries
// FCALL first again (the admin loads the library at every start). A user for that needs
// EVAL, EVALSHA and SCRIPT LOAD instead. Where neither works, operations fail with a
// *DeniedError naming the fix. FCALL runs exactly what EVAL would (same keys, values and
// replies), so other Redlock clients that EVAL their own scripts on their own user still
// exclude this library's holders.
// MasterOptions holds the client options and why each: MaxRetries -1 is required (New
// refuses clients without it: see The protocol's invariants and fault model). go-redis
// normalises the option in place, so a copy of a client's Options() holds 0 for -1, which
// a new client reads as 3 retries: set it to -1 again on a copy, or start from
// MasterOptions.
//
// # TLS
//
// Open verifies the masters against the client file's CA (ca_cert_pem). With New, the
// library speaks to the masters through the clients it is given, so TLS is a go-redis
// option: set redis.Options.TLSConfig on each client, with RootCAs holding the
// deployment's CA (the redlock-cluster and redlock-hosts modules' client config carries it
// as ca_cert_pem; with tls = true their masters serve TLS only) and MinVersion TLS 1.2.
// The server name is taken from the address dialled when TLSConfig.ServerName is empty; a
// custom Options.Dialer must do the handshake itself (go-redis applies TLSConfig only with
// its own dialer). Nothing else changes: the same scripts, the same timing.
package redlock
