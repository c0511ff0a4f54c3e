package audit

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Tenant isolation. Each lock user (every ACL user but the admin "default") should reach
// only keys and pub/sub channels under its own prefix. The audit reads every user's key and
// channel patterns (ACL GETUSER) and asks the server, with ACL DRYRUN (which runs nothing),
// whether a user may act on a key or channel inside another user's prefix: read the token,
// delete the lock, overwrite it without a TTL, expire it, reset its fencing register,
// publish on or subscribe to its release channel. Any "OK" is a leak.

// LockUserACL is one lock user's reach as the server reports it.
type LockUserACL struct {
	Name     string   `json:"name"`
	Keys     []string `json:"keys"`     // key patterns without "~" ("billing:*")
	Channels []string `json:"channels"` // channel patterns without "&"
}

// AllKeys reports whether u reaches every key.
func (u LockUserACL) AllKeys() bool {
	for _, k := range u.Keys {
		if k == "*" {
			return true
		}
	}
	return false
}

// tenantProbes are what one tenant must not do to another's lock (key k, channel ch).
var tenantProbes = []struct {
	what string
	args func(k, ch string) []any
}{
	{"read its token (GET)", func(k, _ string) []any { return []any{"GET", k} }},
	{"delete it (DEL)", func(k, _ string) []any { return []any{"DEL", k} }},
	{"overwrite it without a TTL (SET)", func(k, _ string) []any { return []any{"SET", k, "x"} }},
	{"expire it (PEXPIRE)", func(k, _ string) []any { return []any{"PEXPIRE", k, "1"} }},
	{"reset its fencing register (SET)", func(k, _ string) []any { return []any{"SET", k + ":fence", "0"} }},
	{"publish on its release channel (PUBLISH)", func(_, ch string) []any { return []any{"PUBLISH", ch, "x"} }},
}

// checkTenants reads the lock users of the master (as admin) and, when there are several,
// probes every pair. Errors leave TenantsChecked false: an admin without ACL rights cannot
// tell, which proves nothing either way.
func (m *Master) checkTenants(ctx context.Context, c *redis.Client, t Target) {
	names, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) ([]string, error) { return c.ACLUsers(ctx).Result() })
	if err != nil {
		return
	}
	sort.Strings(names)
	var users []LockUserACL
	for _, name := range names {
		if name == "default" {
			continue
		}
		reply, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (any, error) { return c.Do(ctx, "ACL", "GETUSER", name).Result() })
		if err != nil {
			return
		}
		u := LockUserACL{Name: name}
		fields := replyMap(reply)
		u.Keys = patterns(fields["keys"], "~")
		u.Channels = patterns(fields["channels"], "&")
		if len(u.Keys) == 0 && len(u.Channels) == 0 {
			continue // no key, no channel: it cannot touch a lock (the monitoring user)
		}
		users = append(users, u)
	}
	m.LockUsers, m.TenantsChecked = users, true
	if len(users) < 2 {
		return
	}
	for _, a := range users {
		for _, b := range users {
			if a.Name == b.Name || a.AllKeys() || b.AllKeys() {
				continue // a user with every key is reported on its own
			}
			var can []string
			for _, pat := range b.Keys {
				prefix := strings.TrimSuffix(pat, "*")
				if strings.ContainsAny(prefix, "*?[\\") {
					continue // not a prefix pattern: nothing sensible to probe
				}
				k := prefix + "redlock-audit-probe"
				for _, p := range tenantProbes {
					if mayRun(ctx, c, t.NodeTimeout, a.Name, p.args(k, k+":released")...) {
						can = append(can, p.what)
					}
				}
			}
			if len(can) > 0 {
				m.TenantLeaks = append(m.TenantLeaks, fmt.Sprintf("%s can %s of %s's locks", a.Name, strings.Join(can, ", "), b.Name))
			}
		}
	}
}

// replyMap turns ACL GETUSER's reply (a RESP3 map or a RESP2 flat list) into a map.
func replyMap(reply any) map[string]any {
	out := map[string]any{}
	switch r := reply.(type) {
	case map[any]any:
		for k, v := range r {
			out[fmt.Sprint(k)] = v
		}
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			out[fmt.Sprint(r[i])] = r[i+1]
		}
	}
	return out
}

// patterns reads a keys/channels field: "~a:* ~b:*" (Redis >= 7) or a list of patterns,
// with or without the sigil; "allkeys"/"allchannels" flags read as "*".
func patterns(v any, sigil string) []string {
	var raw []string
	switch x := v.(type) {
	case string:
		raw = strings.Fields(x)
	case []any:
		for _, e := range x {
			raw = append(raw, fmt.Sprint(e))
		}
	}
	var out []string
	for _, p := range raw {
		p = strings.TrimPrefix(p, "%RW")
		p = strings.TrimPrefix(p, sigil)
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
