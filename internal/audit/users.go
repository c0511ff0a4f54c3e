package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

// Users. Every ACL user but the admin is checked, not only the one validating: each must
// have a password (no nopass), and none may run a command the server itself marks as
// dangerous (see ServerCommand.Why), asked per user with ACL DRYRUN, which runs nothing.
// A question the server does not answer (ACL renamed away, no ACL DRYRUN, an admin without
// ACL rights) leaves the check unmade, which is reported as such, never as "not allowed".

// LockUserACL is one user's ACL as the server reports it (ACL GETUSER), and what it may run.
type LockUserACL struct {
	Name      string   `json:"name"`
	Enabled   bool     `json:"enabled"`   // "on": it can log in
	NoPass    bool     `json:"nopass"`    // any password, or none, logs it in
	Passwords int      `json:"passwords"` // how many password hashes it has
	Keys      []string `json:"keys"`      // key patterns without "~" ("billing:*")
	Channels  []string `json:"channels"`  // channel patterns without "&"
	Selectors int      `json:"selectors"` // Redis 7 selectors: more rules beside the root ones
	// Dangerous are the commands ("flushall", "function|load") ACL DRYRUN said it may run
	// among those the server marks dangerous; nil when none, or when not asked (DangerousChecked).
	Dangerous        []string `json:"dangerous,omitempty"`
	DangerousChecked bool     `json:"dangerous_checked"`
	// selectorKeys are the key patterns of its selectors (probed like Keys).
	selectorKeys []string
	// hashes are its password hashes (SHA-256, hex) as ACL GETUSER reports them.
	hashes []string
	// WritesDeployment are the hash writes it may run on hold.DeploymentKey: with them a client
	// can forge the restart delay the master's runtime publishes.
	WritesDeployment []string `json:"writes_deployment,omitempty"`
}

// AllKeys reports whether u reaches every key, through its root rules or a selector.
func (u LockUserACL) AllKeys() bool { return slices.Contains(u.keyPatterns(), "*") }

// keyPatterns are u's key patterns, its selectors' included: a selector's keys are as much
// the user's as its root ones.
func (u LockUserACL) keyPatterns() []string { return append(slices.Clone(u.Keys), u.selectorKeys...) }

// confined reports whether u is an enabled user confined to some keys (a tenant): next to
// one, a user that reaches every key breaks the isolation. A keyless user (monitoring)
// is not a tenant.
func (u LockUserACL) confined() bool { return u.Enabled && len(u.keyPatterns()) > 0 && !u.AllKeys() }

// Keyless reports whether u reaches no key at all (a monitoring user).
func (u LockUserACL) Keyless() bool { return len(u.Keys) == 0 && u.Selectors == 0 }

// adminName is the user the audit logs in as.
func (t Target) adminName() string {
	if t.Username == "" {
		return "default"
	}
	return t.Username
}

// readUsers reads every ACL user, the admin included (its nopass matters too).
func readUsers(ctx context.Context, c *redis.Client, timeout time.Duration) ([]LockUserACL, error) {
	names, err := nodeCall(ctx, timeout, func(ctx context.Context) ([]string, error) { return c.ACLUsers(ctx).Result() })
	if err != nil {
		return nil, fmt.Errorf("ACL USERS: %w", err)
	}
	sort.Strings(names)
	users := make([]LockUserACL, 0, len(names))
	for _, name := range names {
		reply, err := nodeCall(ctx, timeout, func(ctx context.Context) (any, error) { return c.Do(ctx, "ACL", "GETUSER", name).Result() })
		if err != nil {
			return nil, fmt.Errorf("ACL GETUSER %s: %w", name, err)
		}
		fields := replyMap(reply)
		if len(fields) == 0 {
			return nil, fmt.Errorf("ACL GETUSER %s: unreadable reply %v", name, reply)
		}
		flags := toStrings(fields["flags"])
		u := LockUserACL{Name: name, Enabled: slices.Contains(flags, "on"), NoPass: slices.Contains(flags, "nopass"),
			Keys: patterns(fields["keys"], "~"), Channels: patterns(fields["channels"], "&")}
		if p, ok := fields["passwords"].([]any); ok {
			u.Passwords = len(p)
			u.hashes = toStrings(p)
		}
		if sel, ok := fields["selectors"].([]any); ok {
			u.Selectors = len(sel)
			for _, one := range sel {
				u.selectorKeys = append(u.selectorKeys, patterns(replyMap(one)["keys"], "~")...)
			}
		}
		users = append(users, u)
	}
	return users, nil
}

// emptyPasswordHash is ACL GETUSER's hash of the empty password (ACL SETUSER u >).
const emptyPasswordHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// passwordFindings says, one line each, which enabled users log in with the empty
// password, and which share a password with another enabled user: a client of one then
// logs in as the other, with its rights (a lock client as the admin, a tenant as another).
func passwordFindings(users []LockUserACL) []string {
	var out []string
	owners := map[string][]string{}
	for _, u := range users {
		if !u.Enabled || u.NoPass {
			continue // nopass is reported on its own
		}
		for _, h := range u.hashes {
			if h == emptyPasswordHash {
				out = append(out, fmt.Sprintf("user %s logs in with the empty password", u.Name))
				continue
			}
			if !slices.Contains(owners[h], u.Name) {
				owners[h] = append(owners[h], u.Name)
			}
		}
	}
	hashes := make([]string, 0, len(owners))
	for h := range owners {
		hashes = append(hashes, h)
	}
	sort.Strings(hashes)
	for _, h := range hashes {
		if names := owners[h]; len(names) > 1 {
			out = append(out, fmt.Sprintf("users %s share a password (hash %s...): a client of one can log in as any of them", strings.Join(names, ", "), h[:min(8, len(h))]))
		}
	}
	return out
}

// probeKeys are keys inside u's own key patterns (or one key when it has none): asking
// DRYRUN with them makes the answer about the command, not about the key. A pattern no key
// can be made for (a negated class) is returned in unprobed: a command confined to it was
// not asked about.
func (u LockUserACL) probeKeys() (keys, unprobed []string) {
	for _, pat := range u.keyPatterns() {
		if k, ok := KeyMatching(pat); ok {
			keys = append(keys, k)
		} else {
			unprobed = append(unprobed, pat)
		}
	}
	if len(keys) == 0 {
		keys = []string{probeWord}
	}
	return keys, unprobed
}

// probeWord is what a probe key holds where its pattern allows anything.
const probeWord = "redlock-audit-probe"

// KeyMatching makes a key that the glob pattern (Redis's: * ? [abc] [a-z] \x) matches:
// every * becomes probeWord, every ? an "x", every class its first member, so
// "billing:*" gives "billing:redlock-audit-probe" and "bill[i]ng:*" "billing:...". ok is
// false for a negated class ([^a]), for which no member is named.
func KeyMatching(pattern string) (key string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			b.WriteString(probeWord)
		case '?':
			b.WriteByte('x')
		case '\\':
			if i+1 < len(pattern) {
				i++
			}
			b.WriteByte(pattern[i])
		case '[':
			i++
			if i >= len(pattern) || pattern[i] == '^' {
				return "", false
			}
			if pattern[i] == '\\' && i+1 < len(pattern) {
				i++
			}
			b.WriteByte(pattern[i])
			for i < len(pattern) && pattern[i] != ']' {
				if pattern[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(pattern) {
				return "", false // an unclosed class
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// errProbe marks a question the server did not answer: the check is unmade.
var errProbe = errors.New("probe failed")

// mayRunAll asks, in one pipeline per probe key, which of cmds user may run. An error
// means at least one question got no answer (the check is unmade).
func mayRunAll(ctx context.Context, c *redis.Client, timeout time.Duration, u LockUserACL, cmds []ServerCommand, keys []string) ([]string, error) {
	allowed := map[string]bool{}
	for _, key := range keys {
		var replies []*redis.Cmd
		_, _ = nodeCall(ctx, timeout, func(ctx context.Context) ([]redis.Cmder, error) {
			pipe := c.Pipeline()
			replies = replies[:0]
			for _, cmd := range cmds {
				replies = append(replies, pipe.Do(ctx, dryRunArgs(u.Name, cmd, key)...))
			}
			return pipe.Exec(ctx)
		})
		for i, r := range replies {
			reply, err := r.Text()
			if err != nil {
				return nil, fmt.Errorf("%w: ACL DRYRUN %s %s: %w", errProbe, u.Name, cmds[i].Name, err)
			}
			if reply == "OK" {
				allowed[cmds[i].Name] = true
			}
		}
	}
	out := make([]string, 0, len(allowed))
	for name := range allowed {
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}

// mayRun asks the server through the admin client c whether user may run cmd (ACL DRYRUN
// runs nothing). An error is a question the server did not answer: unknown, not "no".
func mayRun(ctx context.Context, c *redis.Client, timeout time.Duration, user string, cmd ...any) (bool, error) {
	args := append([]any{"ACL", "DRYRUN", user}, cmd...)
	reply, err := nodeCall(ctx, timeout, func(ctx context.Context) (string, error) { return c.Do(ctx, args...).Text() })
	if err != nil {
		return false, fmt.Errorf("%w: ACL DRYRUN %s %v: %w", errProbe, user, cmd[0], err)
	}
	return reply == "OK", nil
}

// checkUsers reads every user and, for each but the admin, what dangerous commands it may
// run. Whatever it cannot ask is added to m.Unchecked.
func (m *Master) checkUsers(ctx context.Context, c *redis.Client, t Target) {
	users, err := readUsers(ctx, c, t.NodeTimeout)
	if err != nil {
		m.uncheck("the users (their passwords, rights and key patterns) could not be read", err)
		return
	}
	var others []LockUserACL
	for _, u := range users {
		if u.Name == t.adminName() {
			a := u
			m.Admin = &a
			continue
		}
		others = append(others, u)
	}
	m.LockUsers, m.usersRead = others, true
	table, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) ([]ServerCommand, error) { return readCommands(ctx, c) })
	if err != nil {
		m.uncheck("the server's command table (COMMAND) could not be read, so the users' rights could not be checked", err)
		return
	}
	m.commands = table
	dangerous, hashWrites := dangerousCommands(table), hashWriteCommands(table)
	for i := range m.LockUsers {
		u := &m.LockUsers[i]
		if !u.Enabled {
			continue // it cannot log in
		}
		keys, unprobed := u.probeKeys()
		if len(unprobed) > 0 {
			m.uncheck(fmt.Sprintf("what user %s may run on keys of its patterns %s could not be asked: no key can be made that they match", u.Name, strings.Join(unprobed, " ")), nil)
		}
		allowed, err := mayRunAll(ctx, c, t.NodeTimeout, *u, dangerous, keys)
		if err == nil {
			u.WritesDeployment, err = mayRunAll(ctx, c, t.NodeTimeout, *u, hashWrites, []string{hold.DeploymentKey})
		}
		if err == nil {
			var moves []string
			moves, err = movesOntoDeployment(ctx, c, t, u.Name, keys)
			u.WritesDeployment = append(u.WritesDeployment, moves...)
		}
		if err != nil {
			m.uncheck("what user "+u.Name+" may run could not be asked", err)
			continue
		}
		if u.Keyless() {
			allowed = slices.DeleteFunc(allowed, func(name string) bool { return slices.Contains(MonitoringCommands, name) })
		}
		u.Dangerous, u.DangerousChecked = allowed, true
	}
}

// keyMoves are the commands that put a key a user made elsewhere (a hash under its own
// prefix, written with its own HSET) at another name: with one whose destination may be
// hold.DeploymentKey, a user forges the published restart delay without any hash write there.
var keyMoves = []string{"copy", "rename", "renamenx"}

// movesOntoDeployment asks which of keyMoves user may run from one of its own keys onto
// hold.DeploymentKey.
func movesOntoDeployment(ctx context.Context, c *redis.Client, t Target, user string, own []string) ([]string, error) {
	var out []string
	for _, cmd := range keyMoves {
		for _, k := range own {
			ok, err := mayRun(ctx, c, t.NodeTimeout, user, cmd, k, hold.DeploymentKey)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, cmd+" (from "+k+")")
				break
			}
		}
	}
	return out, nil
}

// uncheck records a check that could not be made on this master.
// A check that failed for want of an answer (a timeout, a dropped connection) may succeed
// when the audit runs again; one the server refused (a renamed command, NOPERM) will not.
func (m *Master) uncheck(why string, err error) {
	if err != nil {
		why += ": " + err.Error()
	}
	m.Unchecked = append(m.Unchecked, why)
	m.uncheckedTransient = append(m.uncheckedTransient, err != nil && classify(err) == ClassUnavailable)
}
