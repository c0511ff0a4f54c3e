/*
 * The wait queue's hand-off protocol (lockagent/redlock), checked exhaustively by Spin.
 *
 * One proctype per actor: client (a queued Acquire, then hold, extend, release),
 * nemesis (time, AOF rewrites, restarts, crashes). The masters are data: each script
 * runs atomically (d_step), as a Redis script does. One inline per script function:
 *
 *   inline              script function (lockagent/redlock/scripts.go)
 *   ------------------  ---------------------------------------------------------------
 *   acquire_queued      acquireQueuedScript (its "new" branch is acquireScript + queue)
 *   release_script      releaseScript (not durable), the release half of releaseBody
 *   handto              handto (logged and unlogged hand-off), called by both above
 *   noted / proves      noted / proves (is the note the key as it is now)
 *   extend_script       extendScript (PEXPIRE, or SET NX where the key is gone)
 *   fence_script        fenceScript (the fallback fence round, with its reserve)
 *   granted             queuedWait.granted (waitqueue.go: a hand-off notice arrives)
 *   record_reply        queuedWait.attempt's reply handling (waitqueue.go)
 *   try_lock            queuedWait.tryLock (waitqueue.go)
 *   rewrite / restart   BGREWRITEAOF; a restart that replays the AOF (crash with an
 *                       immediate restart, or a clean SHUTDOWN without a rewrite)
 *   crash_hold          a crash under the kit's restart hold (down past every TTL)
 *
 * What persists: a logged write (acquisitions, logged hand-offs, extensions, registers)
 * is in the AOF at once (appendfsync always): d* below. Unlogged writes (releases,
 * unlogged hand-offs, the queue and its note) live in memory only, but a rewrite copies
 * all of memory, note and queue included, into the AOF's base. A restart replays the AOF:
 * memory := d*. A clean restart with a rewrite first is a rewrite (memory unchanged).
 *
 * Abstractions: time is a global tick; keys hold absolute expiries (a master restores
 * them as PXAT); a client's grant since is the send time of the attempt it names, its
 * validity since + TTL (no drift: a key set at or after since lives at least TTL). A
 * token is the client's id (one acquisition each). Tickets are client ids (the queue's
 * order). Not modelled: windows for polling clients, queue leases (waiters do not die),
 * splits and yield (liveness only), extension of the reported validity (an extension
 * moves keys only: a stricter client).
 *
 * Variants (-D): NOTE_TRUSTED: the note is trusted by its token alone (the fix of the
 * stale-note hole removed); RELEASE_UNPROVEN: a release of our key hands over with the
 * releaser's fence + 1 without the note's proof (the ac95557 fix removed). Both must fail.
 */

#define M      3      /* masters */
#define C      3      /* clients: ids 1..C */
#define Q      2      /* majority */
#define TTL    2      /* the clients' TTL, in ticks */
#define SLACK  1      /* a logged hand-off's slack */
#define CHAIN  3      /* fences a logged hand-off or a fence round reserves */
#ifndef TMAX
#define TMAX   4      /* last tick */
#endif
#ifndef NATT
#define NATT   3      /* attempts per client */
#endif
#ifndef LOSSY
#define LOSSY  0      /* a round may lose one master's message */
#endif
#ifndef REWRITES
#define REWRITES NFAULT  /* of which AOF rewrites on every master */
#endif
#ifndef RESTARTS
#define RESTARTS NFAULT  /* ... restarts of every master (crash or clean, at once) */
#endif
#ifndef CRASHES
#define CRASHES NFAULT   /* ... crashes under the restart hold */
#endif
#ifndef EXT
#define EXT    0      /* extensions per holder (late ones included) */
#endif
#ifndef NFAULT
#define NFAULT 2      /* rewrites, restarts and crashes in all */
#endif
#define QI(m, c) ((m) * (C + 1) + (c))  /* queue/notice slot of client c on master m */

byte now;

/* memory of each master */
byte key[M], kexp[M], reg[M];
byte ntok[M], nfen[M], nexp[M];       /* the queue's note: token, fence, expiry */
bool inq[M * (C + 1)];                /* the queue: waiter c is in line on m */
byte qatt[M * (C + 1)];               /* ... with the attempt that last renewed it */
bool up[M];
byte downto[M];                       /* a crashed master's return (crash_hold) */
/* what a restart restores: the AOF (logged writes and the last rewrite's base) */
byte dkey[M], dkexp[M], dreg[M];
byte dntok[M], dnfen[M], dnexp[M];
bool dinq[M * (C + 1)];
byte dqatt[M * (C + 1)];

/* hand-off notices on the clients' grant channels: fence and attempt, 0: none */
byte nf[M * (C + 1)], na[M * (C + 1)];

/* what the clients report */
bool holding[C + 1];
byte hdead[C + 1];    /* reported validity: holding until now reaches it */
byte lastFence;
byte faults, rewrites, restarts, crashes;

/* ---- scripts (each runs atomically, inside a d_step of its caller) ---- */

/* noted: the note's fence when it names tok and the key's expiry as it is now, else 0. */
inline noted(m, tok, g) {
#ifdef NOTE_TRUSTED
  g = (ntok[m] == tok -> nfen[m] : 0);
#else
  g = ((ntok[m] == tok && key[m] == tok && nexp[m] == kexp[m]) -> nfen[m] : 0);
#endif
}

/* the first waiter in line (lowest ticket) other than except; 0: none */
inline head_of(m, except, h) {
  h = 0;
  for (j : 1 .. C) {
    if
    :: h == 0 && j != except && inq[QI(m, j)] -> h = j
    :: else
    fi
  }
}

/* handto: the key to waiter e; f the releaser's fence (0: none), proven by the note,
 * left the released key's life. Tells e on its grant channel. */
inline handto(m, e, f, proven, left) {
  if
  :: proven && reg[m] > f && left >= TTL ->
     /* unlogged: the key keeps the released expiry, fence f + 1 */
     key[m] = e; kexp[m] = now + left; g = f + 1
  :: else ->
     key[m] = e; kexp[m] = now + TTL + SLACK; dkey[m] = e; dkexp[m] = kexp[m];
     g = (reg[m] > f -> reg[m] : f) + 1;
     reg[m] = g + CHAIN - 1; dreg[m] = reg[m]
  fi;
  ntok[m] = e; nfen[m] = g; nexp[m] = kexp[m];
  printf("t=%d m%d: hand-off to c%d fence %d, key until %d, register %d\n", now, m, e, g, kexp[m], reg[m]);
  inq[QI(m, e)] = 0;
  nf[QI(m, e)] = g; na[QI(m, e)] = qatt[QI(m, e)]
}

/* acquire_queued: reply 1 set (rreg: register before), 2 ours (rg: the note's fence,
 * 0 none), 0 refused (queued, or the free key handed to an earlier waiter). */
inline acquire_queued(m, c, n, prop) {
  rreg = reg[m]; rg = 0;
  if
  :: key[m] == c -> noted(m, c, rg); rep = 2
  :: key[m] == 0 ->
     head_of(m, c, h);
     if
     :: h != 0 && h < c ->
        inq[QI(m, c)] = 1; qatt[QI(m, c)] = n;
        handto(m, h, 0, 0, 0); rep = 0
     :: else ->
        key[m] = c; kexp[m] = now + TTL; dkey[m] = c; dkexp[m] = kexp[m];
        if :: reg[m] < prop -> reg[m] = prop; dreg[m] = prop :: else fi;
        inq[QI(m, c)] = 0; ntok[m] = 0; nfen[m] = 0; nexp[m] = 0; rep = 1
     fi
  :: else ->
     inq[QI(m, c)] = 1; qatt[QI(m, c)] = n; rep = 0
  fi
}

/* release_script (not durable): DEL of our key, unlogged; then the first waiter gets
 * the key, free or just released. */
inline release_script(m, c, f) {
  proven = 0; left = 0;
  if
  :: key[m] == c ->
#ifdef RELEASE_UNPROVEN
     proven = 1;
#else
     noted(m, c, g); proven = (g != 0 && g == f);
#endif
     left = kexp[m] - now; key[m] = 0; kexp[m] = 0; ours = 1
  :: else -> ours = 0
  fi;
  if
  :: key[m] == 0 ->
     head_of(m, 0, h);
     if
     :: h != 0 -> hf = (ours -> f : 0); handto(m, h, hf, proven, left)
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
inline fence_script(m, c, p) {
  if
  :: key[m] == c ->
     if :: reg[m] < p + CHAIN - 1 -> reg[m] = p + CHAIN - 1; dreg[m] = reg[m] :: else fi;
     confirmed++
  :: else -> refused++
  fi
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
  for (q : 1 .. C) { inq[QI(m, q)] = dinq[QI(m, q)]; qatt[QI(m, q)] = dqatt[QI(m, q)] };
  if :: kexp[m] <= now -> key[m] = 0; kexp[m] = 0 :: else fi
}

inline expire() {
  for (j : 0 .. M - 1) {
    if :: key[j] != 0 && kexp[j] <= now -> key[j] = 0; kexp[j] = 0 :: else fi;
    if :: dkey[j] != 0 && dkexp[j] <= now -> dkey[j] = 0; dkexp[j] = 0 :: else fi;
    if :: !up[j] && downto[j] <= now -> restore(j); up[j] = 1 :: else fi
  }
}

proctype nemesis() {
  byte j, m, q;
  do
  :: now < TMAX -> d_step { now++; expire(); printf("t=%d\n", now) }
  /* on every master at once (an operator's action, a deploy) */
  :: faults < NFAULT && rewrites < REWRITES -> d_step { for (m : 0 .. M - 1) { if :: up[m] -> rewrite(m) :: else fi }; faults++; rewrites++; m = 0;
                                 printf("t=%d all masters: AOF rewrite\n", now) }
  :: faults < NFAULT && restarts < RESTARTS -> d_step { for (m : 0 .. M - 1) { if :: up[m] -> restore(m) :: else fi }; faults++; restarts++; m = 0;
                                 printf("t=%d all masters: restart (AOF replayed)\n", now) }
  /* on one master: master 0 (the masters are alike, and the clients may leave any
   * master out of any round) */
#ifdef ONE_MASTER_FAULTS
  :: faults < NFAULT && up[0] -> d_step { m = 0; rewrite(m); faults++; m = 0; printf("t=%d m0: AOF rewrite\n", now) }
  :: faults < NFAULT && up[0] -> d_step { m = 0; restore(m); faults++; m = 0; printf("t=%d m0: restart (AOF replayed)\n", now) }
#endif
  :: faults < NFAULT && crashes < CRASHES && up[0] -> d_step { crashes++; up[0] = 0; downto[0] = now + TTL + SLACK; faults++; printf("t=%d m0: crash, held down until %d\n", now, downto[0]) }
  :: now == TMAX -> break
  od
}

/* ---- the client (waitqueue.go) ---- */

/* granted: a notice (fence f of the attempt a) counts only for the latest hand-off. */
inline granted(m, f, a) {
  if
  :: a < lastq[m] -> skip                                      /* before a queued answer: stale */
  :: gours[m] && (a < gatt[m] || a == gatt[m] && graised[m]) -> skip  /* known, or older */
  :: else -> gours[m] = 1; gatt[m] = a; graised[m] = 1; gfence[m] = f; greg[m] = f
  fi
}

/* deliver: the notice on m's grant channel reaches the client; it may come again once. */
inline deliver() {
  printf("t=%d c%d: notice from m%d: fence %d for attempt %d\n", now, c, m, nf[QI(m, c)], na[QI(m, c)]);
  granted(m, nf[QI(m, c)], na[QI(m, c)]);
  if :: nf[QI(m, c)] = 0; na[QI(m, c)] = 0 :: !dupd -> dupd = 1 fi
}

/* record_reply: what an attempt's reply on m says. */
inline record_reply(m) {
  if
  :: rep == 1 ->
     gours[m] = 1; gatt[m] = n; greg[m] = rreg;
     graised[m] = (rreg < prop); gfence[m] = (rreg < prop -> prop : 0)
  :: rep == 2 ->
     if :: !gours[m] -> gours[m] = 1; gatt[m] = lastq[m]; graised[m] = 0; greg[m] = rreg :: else fi;
     if :: rg != 0 && (!graised[m] || gfence[m] != rg) -> graised[m] = 1; gfence[m] = rg :: else fi
  :: rep == 0 -> lastq[m] = n; gours[m] = 0; graised[m] = 0
  fi;
  if :: rreg > cache -> cache = rreg :: else fi
}

/* try_lock: live grants on a majority; the deadline is the majority's oldest since +
 * TTL; the fence one a majority raised to, else a fence round above every register. */
inline try_lock() {
  live = 0; dl = 255; dl2 = 255; fence = 0; readmax = 0;
  for (j : 0 .. M - 1) {
    if
    :: gours[j] && now < sent[gatt[j]] + TTL ->
       live++;
       if :: greg[j] > readmax -> readmax = greg[j] :: else fi;
       /* dl: the Q-th latest since + TTL (M = 3, Q = 2: the second latest) */
       if
       :: dl == 255 -> dl = sent[gatt[j]] + TTL
       :: dl != 255 && sent[gatt[j]] + TTL > dl -> dl2 = dl; dl = sent[gatt[j]] + TTL
       :: dl != 255 && sent[gatt[j]] + TTL <= dl && (dl2 == 255 || sent[gatt[j]] + TTL > dl2) -> dl2 = sent[gatt[j]] + TTL
       :: else
       fi
    :: else
    fi
  };
  for (j : 0 .. M - 1) {
    agree = 0;
    for (k : 0 .. M - 1) {
      if
      :: gours[j] && graised[j] && gours[k] && graised[k] && gfence[k] == gfence[j] &&
         now < sent[gatt[k]] + TTL && now < sent[gatt[j]] + TTL -> agree++
      :: else
      fi
    };
    if :: agree >= Q && gfence[j] > fence -> fence = gfence[j] :: else fi
  }
}

/* forget: the client's scratch variables back to 0 after each step (fewer states) */
inline forget() {
  j = 0; k = 0; h = 0; g = 0; rep = 0; rreg = 0; rg = 0; live = 0; dl = 0; dl2 = 0;
  readmax = 0; agree = 0; left = 0; hf = 0; proven = 0; ours = 0; confirmed = 0; refused = 0
}

/* a round: on each master the script runs (d_step), or its message is lost (at most
 * one per round), or the master is down. A round is atomic: no other actor's step falls
 * between its masters (an abstraction: the model's rounds reach the masters in the same
 * order relative to other rounds). */
#define ROUND(script) \
  atomic { \
  m = 0; \
  do \
  :: m == M -> m = 0; lost = 0; break \
  :: m < M && up[m] -> d_step { script; m++ } \
  :: m < M && (!up[m] || !lost && LOSSY) -> lost = lost || up[m]; m++ \
  od \
  }

proctype client(byte c; byte natt) {
  byte n, j, k, m, h, g, rep, rreg, rg, prop, cache, live, dl, dl2, fence, readmax, agree, confirmed, refused, left, ext, hf;
  bool proven, ours, lost, dupd;
  byte sent[NATT + 1];
  bool gours[M], graised[M];
  byte gatt[M], gfence[M], greg[M], lastq[M];

  d_step { lastq[0] = 1; lastq[1] = 1; lastq[2] = 1 }  /* no entry older than the first attempt */
wait:
  do
  :: n < natt ->
     d_step { n++; sent[n] = now; prop = cache + 1 };
     ROUND(acquire_queued(m, c, n, prop); record_reply(m);
           printf("t=%d m%d: c%d attempt %d: reply %d (register %d, note fence %d)\n", now, m, c, n, rep, rreg, rg); forget());
     goto lock
  :: nf[QI(0, c)] != 0 -> d_step { m = 0; deliver(); m = 0 }; goto lock
  :: nf[QI(1, c)] != 0 -> d_step { m = 1; deliver(); m = 0 }; goto lock
  :: nf[QI(2, c)] != 0 -> d_step { m = 2; deliver(); m = 0 }; goto lock
  :: n == natt -> goto done
  od;
lock:
  skip;
  d_step { try_lock(); skip };
  if
  :: live < Q -> d_step { forget(); fence = 0 }; goto wait
  :: live >= Q && fence != 0 -> skip
  :: live >= Q && fence == 0 -> d_step { forget(); fence = 0 }; goto wait   /* the fence round timed out */
  :: live >= Q && fence == 0 ->
     ROUND(fence_script(m, c, readmax + 1);
           printf("t=%d m%d: c%d fence round %d: register %d\n", now, m, c, readmax + 1, reg[m]); j = 0; k = 0);
     if
     :: confirmed >= Q -> d_step { fence = readmax + 1; confirmed = 0; refused = 0 }
     :: refused > M - Q ->   /* ErrLost: look again */
        d_step { for (j : 0 .. M - 1) { gours[j] = 0; graised[j] = 0 }; forget(); fence = 0 }; goto wait
     :: else -> d_step { forget(); fence = 0 }; goto wait   /* unavailable, retryable: the grants are kept */
     fi
  fi;
  d_step {
    if
    :: now >= dl2 -> forget(); fence = 0; ours = 1   /* the validity ran out first */
    :: else ->
    printf("t=%d c%d HOLDS with fence %d, valid until %d\n", now, c, fence, dl2);
    /* exclusion within the reported validity */
    for (j : 1 .. C) { assert(j == c || !holding[j] || now >= hdead[j]) };
    /* fences strictly increasing in acquisition order */
    assert(fence > lastFence);
    lastFence = fence;
    /* the validity never past the key's life on a majority */
    k = 0;
    for (j : 0 .. M - 1) {
      if
      :: up[j] && key[j] != 0 && kexp[j] >= dl2 -> k++
      :: !up[j] && downto[j] >= dl2 -> k++
      :: else
      fi
    };
    assert(k >= Q);
    holding[c] = 1; hdead[c] = dl2;
    forget()
    fi
  };
  if
  :: ours -> ours = 0; goto wait
  :: else
  fi;
  /* hold: extensions move keys only (late ones too) */
  do
  :: ext < EXT && up[0] -> d_step { ext++; m = 0; extend_script(m, c); m = 0 }
  :: ext < EXT && up[1] -> d_step { ext++; m = 1; extend_script(m, c); m = 0 }
  :: ext < EXT && up[2] -> d_step { ext++; m = 2; extend_script(m, c); m = 0 }
  :: break
  od;
  skip;
  d_step { holding[c] = 0; printf("t=%d c%d stops holding\n", now, c) };
  ROUND(printf("t=%d m%d: c%d releases\n", now, m, c); release_script(m, c, fence); forget());
done:
  skip
}

init {
  atomic {
    up[0] = 1; up[1] = 1; up[2] = 1;
    run nemesis();
    /* client 1 (the first ticket) may try NATT times, the others once */
    run client(1, NATT); run client(2, 1); run client(3, 1)
  }
}
