package audit

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// Foreign locks. The kit's own clients refuse a TTL above max_lock_ttl, and the restart
// hold is computed from it. But a lock user's client is not the only thing that can write
// its keys: a user that may run SET sets whatever TTL it is given (any client holding the
// password: SET NX PX, PEXPIRE), and one that may run its own Lua (EVAL, or EVALSHA of a
// script it loaded: other Redlock clients, such as node-redlock or redsync) too. A lock
// that outlives the hold is not covered by it: a master that crashes and rejoins after the
// hold grants it again while the rest still hold it. The audit samples the keys of every
// enabled non-admin user that may run SET, EVAL or EVALSHA (or another command that sets a
// TTL: MayWriteTTL) on its own keys (SCAN of its patterns, bounded) and reports each key whose PTTL is above the limit
// (foreignLockLimit), or that has no TTL at all (a lock that never expires). The kit's own
// keys pass: its locks have a TTL of at most max_lock_ttl plus the hand-off slack, its
// fence registers (key + lua.FenceSuffix, a decimal) have none, and its wait queues (key +
// queueSuffix, and their pages, + ":<n>": values in the queue's format) are not locks. The sample is what the kit
// can see at one moment: a long lock taken after the audit is found by the next one (the
// monitoring rule RedlockForeignLockUnbounded reads the same sample, taken by the
// supervisor). A sample the bound cut short vouches for nothing: the check is unmade.

// ForeignLock is a lock user's key that the restart hold does not cover.
type ForeignLock struct {
	User string `json:"user"`
	Key  string `json:"key"`
	// PTTLMS is the key's time to live in milliseconds when sampled; NoTTL when it has none.
	PTTLMS int64 `json:"pttl_ms"`
}

// NoTTL is ForeignLock.PTTLMS for a key without a TTL (PTTL -1).
const NoTTL = -1

// String is `"key" (user u, no TTL)` or `"key" (user u, PTTL about 1h0m0s)`: the TTL
// rounded (to the minute above one), so that two audits a moment apart say the same.
func (f ForeignLock) String() string {
	ttl := "no TTL"
	if f.PTTLMS != NoTTL {
		d := time.Duration(f.PTTLMS) * time.Millisecond
		if d >= time.Minute {
			d = d.Round(time.Minute)
		} else {
			d = d.Round(time.Second)
		}
		ttl = "PTTL about " + d.String()
	}
	return fmt.Sprintf("%q (user %s, %s)", f.Key, f.User, ttl)
}

// Bounds of the sample: SCAN MATCH walks the whole keyspace, whoever's keys they are, so
// the bound is in keys walked: at most ForeignScanCalls SCAN calls of COUNT
// ForeignScanCount per key pattern (about 100,000 keys of the keyspace), so that a large
// keyspace costs the master a bounded amount of work. A pattern whose SCAN has not ended
// by then leaves the sample cut short.
const (
	ForeignScanCount = 1000
	ForeignScanCalls = 100
)

// ForeignLockLimit is the largest PTTL a lock user's key may have for a given
// max_lock_ttl: maxLockTTL, plus the slack the kit's own wait queue gives a key it hands
// over (a quarter of the TTL, at most a second: lockagent/redlock/lua/queue.lua). The
// audit's limit is also at most the restart hold less the drift margin (foreignLockLimit).
func ForeignLockLimit(maxLockTTL time.Duration) time.Duration {
	return maxLockTTL + min(maxLockTTL/4, time.Second)
}

// foreignLockLimit is the limit on master m: ForeignLockHoldLimit under the restart hold
// it is judged by.
func (m Master) foreignLockLimit(t Target) time.Duration {
	return ForeignLockHoldLimit(t.MaxLockTTL, m.restartHold(t), t.DriftFactor)
}

// ForeignLockHoldLimit is ForeignLockLimit(maxLockTTL), and no more than the restart hold
// (0: unknown) less the drift margin, so that a lock's holder (which counts the drift off
// its validity) never believes it valid after a master that forgot it has rejoined. Under
// a hold of less than maxLockTTL plus the slack plus the drift, a key the kit's wait queue
// has just handed over is above it until its waiter's attempt sets it anew (at most the
// slack later).
func ForeignLockHoldLimit(maxLockTTL, hold time.Duration, driftFactor float64) time.Duration {
	limit := ForeignLockLimit(maxLockTTL)
	if hold > 0 {
		limit = max(min(limit, hold-Drift(maxLockTTL, driftFactor)), 0)
	}
	return limit
}

// restartHold is the restart delay the findings judge master m by: the configured one,
// else the one its runtime publishes (0: neither is known).
func (m Master) restartHold(t Target) time.Duration {
	return cmp.Or(t.RestartDelay, m.PublishedRestartDelay)
}

// ForeignSample is what SampleForeignLocks saw.
type ForeignSample struct {
	// Over are the keys above the limit or without a TTL.
	Over []ForeignLock
	// Sampled counts the keys whose TTL was read (the kit's records left out).
	Sampled int
	// CutShort names the patterns whose SCAN the bound stopped before it ended: keys
	// matching them may not have been seen.
	CutShort []string
}

// SampleForeignLocks scans patterns (a user's key patterns) on c, as the admin, at most
// maxCalls SCAN calls of ForeignScanCount per pattern, and returns the keys whose PTTL is
// above limit or that have no TTL. The kit's fence registers and wait queues, and its
// records (redisconf.KitKeyPrefix), are skipped: a key named like a register or a queue
// that does not hold one is checked like any other. Each SCAN and PTTL batch is bounded by
// timeout.
func SampleForeignLocks(ctx context.Context, c *redis.Client, timeout time.Duration, user string, patterns []string, limit time.Duration, maxCalls int) (ForeignSample, error) {
	var s ForeignSample
	for _, pat := range patterns {
		var cursor uint64
		for call := 0; ; call++ {
			if call == maxCalls {
				s.CutShort = append(s.CutShort, pat)
				break
			}
			scan, err := nodeCall(ctx, timeout, func(ctx context.Context) (*redis.ScanCmd, error) {
				cmd := c.Scan(ctx, cursor, pat, ForeignScanCount)
				return cmd, cmd.Err()
			})
			if err != nil {
				return s, fmt.Errorf("SCAN %s: %w", pat, err)
			}
			var keys []string
			keys, cursor = scan.Val()
			keys = lockKeys(keys)
			ttls, values, err := pttls(ctx, c, timeout, keys)
			if err != nil {
				return s, err
			}
			for i, k := range keys {
				d := ttls[i]
				if d == -2 || kitRecord(k, d, values[i]) { // gone between SCAN and PTTL, or the kit's
					continue
				}
				s.Sampled++
				switch {
				case d == -1:
					s.Over = append(s.Over, ForeignLock{User: user, Key: k, PTTLMS: NoTTL})
				case time.Duration(d)*time.Millisecond > limit:
					s.Over = append(s.Over, ForeignLock{User: user, Key: k, PTTLMS: d})
				}
			}
			if cursor == 0 {
				break
			}
		}
	}
	return s, nil
}

// lockKeys keeps the keys that can be locks: not the kit's records.
func lockKeys(keys []string) []string {
	out := keys[:0]
	for _, k := range keys {
		if !strings.HasPrefix(k, redisconf.KitKeyPrefix) {
			out = append(out, k)
		}
	}
	return out
}

// namedRecord reports whether key is named like a fence register or a wait queue, whose
// value the sample reads to tell the kit's from a lock.
func namedRecord(key string) bool {
	return strings.HasSuffix(key, lua.FenceSuffix) || strings.HasSuffix(key, queueSuffix) || queuePage.MatchString(key)
}

// queueSuffix names a lock's wait queue (lockagent/redlock.queueSuffix).
const queueSuffix = ":waitq"

var (
	fenceValue = regexp.MustCompile(`^[0-9]+$`)
	// queueHeader and queueEntry are the wait queue's lines (lockagent/redlock/lua/queue.lua):
	// "<end of the open window>[ <note>][ +<first page>-<last page>]", then "<id> <ticket>
	// <token> <lease end> <ttl> <attempt>". A page (queuePage) is a queue whose header is "0".
	queueHeader = regexp.MustCompile(`^[0-9]+ ?[0-9A-Fa-f:]* ?(\+[0-9]+-[0-9]+)?$`)
	queuePage   = regexp.MustCompile(queueSuffix + `:[0-9]+$`)
	queueEntry  = regexp.MustCompile(`^[^ ]+ [0-9]+ [^ ]+ [0-9]+ [0-9]+ [0-9]+$`)
)

// kitRecord reports whether key, with PTTL pttl and value v ("" when not a string), is a
// fence register (no TTL, a decimal) or a wait queue (a value in the queue's format).
func kitRecord(key string, pttl int64, v string) bool {
	switch {
	case strings.HasSuffix(key, lua.FenceSuffix):
		return pttl == -1 && fenceValue.MatchString(v)
	case strings.HasSuffix(key, queueSuffix), queuePage.MatchString(key):
		return isQueue(v)
	}
	return false
}

// isQueue reports whether v is a wait queue: its header line, then entries, each line
// ended by a newline.
func isQueue(v string) bool {
	if !strings.HasSuffix(v, "\n") {
		return false
	}
	lines := strings.Split(strings.TrimSuffix(v, "\n"), "\n")
	if !queueHeader.MatchString(lines[0]) {
		return false
	}
	for _, l := range lines[1:] {
		if !queueEntry.MatchString(l) {
			return false
		}
	}
	return true
}

// pttls asks PTTL of every key in one pipeline (milliseconds, -1 without a TTL, -2 gone),
// and GET of those named like the kit's records ("" for another type or none).
func pttls(ctx context.Context, c *redis.Client, timeout time.Duration, keys []string) ([]int64, []string, error) {
	if len(keys) == 0 {
		return nil, nil, nil
	}
	var ttlCmds, getCmds []*redis.Cmd
	_, _ = nodeCall(ctx, timeout, func(ctx context.Context) ([]redis.Cmder, error) {
		pipe := c.Pipeline()
		ttlCmds, getCmds = ttlCmds[:0], getCmds[:0]
		for _, k := range keys {
			ttlCmds = append(ttlCmds, pipe.Do(ctx, "PTTL", k))
			if namedRecord(k) {
				getCmds = append(getCmds, pipe.Do(ctx, "GET", k))
			} else {
				getCmds = append(getCmds, nil)
			}
		}
		return pipe.Exec(ctx) // a GET of another type fails alone: read per command below
	})
	ttls, values := make([]int64, len(keys)), make([]string, len(keys))
	for i, cmd := range ttlCmds {
		n, err := cmd.Int64()
		if err != nil {
			return nil, nil, fmt.Errorf("PTTL %s: %w", keys[i], err)
		}
		ttls[i] = n
		if g := getCmds[i]; g != nil {
			values[i], _ = g.Text() // WRONGTYPE or gone: not a record
		}
	}
	return ttls, values, nil
}

// checkForeignLocks samples the keys of every enabled non-admin user that may write its
// keys with a TTL of its choosing (MayWriteTTL): SET (every lock user of the kit, whose
// clients refuse a TTL above max_lock_ttl, but whose password lets any client do
// otherwise), or its own Lua (EVAL, or EVALSHA of a script it loaded). What cannot be asked or scanned, and a sample
// the bound cut short, leaves the check unmade (m.Unchecked).
func (m *Master) checkForeignLocks(ctx context.Context, c *redis.Client, t Target) {
	if !m.usersRead {
		return // checkUsers said why
	}
	limit := m.foreignLockLimit(t)
	for _, u := range m.LockUsers {
		if !u.Enabled || u.Keyless() {
			continue
		}
		keys, _ := u.probeKeys() // a pattern with no key is reported by checkUsers
		if len(keys) == 0 {
			continue
		}
		writes, err := MayWriteTTL(ctx, c, t.NodeTimeout, u.Name, keys[0])
		if err != nil {
			m.uncheck("whether user "+u.Name+" may set a key's TTL (SET, PEXPIRE, EVAL, EVALSHA and their kin) could not be asked, so its locks' TTLs were not sampled", err)
			continue
		}
		if !writes {
			continue // it cannot write a lock
		}
		s, err := SampleForeignLocks(ctx, c, t.NodeTimeout, u.Name, u.keyPatterns(), limit, ForeignScanCalls)
		if err != nil {
			m.uncheck("the TTLs of user "+u.Name+"'s keys could not be sampled", err)
			continue
		}
		if len(s.CutShort) > 0 {
			m.uncheck(fmt.Sprintf("the sample of user %s's keys (%s) was cut short after %d keys of the keyspace (%d SCAN calls of COUNT %d, %d of its keys read): a long lock among the rest would not have been seen. Fix: audit a master with fewer keys, or delete the keys nothing uses", u.Name, strings.Join(s.CutShort, ", "), ForeignScanCalls*ForeignScanCount, ForeignScanCalls, ForeignScanCount, s.Sampled), nil)
		}
		m.ForeignUsers = append(m.ForeignUsers, u.Name)
		m.ForeignKeysSampled += s.Sampled
		m.ForeignLocks = append(m.ForeignLocks, s.Over...)
	}
}

// MayWriteTTL reports whether user may run, on key, one of the commands that leave a key
// with a TTL of the caller's choosing or none (ttlWriters; ACL DRYRUN, which runs
// nothing): SET and its kin, the EXPIRE family, RESTORE, and Lua (EVAL, EVALSHA of a
// script it loaded, FCALL of the kit's functions, which take the TTL from the caller).
func MayWriteTTL(ctx context.Context, c *redis.Client, timeout time.Duration, user, key string) (bool, error) {
	for _, cmd := range ttlWriters(key) {
		ok, err := mayRun(ctx, c, timeout, user, cmd...)
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// ttlWriters are the commands MayWriteTTL asks about, with their arguments for key.
func ttlWriters(key string) [][]any {
	return [][]any{
		{"SET", key, "x", "PX", "1"},
		{"PSETEX", key, "1", "x"},
		{"SETEX", key, "1", "x"},
		{"GETEX", key, "PX", "1"},
		{"PEXPIRE", key, "1"},
		{"EXPIRE", key, "1"},
		{"PEXPIREAT", key, "1"},
		{"EXPIREAT", key, "1"},
		{"PERSIST", key},
		{"RESTORE", key, "0", "x"},
		{"EVAL", "return 1", "1", key},
		{"EVALSHA", "0000000000000000000000000000000000000000", "1", key},
		{"FCALL", "f", "1", key},
	}
}

// foreignLockProblem is the finding for the foreign locks of master ep, or "" when none.
func (m Master) foreignLockProblem(t Target, restartDelay time.Duration) string {
	if len(m.ForeignLocks) == 0 {
		return ""
	}
	const shown = 5
	var names []string
	for i, f := range m.ForeignLocks {
		if i == shown {
			names = append(names, fmt.Sprintf("and %d more", len(m.ForeignLocks)-shown))
			break
		}
		names = append(names, f.String())
	}
	hold := "the restart hold"
	if restartDelay > 0 {
		hold = fmt.Sprintf("the restart hold (%v)", restartDelay)
	}
	return fmt.Sprintf("Master %s holds keys of lock users with a TTL above %v (max_lock_ttl %v with the wait queue's hand-off slack, and no more than the restart hold less the drift margin) or none: %s. %s does not cover them: a master that crashes and rejoins after it has forgotten such a lock hands it to a second client while the others still hold it. Fix: make those clients use a TTL of at most max_lock_ttl (the kit's clients refuse more; node-redlock's duration, redsync's WithExpiry; a client that sets its own keys with SET or PEXPIRE), delete the keys as the admin once their holders are done, or raise max_lock_ttl (and with it the restart delay) above the longest TTL they need.",
		m.Endpoint, m.foreignLockLimit(t), t.MaxLockTTL, strings.Join(names, ", "), capitalize(hold))
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
