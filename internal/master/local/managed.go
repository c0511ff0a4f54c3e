package local

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// Managed is what the runtime sets on a master beyond the safety settings (Safety), as the
// live server has it, for a refresh to compare with what the last apply left: every ACL user
// ("user <name>": its rules as ACL LIST prints them, with the passwords replaced by whether
// they are the configured ones, so that no password and no hash leaves the server) and the
// settings "save", "protected-mode" and "maxclients". A user added behind the runtime's back
// appears as a key of its own.
type Managed map[string]string

// Values of a user's passwords in Managed.
const (
	PasswordsAsConfigured = "passwords as configured"
	PasswordsChanged      = "passwords changed"
	// AdminRefused is the whole of Managed when the admin password no longer logs in, or the
	// admin may no longer read the ACL (CONFIG SET requirepass, ACL SETUSER default): nothing
	// else can be read, and only a restart from the master's files restores it.
	AdminRefused = "admin refused: its password or rights were changed on the server"
)

// ManagedSettings are the settings Managed holds besides the users.
var ManagedSettings = []string{"save", "protected-mode", "maxclients"}

// ManagedUserKey is the key of user name in Managed.
func ManagedUserKey(name string) string { return "user " + name }

// ReadManaged reads Managed from the master s describes (listening at its address), as its
// admin. When the admin password is refused, it returns Managed{"user default":
// AdminRefused} and no error.
func ReadManaged(ctx context.Context, s master.Spec) (Managed, error) {
	c := adminClient(s.Addr(), s.AdminPassword, s.ClientTLS())
	defer c.Close()
	return readManaged(ctx, c, s)
}

func readManaged(ctx context.Context, c *redis.Client, s master.Spec) (Managed, error) {
	out := Managed{}
	lines, err := c.Do(ctx, "ACL", "LIST").StringSlice()
	if err != nil {
		if isAuthError(err) {
			return Managed{ManagedUserKey("default"): AdminRefused}, nil
		}
		return nil, fmt.Errorf("ACL LIST: %w", err)
	}
	want := configuredHashes(s)
	for _, line := range lines {
		name, rules, hashes := splitACLLine(line)
		if name == "" {
			continue
		}
		passwords := PasswordsAsConfigured
		if w, managed := want[name]; !managed || !slices.Equal(sorted(hashes), sorted(w)) {
			passwords = PasswordsChanged
		}
		if len(hashes) == 0 && !strings.Contains(" "+rules+" ", " nopass ") {
			passwords = "no password"
		}
		out[ManagedUserKey(name)] = rules + " (" + passwords + ")"
	}
	for _, name := range ManagedSettings {
		v, err := c.ConfigGet(ctx, name).Result()
		if err != nil {
			return nil, fmt.Errorf("CONFIG GET %s: %w", name, err)
		}
		out[name] = v[name]
	}
	return out, nil
}

// configuredHashes are the SHA-256 password hashes s gives each of its users.
func configuredHashes(s master.Spec) map[string][]string {
	out := map[string][]string{"default": {redisconf.HashPassword(s.AdminPassword)}}
	for _, u := range s.Users() {
		out[u.Name] = []string{redisconf.HashPassword(u.Password)}
	}
	if s.MonitorPassword != "" {
		out[s.MonitorUser] = []string{redisconf.HashPassword(s.MonitorPassword)}
	}
	return out
}

// splitACLLine splits an ACL LIST line ("user <name> <rules...>") into the name, the rules
// without the password hashes, and the hashes. The sanitize-payload flag (RESTORE payloads
// are checked: the safe default, which ACL SETUSER's reset writes out and a user line in
// redis.conf leaves implicit) is left out, so that a user redefined from scratch reads as the
// same user. Runs of single-command rules (+get +set, not +@category) are sorted: the server
// lists them in an order of its own that changes between runs of one server binary.
func splitACLLine(line string) (name, rules string, hashes []string) {
	f := strings.Fields(line)
	if len(f) < 2 || f[0] != "user" {
		return "", "", nil
	}
	var kept []string
	for _, r := range f[2:] {
		if h, ok := strings.CutPrefix(r, "#"); ok {
			hashes = append(hashes, h)
			continue
		}
		if r == "sanitize-payload" {
			continue
		}
		kept = append(kept, r)
	}
	return f[1], strings.Join(sortCommandRuns(kept), " "), hashes
}

// sortCommandRuns sorts each run of consecutive single-command rules in rules.
func sortCommandRuns(rules []string) []string {
	isCommand := func(r string) bool {
		return (strings.HasPrefix(r, "+") || strings.HasPrefix(r, "-")) && !strings.HasPrefix(r[1:], "@")
	}
	for i := 0; i < len(rules); {
		j := i
		for j < len(rules) && isCommand(rules[j]) {
			j++
		}
		if j > i {
			slices.Sort(rules[i:j])
			i = j
		} else {
			i++
		}
	}
	return rules
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// isAuthError reports whether err is the server refusing the credentials.
func isAuthError(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "WRONGPASS") || strings.HasPrefix(msg, "NOAUTH") || strings.HasPrefix(msg, "NOPERM")
}

// repairManaged sets back what of Managed drifted from want (what the last apply left): the
// settings, every user the Spec defines (from scratch), and it removes users the Spec does
// not define. The admin user (default) gets back all rights and its one password,
// adminPassword: the one c logged in with (an admin password change comes after, last).
func repairManaged(ctx context.Context, c *redis.Client, s master.Spec, adminPassword string, want Managed) error {
	for _, name := range ManagedSettings {
		v, ok := want[name]
		if !ok {
			continue
		}
		if err := c.ConfigSet(ctx, name, v).Err(); err != nil {
			return fmt.Errorf("%s: CONFIG SET %s %q: %w", name, name, v, err)
		}
	}
	keep := map[string]bool{"default": true}
	for _, u := range s.Users() {
		keep[u.Name] = true
		if err := c.ACLSetUser(ctx, u.Name, u.ACLRules()...).Err(); err != nil {
			return fmt.Errorf("%s: ACL SETUSER %s: %w", userField(s.Users()), u.Name, err)
		}
	}
	if s.MonitorPassword != "" {
		keep[s.MonitorUser] = true
		if err := c.ACLSetUser(ctx, s.MonitorUser, redisconf.MonitorUserRules(s.MonitorPassword)...).Err(); err != nil {
			return fmt.Errorf("monitor_user: ACL SETUSER %s: %w", s.MonitorUser, err)
		}
	}
	if err := c.ACLSetUser(ctx, "default", "on", "resetpass", ">"+adminPassword, "~*", "&*", "+@all").Err(); err != nil {
		return fmt.Errorf("admin_password: ACL SETUSER default: %w", err)
	}
	users, err := c.Do(ctx, "ACL", "USERS").StringSlice()
	if err != nil {
		return fmt.Errorf("ACL USERS: %w", err)
	}
	for _, name := range users {
		if keep[name] {
			continue
		}
		if err := c.Do(ctx, "ACL", "DELUSER", name).Err(); err != nil {
			return fmt.Errorf("ACL DELUSER %s (a user the master does not define): %w", name, err)
		}
	}
	return nil
}
