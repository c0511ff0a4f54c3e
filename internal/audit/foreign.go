package audit

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// Foreign locks. The kit's own clients refuse a TTL above max_lock_ttl, and the restart
// hold is computed from it. A user that may run its own Lua (an allow_eval user: other
// Redlock clients, such as node-redlock or redsync) sets whatever TTL its client asks for:
// a lock that outlives max_lock_ttl is not covered by the hold, and a master that crashes
// and rejoins after the hold grants it again while the rest still hold it. The audit
// samples those users' keys (SCAN of their own patterns, bounded) and reports each key
// whose PTTL is above ForeignLockLimit, or that has no TTL at all (a lock that never
// expires). The sample is what the kit can see at one moment: a long lock taken after
// the audit is found by the next one (the monitoring rule RedlockForeignLockUnbounded
// reads the same sample, taken by the supervisor).

// ForeignLock is a key of an allow_eval user that the restart hold does not cover.
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

// Bounds of the sample: SCAN calls of ForeignScanCount keys, at most ForeignScanCalls per
// key pattern, so that a user with many keys costs the master a bounded amount of work.
const (
	ForeignScanCount = 100
	ForeignScanCalls = 10
)

// ForeignLockLimit is the largest PTTL an allow_eval user's key may have: maxLockTTL,
// plus the slack the kit's own wait queue gives a key it hands over (a quarter of the TTL,
// at most a second: lockagent/redlock/lua/queue.lua), since the kit's clients may share
// the user with the foreign ones.
func ForeignLockLimit(maxLockTTL time.Duration) time.Duration {
	return maxLockTTL + min(maxLockTTL/4, time.Second)
}

// SampleForeignLocks scans patterns (a user's key patterns) on c, as the admin, and
// returns the keys whose PTTL is above limit or that have no TTL, and how many keys it
// looked at. Fence registers (key + lua.FenceSuffix) have no TTL by design, and the kit's
// own records (redisconf.KitKeyPrefix) are no lock: both are skipped. Each SCAN and PTTL
// batch is bounded by timeout.
func SampleForeignLocks(ctx context.Context, c *redis.Client, timeout time.Duration, user string, patterns []string, limit time.Duration) (over []ForeignLock, sampled int, err error) {
	for _, pat := range patterns {
		var cursor uint64
		for call := 0; call < ForeignScanCalls; call++ {
			scan, err := nodeCall(ctx, timeout, func(ctx context.Context) (*redis.ScanCmd, error) {
				cmd := c.Scan(ctx, cursor, pat, ForeignScanCount)
				return cmd, cmd.Err()
			})
			if err != nil {
				return nil, sampled, fmt.Errorf("SCAN %s: %w", pat, err)
			}
			var keys []string
			keys, cursor = scan.Val()
			keys = lockKeys(keys)
			ttls, err := pttls(ctx, c, timeout, keys)
			if err != nil {
				return nil, sampled, err
			}
			sampled += len(keys)
			for i, k := range keys {
				switch d := ttls[i]; {
				case d == -2: // gone between SCAN and PTTL
				case d == -1:
					over = append(over, ForeignLock{User: user, Key: k, PTTLMS: NoTTL})
				case time.Duration(d)*time.Millisecond > limit:
					over = append(over, ForeignLock{User: user, Key: k, PTTLMS: d})
				}
			}
			if cursor == 0 {
				break
			}
		}
	}
	return over, sampled, nil
}

// lockKeys keeps the keys that can be locks: not fence registers, not the kit's records.
func lockKeys(keys []string) []string {
	out := keys[:0]
	for _, k := range keys {
		if !strings.HasSuffix(k, lua.FenceSuffix) && !strings.HasPrefix(k, redisconf.KitKeyPrefix) {
			out = append(out, k)
		}
	}
	return out
}

// pttls asks PTTL of every key in one pipeline: milliseconds, -1 without a TTL, -2 gone.
func pttls(ctx context.Context, c *redis.Client, timeout time.Duration, keys []string) ([]int64, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	cmds, err := nodeCall(ctx, timeout, func(ctx context.Context) ([]redis.Cmder, error) {
		pipe := c.Pipeline()
		for _, k := range keys {
			pipe.Do(ctx, "PTTL", k)
		}
		return pipe.Exec(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("PTTL: %w", err)
	}
	out := make([]int64, len(cmds))
	for i, cmd := range cmds {
		n, err := cmd.(*redis.Cmd).Int64()
		if err != nil {
			return nil, fmt.Errorf("PTTL %s: %w", keys[i], err)
		}
		out[i] = n
	}
	return out, nil
}

// MayEval reports whether user may run EVAL on key (ACL DRYRUN, which runs nothing).
func MayEval(ctx context.Context, c *redis.Client, timeout time.Duration, user, key string) (bool, error) {
	return mayRun(ctx, c, timeout, user, "EVAL", "return 1", "1", key)
}

// checkForeignLocks samples the keys of every enabled user with keys that may run EVAL:
// an allow_eval tenant's prefix, or every key for a user that reaches them all (an EVAL
// user beside a single lock user). What cannot be asked or scanned leaves the check
// unmade (m.Unchecked).
func (m *Master) checkForeignLocks(ctx context.Context, c *redis.Client, t Target) {
	if !m.usersRead {
		return // checkUsers said why
	}
	limit := ForeignLockLimit(t.MaxLockTTL)
	for _, u := range m.LockUsers {
		if !u.Enabled || u.Keyless() {
			continue
		}
		keys, _ := u.probeKeys() // a pattern with no key is reported by checkUsers
		if len(keys) == 0 {
			continue
		}
		eval, err := MayEval(ctx, c, t.NodeTimeout, u.Name, keys[0])
		if err != nil {
			m.uncheck("whether user "+u.Name+" may run its own Lua (EVAL) could not be asked, so its locks' TTLs were not sampled", err)
			continue
		}
		if !eval {
			continue // the kit's clients only: they refuse a TTL above max_lock_ttl
		}
		over, sampled, err := SampleForeignLocks(ctx, c, t.NodeTimeout, u.Name, u.keyPatterns(), limit)
		if err != nil {
			m.uncheck("the TTLs of user "+u.Name+"'s keys could not be sampled", err)
			continue
		}
		m.ForeignUsers = append(m.ForeignUsers, u.Name)
		m.ForeignKeysSampled += sampled
		m.ForeignLocks = append(m.ForeignLocks, over...)
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
	return fmt.Sprintf("Master %s holds keys of users that run their own Lua (allow_eval) with a TTL above max_lock_ttl %v (%v with the wait queue's hand-off slack) or none: %s. %s does not cover them: a master that crashes and rejoins after it has forgotten such a lock hands it to a second client while the others still hold it. Fix: make those clients use a TTL of at most max_lock_ttl (node-redlock's duration, redsync's WithExpiry), delete the keys as the admin once their holders are done, or raise max_lock_ttl (and with it the restart delay) above the longest TTL they need.",
		m.Endpoint, t.MaxLockTTL, ForeignLockLimit(t.MaxLockTTL), strings.Join(names, ", "), capitalize(hold))
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
