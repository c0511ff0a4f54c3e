package acl

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// User is a lock user as a master should have it: confined to KeyPrefix, accepting every
// password whose SHA-256 is in PasswordHashes (newest first; two during a rotation).
type User struct {
	Name           string
	KeyPrefix      string
	PasswordHashes []string
	// AllowEval lets the user run EVAL inside its prefix (redisconf.LockUser.AllowEval).
	AllowEval bool
}

// lockUser is u as internal/redisconf knows it, for its key pattern and rules.
func (u User) lockUser() redisconf.LockUser {
	return redisconf.LockUser{Name: u.Name, KeyPrefix: u.KeyPrefix, AllowEval: u.AllowEval}
}

// Rules are the ACL SETUSER rules that define u from scratch (after its name).
func (u User) Rules() []string { return u.lockUser().HashedACLRules(u.PasswordHashes) }

// Definition is u as Definition reads a live user: what Matches compares.
func (u User) Definition() Definition {
	p := u.lockUser().KeyPattern()
	return Definition{
		Flags:          []string{"on"},
		PasswordHashes: sortedCopy(u.PasswordHashes),
		Keys:           "~" + p,
		Channels:       "&" + p,
		Commands:       sortedCopy(append([]string{"-@all"}, u.lockUser().Commands()...)),
	}
}

// hashPattern is a hex SHA-256, as ACL GETUSER reports a password.
var hashPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ValidHash reports whether h is a lower-case hex SHA-256 (64 characters).
func ValidHash(h string) bool { return hashPattern.MatchString(h) }

// Check reports what makes u impossible to apply, or nil.
func (u User) Check() error {
	if !master.ValidUserName(u.Name) {
		return fmt.Errorf("user %q: the name must be 1-64 letters, digits, '_' or '-', and not \"default\" (the admin)", u.Name)
	}
	if why := redisconf.ValidKeyPrefix(u.KeyPrefix); why != "" {
		return fmt.Errorf("user %s: key prefix %q %s", u.Name, u.KeyPrefix, why)
	}
	if len(u.PasswordHashes) == 0 {
		return fmt.Errorf("user %s has no password hash: it could never log in", u.Name)
	}
	for _, h := range u.PasswordHashes {
		if !ValidHash(h) {
			return fmt.Errorf("user %s: password hash %q is not a lower-case hex SHA-256 (64 characters, as sha256() gives)", u.Name, h)
		}
	}
	return nil
}

// Definition is a user's ACL as a master reports it (ACL GETUSER), reduced to what decides
// what the user may do, in an order-independent form.
type Definition struct {
	Flags          []string // sorted; "on" or "off", "nopass", ...
	PasswordHashes []string // sorted
	Keys           string   // e.g. "~billing:*"
	Channels       string   // e.g. "&billing:*"
	Commands       []string // sorted tokens, e.g. "+set", "-@all"
	Selectors      int      // ACL v2 selectors: the kit sets none
}

// String is one line that shows what differs between two definitions, e.g.
// "on #1a2b... ~billing:* &billing:* -@all +auth +del ...".
func (d Definition) String() string {
	parts := append([]string{}, d.Flags...)
	for _, h := range d.PasswordHashes {
		parts = append(parts, "#"+h)
	}
	parts = append(parts, d.Keys, d.Channels)
	parts = append(parts, d.Commands...)
	if d.Selectors > 0 {
		parts = append(parts, fmt.Sprintf("(%d selectors)", d.Selectors))
	}
	return strings.Join(parts, " ")
}

// Matches reports whether the live definition is exactly u.
func (u User) Matches(live Definition) bool { return u.Definition().String() == live.String() }

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
