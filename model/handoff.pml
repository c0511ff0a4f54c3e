/*
 * The wait queue's hand-off protocol (lockagent/redlock), checked exhaustively by Spin
 * (scripts/model.sh, `make model`; docs/protocol.md, "The model").
 *
 * One proctype per actor: client (one Acquire through the wait queue, then hold, extend,
 * release) and nemesis (time, AOF rewrites, restarts, crashes). The masters are data:
 * each script runs inside one d_step, atomically, as a Redis script does. One inline per
 * script function:
 *
 *   model step          stands for (lockagent/redlock; the Lua in lockagent/redlock/lua)
 *   ------------------  --------------------------------------------------------------
 *   acquire_queued      acquire_queued.lua: a queued attempt
 *   acquire_plain       acquire.lua: the first attempt of client PLAIN
 *   drop_plain          Client.cleanup (release.go) of a failed plain attempt
 *   release_script      release.lua (not durable): the release half
 *   handto              handto, logged and unlogged hand-off (queue.lua)
 *   noted               noted / proves: the note counts only while it is the key as it
 *                       is now, token and expiry (queue.lua)
 *   extend_script       extend.lua: PEXPIRE where ours, SET NX where gone
 *   fence_script        fence.lua: a waiter's round reserves CHAIN - 1 fences, the plain
 *                       attempt's none (Client.fence in attempt.go)
 *   attempt             queuedWait.attempt: one round of acquire_queued.lua (waitqueue.go,
 *                       round.go's broadcast), then tryLock
 *   record_reply        queuedWait.attempt's handling of one master's reply (waitqueue.go)
 *   deliver / granted   notifier.deliverGrant (notify.go) / queuedWait.granted (waitqueue.go)
 *   try_lock            queuedWait.tryLock: live grants, deadline, agreed fence or a
 *                       fence round (waitqueue.go)
 *   release             Lock.Release: one round of release.lua with the holder's fence
 *   rewrite             BGREWRITEAOF (or an auto-rewrite): memory, note and queue
 *                       included, becomes the AOF's base
 *   restore             a restart that replays the AOF: a crash with an immediate
 *                       restart, or a clean SHUTDOWN without a rewrite before it
 *   crash_hold          a crash under the kit's restart hold (down past every TTL)
 *   replay (-DREPLAY)   go-redis re-sending a release whose reply the crash lost
 *
 * What persists: a logged write (acquisitions, logged hand-offs, extensions, registers)
 * is in the AOF at once (appendfsync always): the d* variables. Unlogged writes
 * (releases, unlogged hand-offs, the queue and its note) live in memory only, but a
 * rewrite copies all of memory into the AOF's base. A restart replays the AOF: memory :=
 * d*. A clean restart with a rewrite first is a rewrite (memory unchanged).
 *
 * Abstractions: time is a global tick; keys hold absolute expiries (a master restores
 * them as PXAT) and a key expires at its tick. A token is the client's id (one Acquire
 * per client; the plain attempt's is client + C); tickets (the queue's order) are client
 * ids too. A grant's since is the send tick of the attempt it names, its validity since
 * + TTL (no drift: a key set at or after since lives at least TTL). The rounds are
 * atomic: no other actor's step falls between one round's masters; a master that is
 * down misses it, and so may master 0
 * (-DLOSSY: the masters are alike, so one master stands for the minority that misses
 * rounds). A client that stops (paused, crashed, gave up) is a client that takes no
 * more steps: every state it could leave behind is reached. An attempt is a queued one
 * (acquire.go's path for a key contended lately), except client PLAIN's first: the plain
 * acquireScript (a key not contended lately), which takes a free key whatever the queue,
 * with its own token (client + C); when it fails, its token is released everywhere
 * (tryAcquire) before the client queues with its queued token. Not modelled: windows
 * for clients that only poll, queue leases (waiters do not die), splits and yield
 * (liveness only), extension of the reported validity (an extension moves keys only: a
 * stricter client).
 *
 * Invariants: exclusion within the reported validity, fences strictly increasing in
 * acquisition order (both when a client starts to hold), and, after every step, every
 * holder's validity within the life of keys on a majority (a present key refuses every
 * other client until it expires; a master under the restart hold refuses all).
 *
 * Variants (-D): NOTE_TRUSTED: the note trusted by its token alone (the stale-note fix
 * removed); RELEASE_UNPROVEN: a release of our key hands over with the releaser's fence
 * + 1 without the note's proof (the ac95557 fix removed); REPLAY: go-redis retries
 * allowed (MaxRetries >= 0): a restart at once may replay the releases it cut off. Each
 * must produce a counterexample.
 *
 * Bounds (-D, scripts/model.sh sets them per configuration): TMAX ticks; NATT1..3
 * attempts of clients 1..3 (client 1 has the first ticket); EXT extension rounds per
 * holder; REWRITES, RESTARTS (all masters), RESTARTS0 and CRASHES (master 0) as counts
 * or ANY (any number, at any moment); PLAIN the client whose first attempt is plain;
 * LOSSY; NO_NOTICES: every hand-off notice is lost (waiters find their hand-offs by
 * their next attempt, as waitqueue.go does), which keeps the fault configurations
 * small; the notices configuration delivers them.
 */

#define M      3      /* masters */
#define C      3      /* clients: ids 1..C */
#define Q      2      /* majority */
#define TTL    2      /* the clients' TTL, in ticks */
#define SLACK  1      /* a logged hand-off's slack */
#define CHAIN  3      /* fences a logged hand-off or a fence round reserves */
#ifndef TMAX
#define TMAX   3      /* last tick */
#endif
#ifndef NATT1
#define NATT1  3      /* attempts of client 1 (the first ticket) */
#endif
#ifndef NATT2
#define NATT2  2      /* ... of client 2 */
#endif
#ifndef NATT3
#define NATT3  1      /* ... of client 3 (the last ticket) */
#endif
#ifndef EXT
#define EXT    0      /* extension rounds per holder (late ones included) */
#endif
#define ANY    255    /* a fault bound of ANY: any number of times, and no counter in the state */
#ifndef REWRITES
#define REWRITES ANY  /* AOF rewrites of every master */
#endif
#ifndef RESTARTS
#define RESTARTS ANY  /* restarts at once of every master (crash, or clean without a rewrite) */
#endif
#ifndef CRASHES
#define CRASHES 0     /* crashes of master 0 under the restart hold */
#endif
#ifndef PLAIN
#define PLAIN  0      /* the client whose first attempt is the plain acquireScript (0: none) */
#endif
#ifndef RESTARTS0
#define RESTARTS0 0   /* restarts at once of master 0 alone */
#endif
#define QI(m, c) ((m) * (C + 1) + (c))  /* queue/notice slot of client c on master m */

byte now;

/* each master's memory */
byte key[M], kexp[M], reg[M];
byte ntok[M], nfen[M], nexp[M];       /* the queue's note: token, fence, key expiry */
bool inq[M * (C + 1)];                /* the queue: waiter c is in line on m */
byte qatt[M * (C + 1)];               /* ... with the attempt that last renewed its entry */
bool up[M];
byte downto[M];                       /* a crashed master's return (crash_hold) */
/* what a restart restores: the AOF (logged writes and the last rewrite's base) */
byte dkey[M], dkexp[M], dreg[M];
byte dntok[M], dnfen[M], dnexp[M];
bool dinq[M * (C + 1)];
byte dqatt[M * (C + 1)];

/* hand-off notices on the clients' grant channels: fence and attempt (0: none) */
byte nf[M * (C + 1)], na[M * (C + 1)];

/* what the clients report */
bool holding[C + 1];
byte hdead[C + 1];    /* reported validity: holding until now reaches it */
byte lastFence;
byte rewrites, restarts, restarts0, crashes;
#ifdef REPLAY
byte relt[M], relf[M];  /* the release that ran on m this tick (token, fence): in flight */
#endif

/* scratch of one atomic step (d_step only): not part of the state */
hidden byte j, k, q, h, g, rep, rreg, rg, lleft, hf, live, dl, fence, readmax, agree, ncnt, confirmed, refused, prop;
hidden byte proven, ours;

/* ---- scripts (each runs inside its caller's d_step) ---- */

/* noted: the note's fence when it names tok and the key's expiry as it is now, else 0. */
inline noted(m, tok, res) {
#ifdef NOTE_TRUSTED
  res = (ntok[m] == tok -> nfen[m] : 0);
#else
  res = ((ntok[m] == tok && key[m] == tok && nexp[m] == kexp[m]) -> nfen[m] : 0);
#endif
}

/* the first waiter in line (lowest ticket) other than except; 0: none */
inline head_of(m, except) {
  h = 0;
  for (q : 1 .. C) {
    if
    :: h == 0 && q != except && inq[QI(m, q)] -> h = q
    :: else
    fi
  }
}

/* handto: the key to waiter e; f the releaser's fence (0: none), proven by the note,
 * lleft the released key's life. Tells e on its grant channel. */
inline handto(m, e, f, prv, lft) {
  if
  :: prv && reg[m] > f && lft >= TTL ->
     /* unlogged: the key keeps the released expiry exactly (the scripts: PEXPIRETIME, then
      * SET PXAT; a reading that is not exact proves no note, so such a hand-off is
      * logged), fence f + 1 */
     key[m] = e; kexp[m] = now + lft; g = f + 1;
     printf("t=%d m%d: unlogged hand-off to c%d fence %d, key until %d\n", now, m, e, g, kexp[m])
  :: else ->
     key[m] = e; kexp[m] = now + TTL + SLACK; dkey[m] = e; dkexp[m] = kexp[m];
     g = (reg[m] > f -> reg[m] : f) + 1;
     reg[m] = g + CHAIN - 1; dreg[m] = reg[m];
     printf("t=%d m%d: logged hand-off to c%d fence %d, key until %d, register %d\n", now, m, e, g, kexp[m], reg[m])
  fi;
  ntok[m] = e; nfen[m] = g; nexp[m] = kexp[m];
  inq[QI(m, e)] = 0;
  nf[QI(m, e)] = g; na[QI(m, e)] = qatt[QI(m, e)]
}

/* acquire_queued: rep 1 set (rreg: register before), 2 ours (rg: the note's fence, 0
 * none), 0 refused (queued, or the free key handed to an earlier waiter). */
inline acquire_queued(m, c, n) {
  rreg = reg[m]; rg = 0;
  if
  :: key[m] == c -> noted(m, c, rg); rep = 2
  :: key[m] == 0 ->
     head_of(m, c);
     if
     :: h != 0 && h < c ->
        inq[QI(m, c)] = 1; qatt[QI(m, c)] = n;
        handto(m, h, 0, 0, 0); rep = 0
     :: else ->
        key[m] = c; kexp[m] = now + TTL; dkey[m] = c; dkexp[m] = kexp[m];
        if :: reg[m] < prop -> reg[m] = prop; dreg[m] = prop :: else fi;
        inq[QI(m, c)] = 0; qatt[QI(m, c)] = 0; ntok[m] = 0; nfen[m] = 0; nexp[m] = 0; rep = 1
     fi
  :: else ->
     inq[QI(m, c)] = 1; qatt[QI(m, c)] = n; rep = 0
  fi
}

/* acquire_plain: acquireScript, SET NX PX with the fence raised to the proposal; the
 * queue is neither read nor joined. rep 1 set, 0 refused. */
inline acquire_plain(m, t) {
  rreg = reg[m]; rg = 0;
  if
  :: key[m] == 0 ->
     key[m] = t; kexp[m] = now + TTL; dkey[m] = t; dkexp[m] = kexp[m];
     if :: reg[m] < prop -> reg[m] = prop; dreg[m] = prop :: else fi;
     rep = 1
  :: else -> rep = 0
  fi
}

/* release_script (not durable): DEL of our key, unlogged; then the first waiter gets
 * the key, free or just released. */
inline release_script(m, c, f) {
  proven = 0; lleft = 0; ours = 0;
  if
  :: key[m] == c ->
#ifdef RELEASE_UNPROVEN
     proven = 1;
#else
     noted(m, c, g); proven = (g != 0 && g == f);
#endif
     lleft = kexp[m] - now; key[m] = 0; kexp[m] = 0; ours = 1
  :: else
  fi;
  if
  :: key[m] == 0 ->
     head_of(m, 0);
     if
     :: h != 0 -> hf = (ours -> f : 0); handto(m, h, hf, proven, lleft)
     :: else
     fi
  :: else
  fi
}

/* extend_script: PEXPIRE where ours, SET NX where gone (both logged). */
inline extend_script(m, c) {
  if
  :: key[m] == c || key[m] == 0 ->
     key[m] = c; kexp[m] = now + TTL; dkey[m] = c; dkexp[m] = kexp[m]
  :: else
  fi
}

/* fence_script: where the key is ours, the register to max(it, p + reserve). */
inline fence_script(m, c, p, reserve) {
  if
  :: key[m] == c ->
     if :: reg[m] < p + reserve -> reg[m] = p + reserve; dreg[m] = reg[m] :: else fi;
     confirmed++
  :: else -> refused++
  fi
}

/* ---- the invariant checked after every step ---- */

/* blocked: each holder's reported validity is within the life of keys on a majority:
 * a present key refuses everyone else until it expires, a held-down master refuses all. */
inline check_blocked() {
  for (k : 1 .. C) {
    if
    :: holding[k] && now < hdead[k] ->
       ncnt = 0;
       for (q : 0 .. M - 1) {
         if
         :: up[q] && key[q] != 0 && kexp[q] >= hdead[k] -> ncnt++
         :: !up[q] && downto[q] >= hdead[k] -> ncnt++
         :: else
         fi
       };
       if :: ncnt < Q -> printf("t=%d c%d holds until %d but keys last that long on %d masters\n", now, k, hdead[k], ncnt) :: else fi;
       assert(ncnt >= Q)
    :: else
    fi
  };
  skip
}

/* ---- the nemesis's faults ---- */

inline rewrite(m) {
  dkey[m] = key[m]; dkexp[m] = kexp[m]; dreg[m] = reg[m];
  dntok[m] = ntok[m]; dnfen[m] = nfen[m]; dnexp[m] = nexp[m];
  for (q : 1 .. C) { dinq[QI(m, q)] = inq[QI(m, q)]; dqatt[QI(m, q)] = qatt[QI(m, q)] }
}

inline restore(m) {
  key[m] = dkey[m]; kexp[m] = dkexp[m]; reg[m] = dreg[m];
  ntok[m] = dntok[m]; nfen[m] = dnfen[m]; nexp[m] = dnexp[m];
  for (q : 1 .. C) { inq[QI(m, q)] = dinq[QI(m, q)]; qatt[QI(m, q)] = dqatt[QI(m, q)] }
}

/* replay: go-redis re-sends a release whose reply was lost (-DREPLAY only) */
inline replay(m) {
#ifdef REPLAY
  if
  :: relt[m] != 0 ->
     printf("t=%d m%d: c%d's release replayed\n", now, m, relt[m]);
     release_script(m, relt[m], relf[m]); relt[m] = 0; relf[m] = 0
  :: else
  fi;
#endif
  skip
}

/* expire: keys whose time is up go, and so do notes (noted needs the key with the note's
 * expiry: a note can prove nothing once that is past; not so with NOTE_TRUSTED); a
 * held-down master comes back with its AOF. */
inline expire() {
  for (j : 0 .. M - 1) {
    if :: key[j] != 0 && kexp[j] <= now -> key[j] = 0; kexp[j] = 0 :: else fi;
    if :: dkey[j] != 0 && dkexp[j] <= now -> dkey[j] = 0; dkexp[j] = 0 :: else fi;
#ifndef NOTE_TRUSTED
    if :: ntok[j] != 0 && nexp[j] <= now -> ntok[j] = 0; nfen[j] = 0; nexp[j] = 0 :: else fi;
    if :: dntok[j] != 0 && dnexp[j] <= now -> dntok[j] = 0; dnfen[j] = 0; dnexp[j] = 0 :: else fi;
#endif
    if :: !up[j] && downto[j] <= now -> restore(j); up[j] = 1; downto[j] = 0 :: else fi
  }
#ifdef REPLAY
  ; for (j : 0 .. M - 1) { relt[j] = 0; relf[j] = 0 }
#endif
}

proctype nemesis() {
  do
  :: now < TMAX -> d_step { now++; expire(); printf("t=%d\n", now) }
  /* every master at once (auto-rewrites; a deploy, a power loss) */
  :: rewrites < REWRITES -> d_step {
       if :: REWRITES < ANY -> rewrites++ :: else fi;
       for (j : 0 .. M - 1) { if :: up[j] -> rewrite(j) :: else fi };
       printf("t=%d all masters: AOF rewrite\n", now) }
  :: restarts < RESTARTS -> d_step {
       if :: RESTARTS < ANY -> restarts++ :: else fi;
       printf("t=%d all masters: restart at once (AOF replayed)\n", now);
       for (j : 0 .. M - 1) { if :: up[j] -> restore(j); replay(j) :: else fi };
       check_blocked() }
  /* master 0 alone: the masters are alike, so it stands for any one of them */
  :: restarts0 < RESTARTS0 && up[0] -> d_step {
       if :: RESTARTS0 < ANY -> restarts0++ :: else fi;
       printf("t=%d m0: restart at once (AOF replayed)\n", now);
       restore(0); replay(0); check_blocked() }
  :: crashes < CRASHES && up[0] -> d_step {
       if :: CRASHES < ANY -> crashes++ :: else fi;
       up[0] = 0; downto[0] = now + TTL + SLACK;
       /* memory is gone: restore(0) brings back the AOF at its return */
       key[0] = 0; kexp[0] = 0; reg[0] = 0; ntok[0] = 0; nfen[0] = 0; nexp[0] = 0;
       for (q : 1 .. C) { inq[QI(0, q)] = 0; qatt[QI(0, q)] = 0 };
       printf("t=%d m0: crash, held down until %d\n", now, downto[0]) }
  :: now == TMAX -> break
  od
}

/* ---- the client (waitqueue.go) ---- */

/* granted: a notice (fence f of attempt a) counts only for the latest hand-off there. */
inline granted(m, f, a) {
  if
  :: a < lastq[m] -> skip                                             /* before a queued answer: stale */
  :: gours[m] && (a < gatt[m] || a == gatt[m] && graised[m]) -> skip  /* known, or older */
  :: else -> gours[m] = 1; gatt[m] = a; graised[m] = 1; gfence[m] = f; greg[m] = f
  fi
}

/* record_reply: what an attempt's reply on m says. */
inline record_reply(m) {
  if
  :: rep == 1 ->
     gours[m] = 1; gatt[m] = n; greg[m] = rreg;
     graised[m] = (rreg < prop); gfence[m] = (rreg < prop -> prop : 0)
  :: rep == 2 ->
     if :: !gours[m] -> gours[m] = 1; gatt[m] = lastq[m]; graised[m] = 0; gfence[m] = 0; greg[m] = rreg :: else fi;
     if :: rg != 0 && (!graised[m] || gfence[m] != rg) -> graised[m] = 1; gfence[m] = rg :: else fi
  :: else -> lastq[m] = n; gours[m] = 0; gatt[m] = 0; graised[m] = 0; gfence[m] = 0; greg[m] = 0
  fi;
  if :: rreg > cache -> cache = rreg :: else fi
}

#define LIVE(x) (gours[x] && now < sent[gatt[x]] + TTL)

/* try_lock: live grants on a majority; the deadline is the Q-th latest since + TTL; the
 * fence the one a majority raised to, else a fence round above every register read
 * (fr: the round's messages arrive; lost: the master it misses). Then hold, when the
 * validity has not run out. */
inline try_lock(fr) {
  live = 0; dl = 0; fence = 0; readmax = 0;
  for (j : 0 .. M - 1) {
    if :: LIVE(j) -> live++; if :: greg[j] > readmax -> readmax = greg[j] :: else fi :: else fi
  };
  if
  :: live >= Q ->
     for (j : 0 .. M - 1) {
       if
       :: LIVE(j) ->
          ncnt = 0; agree = 0;
          for (k : 0 .. M - 1) {
            if :: LIVE(k) && sent[gatt[k]] >= sent[gatt[j]] -> ncnt++ :: else fi;
            if :: LIVE(k) && graised[j] && graised[k] && gfence[k] == gfence[j] -> agree++ :: else fi
          };
          if :: ncnt >= Q && sent[gatt[j]] + TTL > dl -> dl = sent[gatt[j]] + TTL :: else fi;
          if :: agree >= Q && gfence[j] > fence -> fence = gfence[j] :: else fi
       :: else
       fi
     };
     if
     :: fence == 0 && fr ->
        confirmed = 0; refused = 0;
        for (j : 0 .. M - 1) { if :: up[j] && j != lost -> fence_script(j, tok, readmax + 1, (tok != c -> 0 : CHAIN - 1)) :: else fi };
        printf("t=%d c%d: fence round %d: %d confirmed, %d refused\n", now, c, readmax + 1, confirmed, refused);
        if
        :: confirmed >= Q -> fence = readmax + 1
        :: confirmed < Q && refused > M - Q ->   /* ErrLost: look again */
           for (j : 0 .. M - 1) { gours[j] = 0; gatt[j] = 0; graised[j] = 0; gfence[j] = 0; greg[j] = 0 }
        :: else                                    /* unavailable, retryable: the grants are kept */
        fi
     :: else
     fi;
     if :: fence > cache -> cache = fence :: else fi;
     if
     :: fence != 0 && now < dl ->
        printf("t=%d c%d HOLDS with fence %d, valid until %d\n", now, c, fence, dl);
        /* exclusion within the reported validity */
        for (j : 1 .. C) {
          if :: j != c && holding[j] && now < hdead[j] -> printf("t=%d c%d still holds until %d\n", now, j, hdead[j]) :: else fi;
          assert(j == c || !holding[j] || now >= hdead[j])
        };
        /* fences strictly increasing in acquisition order */
        if :: fence <= lastFence -> printf("t=%d fence %d after fence %d\n", now, fence, lastFence) :: else fi;
        assert(fence > lastFence);
        lastFence = fence; myfence = fence; holding[c] = 1; hdead[c] = dl; phase = 1;
        for (j : 0 .. M - 1) { gours[j] = 0; gatt[j] = 0; graised[j] = 0; gfence[j] = 0; greg[j] = 0; lastq[j] = 0;
                               nf[QI(j, c)] = 0; na[QI(j, c)] = 0 };
        check_blocked()
     :: else
     fi
  :: else
  fi
}

/* attempt: one round of acquire_queued (lost: the master it misses), then try_lock. */
inline attempt(fr) {
  n++; sent[n] = now; prop = cache + 1;
  for (m : 0 .. M - 1) {
    if
    :: up[m] && m != lost ->
       if :: tok != c -> acquire_plain(m, tok) :: else -> acquire_queued(m, c, n) fi;
       record_reply(m);
       printf("t=%d m%d: c%d attempt %d (token %d): reply %d (register %d, note fence %d)\n", now, m, c, n, tok, rep, rreg, rg)
    :: else
    fi
  };
  try_lock(fr);
  if :: tok != c && phase == 0 -> phase = 3 :: else fi  /* the plain attempt failed */
}

/* drop_plain: a failed plain attempt releases its token everywhere (tryAcquire), then the
 * client waits in the queue with its queued token (acquireQueued). */
inline drop_plain() {
  printf("t=%d c%d releases its plain attempt's token %d\n", now, c, tok);
  for (m : 0 .. M - 1) { if :: up[m] && m != lost -> release_script(m, tok, 0) :: else fi };
  tok = c; phase = 0;
  for (j : 0 .. M - 1) { gours[j] = 0; gatt[j] = 0; graised[j] = 0; gfence[j] = 0; greg[j] = 0; lastq[j] = n + 1 };
  check_blocked()
}

/* deliver: the notice on m's grant channel reaches the client (kept: it comes again). */
inline deliver(m, kept) {
  printf("t=%d c%d: notice from m%d: fence %d for attempt %d\n", now, c, m, nf[QI(m, c)], na[QI(m, c)]);
  granted(m, nf[QI(m, c)], na[QI(m, c)]);
  if :: kept -> dupd = 1 :: else -> nf[QI(m, c)] = 0; na[QI(m, c)] = 0 fi;
  try_lock(fr)
}

/* FATES(guard, body): one option of the client's loop per fate of the step's rounds:
 * fr whether a fence round's messages arrive, lost the master the rounds miss (M: none;
 * -DLOSSY: any one). Options, not an if inside the step: no intermediate states. */
#ifdef LOSSY
#define FATES(guard, body) \
  :: guard -> d_step { fr = 1; lost = M; body; m = 0; lost = 0; fr = 0 } \
  :: guard -> d_step { fr = 0; lost = M; body; m = 0; lost = 0; fr = 0 } \
  :: guard -> d_step { fr = 1; lost = 0; body; m = 0; lost = 0; fr = 0 }
#else
#define FATES(guard, body) \
  :: guard -> d_step { fr = 1; lost = M; body; m = 0; lost = 0; fr = 0 } \
  :: guard -> d_step { fr = 0; lost = M; body; m = 0; lost = 0; fr = 0 }
#endif

/* a notice from master mm: delivered and consumed, or delivered and kept (it comes
 * again: at most once per client); one never delivered is lost, one delivered after
 * other steps is late */
#define NOTICE(mm) \
  FATES(phase == 0 && nf[QI(mm, c)] != 0, m = mm; deliver(m, 0)) \
  FATES(phase == 0 && nf[QI(mm, c)] != 0 && !dupd, m = mm; deliver(m, 1))

/* gone: the client's Acquire is over; what it knew is no longer state */
inline gone() {
  n = 0; cache = 0; myfence = 0; ext = 0; dupd = 0; phase = 2; tok = 0;
  for (j : 0 .. NATT1) { sent[j] = 0 };
  for (j : 0 .. M - 1) { gours[j] = 0; gatt[j] = 0; graised[j] = 0; gfence[j] = 0; greg[j] = 0; lastq[j] = 0;
                         nf[QI(j, c)] = 0; na[QI(j, c)] = 0 };
  skip
}

/* release: one round of release_script with the holder's fence */
inline release() {
  holding[c] = 0;
  printf("t=%d c%d releases with fence %d\n", now, c, myfence);
  for (m : 0 .. M - 1) {
    if
    :: up[m] && m != lost ->
       release_script(m, tok, myfence);
#ifdef REPLAY
       relt[m] = tok; relf[m] = myfence;
#endif
       skip
    :: else
    fi
  };
  check_blocked();
  gone()
}

proctype client(byte c; byte natt) {
  byte n, m, cache, myfence, ext, lost, phase;  /* phase 0 waiting, 1 holding, 2 gone, 3 plain attempt failed */
  byte tok = (c == PLAIN -> c + C : c);          /* the token: the plain attempt's is c + C */
  bool fr, dupd;
  byte sent[NATT1 + 1];
  bool gours[M], graised[M];
  byte gatt[M], gfence[M], greg[M], lastq[M];

  d_step { lastq[0] = 1; lastq[1] = 1; lastq[2] = 1 }  /* no entry older than the first attempt */
end:
  do
  FATES(phase == 0 && n < natt, attempt(fr))
#ifndef NO_NOTICES
  NOTICE(0)
  NOTICE(1)
  NOTICE(2)
#endif
  /* hold: extensions move keys only (late ones too) */
  :: phase == 1 && ext < EXT -> d_step {
       ext++; printf("t=%d c%d extends\n", now, c);
       for (m : 0 .. M - 1) { if :: up[m] -> extend_script(m, tok) :: else fi }; m = 0 }
  FATES(phase == 1, release())
  FATES(phase == 3, drop_plain())
  od
}

init {
  atomic {
    up[0] = 1; up[1] = 1; up[2] = 1;
    run nemesis();
    run client(1, NATT1); run client(2, NATT2); run client(3, NATT3)
  }
}
