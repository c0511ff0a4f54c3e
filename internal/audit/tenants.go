package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Tenant isolation. Each lock user (every ACL user but the admin) should reach only keys
// and pub/sub channels under its own prefix. With the users' key and channel patterns read
// (checkUsers), the audit asks the server, with ACL DRYRUN (which runs nothing), whether a
// user may act on a key or channel inside another user's prefix: read the token, delete
// the lock, overwrite it without a TTL, expire it, reset its fencing register, publish on
// or subscribe to its release channel. Any "OK" is a leak.

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

// checkTenants probes every pair of enabled users when there are several. A probe the
// server does not answer leaves the isolation unchecked (m.Unchecked), never "isolated".
func (m *Master) checkTenants(ctx context.Context, c *redis.Client, t Target) {
	if !m.usersRead {
		return // checkUsers said why
	}
	m.TenantsChecked = true
	if len(m.LockUsers) < 2 {
		return
	}
	for _, a := range m.LockUsers {
		for _, b := range m.LockUsers {
			if a.Name == b.Name || !a.Enabled || a.AllKeys() || b.AllKeys() {
				continue // a user with every key is reported on its own
			}
			var can []string
			for _, pat := range b.keyPatterns() {
				k, ok := KeyMatching(pat)
				if !ok {
					m.TenantsChecked = false
					m.uncheck(fmt.Sprintf("tenant isolation could not be checked: no key can be made that %s's pattern %s matches", b.Name, pat), nil)
					return
				}
				for _, p := range tenantProbes {
					ok, err := mayRun(ctx, c, t.NodeTimeout, a.Name, p.args(k, k+":released")...)
					if err != nil {
						m.TenantsChecked = false
						m.uncheck("tenant isolation could not be checked", err)
						return
					}
					if ok {
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
	case map[string]any:
		return r
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			out[fmt.Sprint(r[i])] = r[i+1]
		}
	}
	return out
}

// patterns reads a keys/channels field: "~a:* %R~b:*" (Redis >= 7) or a list of patterns,
// with or without the sigil and read/write marks; "allkeys"/"allchannels" flags read as "*".
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
		if strings.HasPrefix(p, "%") { // %R~pat, %W~pat, %RW~pat
			if i := strings.Index(p, "~"); i >= 0 {
				p = p[i:]
			}
		}
		p = strings.TrimPrefix(p, sigil)
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}
