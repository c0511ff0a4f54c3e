// Package redisconf renders the one safe redis.conf a Redlock master may run with.
//
// The provider, the test harness and the audit all derive from this package, so the
// settings the kit promises are written down exactly once.
package redisconf

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// Safety settings every master runs with. The audit compares live servers against them.
const (
	AppendFsync            = "always"
	MaxmemoryPolicy        = "noeviction"
	NoAppendfsyncOnRewrite = "no"
	DefaultMaxMemory       = "64mb"
	DefaultLockUser        = "redlock"
	DefaultEvalUser        = "redlock-eval"
	DefaultMonitorUser     = "redlock-monitor"
)

// LatencyMonitorThreshold is the master's latency-monitor-threshold in milliseconds: events
// that take longer (an fsync of the AOF above all) are recorded for LATENCY LATEST, which
// the monitoring user reads (redis_exporter's redis_latency_spike_* metrics). 0, Redis's
// default, records nothing.
const LatencyMonitorThreshold = 10

// BusyReplyThreshold is the master's busy-reply-threshold (lua-time-limit before Redis
// 7), in milliseconds: a script or function that runs longer makes the server answer
// every other client BUSY (a lock client counts that master as failed, like a slow one)
// and accept SCRIPT KILL / FUNCTION KILL, which the kit's supervisor sends. The kit's
// own functions run in microseconds; 5000, Redis's default, would let one script stall
// a master for seconds before anything can stop it.
const BusyReplyThreshold = 100

// LockUserCommands are the only commands a Redlock client needs: SET NX PX to acquire,
// FCALL of the kit's function library (compare-and-delete, compare-and-pexpire, fencing:
// lockagent/redlock.FunctionLibrary, loaded by the admin at every start), PTTL to learn
// when a held key expires (and PEXPIRETIME, with which a hand-off gives the next holder's
// key the released key's expiry exactly), pub/sub for release notifications, and the connection
// handshake. Functions run with the caller's permissions, so their bodies are bounded by
// this too: DEL and PEXPIRE are listed for compare-and-delete / compare-and-pexpire.
// There is no EVAL, EVALSHA, SCRIPT or FUNCTION: a lock user runs the kit's functions
// and no other Lua (only the admin can load functions). Every lock user gets this list.
var LockUserCommands = []string{
	"+ping", "+hello", "+auth", "+client|setname",
	"+set", "+get", "+del", "+pexpire", "+pttl", "+pexpiretime", "+fcall",
	"+publish", "+subscribe", "+unsubscribe", "+time",
}

// LockUser is one restricted user lock clients authenticate as. KeyPrefix confines it: it
// may touch only keys and pub/sub channels that start with KeyPrefix (its locks, their
// fencing registers and release channels all do). An empty KeyPrefix reaches every key,
// which is only right for a deployment with a single lock user.
//
// ACLs check commands and key names, not arguments, and scripts run with the caller's
// rights: clients that share one user can always break each other's locks (DEL a held
// key, overwrite it, expire it). Give each application its own user and prefix.
type LockUser struct {
	Name      string
	Password  string
	KeyPrefix string
	// AllowEval adds EvalCommands, for other Redlock clients (redsync, node-redlock, ...)
	// that release with their own Lua: weaker, since such a client can run any script,
	// busy ones included, over any key it names inside KeyPrefix.
	AllowEval bool
}

// Commands are the commands u may run: LockUserCommands, plus EvalCommands with AllowEval.
func (u LockUser) Commands() []string {
	if !u.AllowEval {
		return LockUserCommands
	}
	return append(append([]string{}, LockUserCommands...), EvalCommands...)
}

// KeyPattern is the ACL glob of the keys and channels u may touch ("*" for no prefix).
// Prefixes never contain glob characters (see ValidKeyPrefix), so no escaping is needed.
func (u LockUser) KeyPattern() string { return u.KeyPrefix + "*" }

// ACLRules are the ACL SETUSER rules that define u from scratch: on, its password, its
// keys and channels, and nothing but LockUserCommands.
func (u LockUser) ACLRules() []string { return UserRules(u.Password, u.KeyPattern(), u.Commands()) }

// GlobChars are the characters a key prefix may not contain: ACL key patterns are globs.
const GlobChars = `*?[]\`

// KitKeyPrefix starts every key the kit keeps on a master for itself (the fence seeding
// record, the published deployment): no lock user may reach them.
const KitKeyPrefix = "redlock-kit:"

// ValidKeyPrefix reports why prefix cannot confine a lock user, or "" when it can.
func ValidKeyPrefix(prefix string) string {
	switch {
	case prefix == "":
		return "is empty: each lock user needs its own non-empty prefix, such as \"billing:\""
	case strings.HasPrefix(KitKeyPrefix, prefix) || strings.HasPrefix(prefix, KitKeyPrefix):
		// A user whose keys include the kit's could delete the seeding record (an unseeded
		// master would then pass for seeded) or forge the published deployment.
		return "overlaps the kit's own keys (" + KitKeyPrefix + "*): choose a prefix that neither starts with " +
			KitKeyPrefix + " nor is the start of it, such as \"billing:\""
	case strings.ContainsAny(prefix, GlobChars):
		return "contains one of " + GlobChars + ", which ACL key patterns read as a glob: use letters, digits and separators such as ':' or '/'"
	case strings.ContainsAny(prefix, " \t\r\n\"'"):
		return "contains whitespace or a quote: use letters, digits and separators such as ':' or '/'"
	}
	return ""
}

// OverlappingPrefixes returns the first two users whose prefixes overlap (one starts with
// the other, so the shorter one's user reaches the other's keys), or ok=false.
func OverlappingPrefixes(users []LockUser) (a, b LockUser, overlap bool) {
	for i, u := range users {
		for j, v := range users {
			if i != j && strings.HasPrefix(v.KeyPrefix, u.KeyPrefix) {
				return u, v, true
			}
		}
	}
	return LockUser{}, LockUser{}, false
}

// EvalCommands are what a client that sends its own Lua (other Redlock clients: redsync
// v4, node-redlock 4 and 5) needs beyond the lock commands, read from those clients'
// scripts and connections: EVALSHA, then EVAL on NOSCRIPT (all three); EXISTS, which
// node-redlock's lock script calls before its SET (GET, SET, DEL and PEXPIRE, which the
// scripts also call, are lock commands already); and SCRIPT LOAD, with which the kit's own
// library loads its scripts where it may EVAL but not FCALL. Nothing wider: no SCRIPT
// EXISTS (no client calls it), and ioredis's ready check (INFO, which the server marks
// @dangerous and which reveals every tenant's key counts and command statistics) and its
// CLIENT SETINFO are refused; the guide for other clients tells their users to switch
// them off (enableReadyCheck: false, disableClientInfo: true). Such a client can run any
// script, busy ones included (cut short only by BusyReplyThreshold and a SCRIPT KILL), so
// it gets a user of its own (Config.EvalUser, or a lock user with AllowEval), never the
// kit's lock user's rights. TestForeignClientInterop (lockagent/redlock) runs every such
// client through a user with exactly these rights.
var EvalCommands = []string{"+eval", "+evalsha", "+script|load", "+exists"}

// EvalUserCommands are the commands of an EVAL (interop) user: the lock commands with
// EVAL, EVALSHA and SCRIPT LOAD instead of FCALL. The kit's library works with it too
// (it falls back to EVALSHA where it may not FCALL).
func EvalUserCommands() []string {
	out := make([]string, 0, len(LockUserCommands)+len(EvalCommands))
	for _, c := range LockUserCommands {
		if c != "+fcall" {
			out = append(out, c)
		}
	}
	return append(out, EvalCommands...)
}

// MonitorUserCommands are the rights of the monitoring user (an exporter such as
// redis_exporter): server state only. No key, no channel, no write, and no CONFIG GET,
// which would reveal the passwords in requirepass and masterauth.
var MonitorUserCommands = []string{
	"+ping", "+info", "+client|list", "+client|info", "+slowlog|get", "+slowlog|len",
	"+latency|latest", "+latency|history", "+latency|doctor", "+memory|stats", "+command",
}

// MonitorUserRules are the ACL SETUSER rules that define the monitoring user from scratch:
// on, its password, no keys, no channels, MonitorUserCommands only.
func MonitorUserRules(password string) []string {
	return append([]string{"reset", "on", ">" + password, "resetkeys", "resetchannels", "-@all"}, MonitorUserCommands...)
}

// UserRules are the ACL rules of a restricted user (a lock user, an EVAL user), after its
// name, in the order ACL SETUSER takes them: password, keys, channels (the same pattern as
// the keys: a lock's release channel starts with its key), commands.
func UserRules(password, keyPattern string, commands []string) []string {
	return restrictedUserRules([]string{">" + password}, keyPattern, commands)
}

// HashedUserRules are UserRules with the passwords given as their SHA-256 hashes
// (HashPassword), each accepted: a host and a live change never need the plain password,
// and a user with two hashes accepts both (a rotation's overlap).
func HashedUserRules(passwordHashes []string, keyPattern string, commands []string) []string {
	rules := make([]string, len(passwordHashes))
	for i, h := range passwordHashes {
		rules[i] = "#" + h
	}
	return restrictedUserRules(rules, keyPattern, commands)
}

// HashedACLRules are ACLRules with u's password given as SHA-256 hashes (HashedUserRules).
func (u LockUser) HashedACLRules(passwordHashes []string) []string {
	return HashedUserRules(passwordHashes, u.KeyPattern(), u.Commands())
}

func restrictedUserRules(passwordRules []string, keyPattern string, commands []string) []string {
	p := or(keyPattern, "*")
	rules := append([]string{"reset", "on"}, passwordRules...)
	return append(append(rules, "~"+p, "resetchannels", "&"+p, "-@all"), commands...)
}

// HashPassword is the hex SHA-256 of password, the form Redis keeps and ACL rules take
// after '#' (ACL GETUSER shows it): what a host needs to check the password, not the
// password itself.
func HashPassword(password string) string {
	sum := sha256.Sum256([]byte(password))
	return hex.EncodeToString(sum[:])
}

// HashedPassword stands, in a Config password field, for a password known only by its
// SHA-256 (HashPassword): "#<hex>", the form ACL rules take. RenderACL writes the hash as
// given, so a config rendered for a host never needs the password; Render refuses one
// without an ACLFile, since requirepass and redis.conf's user lines need the password.
func HashedPassword(sha256Hex string) string { return "#" + sha256Hex }

// passwordHash is the hash RenderACL writes for a Config password field: the one a
// HashedPassword carries, else HashPassword of the password.
func passwordHash(p string) string {
	if h, ok := strings.CutPrefix(p, "#"); ok && sha256Hex.MatchString(h) {
		return h
	}
	return HashPassword(p)
}

// sha256Hex is a hex SHA-256 as HashPassword writes it.
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// hashedPasswords reports whether c has a password given as its hash (HashedPassword).
func (c Config) hashedPasswords() bool {
	pws := []string{c.AdminPassword, c.EvalPassword, c.MonitorPassword}
	for _, u := range c.Users() {
		pws = append(pws, u.Password)
	}
	for _, p := range pws {
		if p != "" && passwordHash(p) != HashPassword(p) {
			return true
		}
	}
	return false
}

// Config describes one master. Zero values mean the safe default where one exists.
type Config struct {
	Bind          string // address to listen on; "127.0.0.1" when empty
	Port          int
	DataDir       string // AOF and the rest live here
	AdminPassword string // password of the default (admin) user; required
	LockUser      string // restricted ACL user for lock clients; DefaultLockUser when empty
	LockPassword  string // required
	// LockUsers, when not empty, replace LockUser/LockPassword: one restricted user per
	// application, each confined to its key prefix.
	LockUsers []LockUser
	// EvalUser/EvalPassword add a user for clients that need EVAL (EvalUserCommands, every
	// key), e.g. redsync beside the kit's library; none when EvalPassword is empty. Next to
	// LockUsers it reaches every tenant's keys (the audit reports it).
	EvalUser     string
	EvalPassword string
	// MonitorUser/MonitorPassword add the monitoring user (MonitorUserCommands: server
	// state, no key); none when MonitorPassword is empty. MonitorUser is DefaultMonitorUser
	// when empty.
	MonitorUser     string
	MonitorPassword string
	MaxMemory       string // explicit maxmemory; DefaultMaxMemory when empty
	// AppendFsync is "always" unless a caller explicitly opted out of safety.
	AppendFsync string
	PidFile     string // optional
	LogFile     string // optional; "" logs to stdout
	// TLS, when set, makes the master serve TLS only: Port becomes the tls-port and the
	// plain-text port is closed (port 0).
	TLS *TLSFiles
	// ACLFile, when set, moves every user out of redis.conf into this file (RenderACL: no
	// requirepass, password hashes only), which ACL SAVE rewrites after a live change
	// (internal/acl), so the server's next start keeps it. The server must be able to
	// write its directory (ACL SAVE writes a temp file and renames it).
	ACLFile string
	// LockUsersOff renders the lock users off in the ACL file (RenderACL): a master that
	// starts empty admits them only once its fence registers are seeded (internal/fenceseed
	// turns them on).
	LockUsersOff bool
}

// RenderACL returns the content of c.ACLFile: the admin as the default user, every lock
// user and the EVAL user, each with the SHA-256 hash of its password (`#<hex>`), never the
// password itself.
func (c Config) RenderACL() (string, error) {
	if c.AdminPassword == "" {
		return "", fmt.Errorf("redisconf: the admin password is required")
	}
	var b strings.Builder
	user := func(name string, rules []string) { fmt.Fprintf(&b, "user %s %s\n", name, strings.Join(rules, " ")) }
	user("default", []string{"reset", "on", "#" + passwordHash(c.AdminPassword), "~*", "&*", "+@all"})
	for _, u := range c.Users() {
		if u.Password == "" {
			return "", fmt.Errorf("redisconf: lock user %s has no password", u.Name)
		}
		rules := u.HashedACLRules([]string{passwordHash(u.Password)})
		if c.LockUsersOff {
			rules = switchedOff(rules)
		}
		user(u.Name, rules)
	}
	if c.EvalPassword != "" {
		user(or(c.EvalUser, DefaultEvalUser), HashedUserRules([]string{passwordHash(c.EvalPassword)}, "*", EvalUserCommands()))
	}
	if c.MonitorPassword != "" {
		// MonitorUserRules, with the password as its hash.
		user(or(c.MonitorUser, DefaultMonitorUser), append([]string{"reset", "on", "#" + passwordHash(c.MonitorPassword),
			"resetkeys", "resetchannels", "-@all"}, MonitorUserCommands...))
	}
	return b.String(), nil
}

// switchedOff is rules with "on" turned "off" (the user exists, and cannot log in).
func switchedOff(rules []string) []string {
	out := append([]string(nil), rules...)
	for i, r := range out {
		if r == "on" {
			out[i] = "off"
		}
	}
	return out
}

// TLSFiles are the PEM files a TLS master reads at start (and again on CONFIG SET of any
// tls-* setting, which is how a certificate is rotated without a restart).
type TLSFiles struct {
	CertFile   string // the server certificate
	KeyFile    string // its private key (mode 0600, readable by the server's user)
	CACertFile string // the CA that signed it
}

// TLSProtocols are the TLS versions a master accepts.
const TLSProtocols = "TLSv1.2 TLSv1.3"

// Render returns the redis.conf text. It fails when a required field is missing rather than
// producing a config that would start an unauthenticated master.
func (c Config) Render() (string, error) {
	users := c.Users()
	if c.AdminPassword == "" {
		return "", fmt.Errorf("redisconf: the admin password is required")
	}
	for _, u := range users {
		if u.Password == "" {
			return "", fmt.Errorf("redisconf: lock user %s has no password", u.Name)
		}
		if len(users) > 1 {
			if why := ValidKeyPrefix(u.KeyPrefix); why != "" {
				return "", fmt.Errorf("redisconf: key prefix %q of lock user %s %s", u.KeyPrefix, u.Name, why)
			}
		}
	}
	if a, b, overlap := OverlappingPrefixes(users); overlap {
		return "", fmt.Errorf("redisconf: lock user %s (prefix %q) reaches lock user %s's keys (prefix %q)", a.Name, a.KeyPrefix, b.Name, b.KeyPrefix)
	}
	if c.EvalUser != "" && c.EvalPassword == "" {
		return "", fmt.Errorf("redisconf: eval user %q has no password: set EvalPassword", c.EvalUser)
	}
	if c.MonitorUser != "" && c.MonitorPassword == "" {
		return "", fmt.Errorf("redisconf: monitoring user %q has no password: set MonitorPassword", c.MonitorUser)
	}
	if c.ACLFile == "" && c.hashedPasswords() {
		return "", fmt.Errorf("redisconf: a password given as its hash (HashedPassword) needs an ACL file: requirepass and user lines take the password")
	}
	if c.DataDir == "" {
		return "", fmt.Errorf("redisconf: data dir is required")
	}
	if c.Port < 1 || c.Port > 65535 {
		return "", fmt.Errorf("redisconf: port %d out of range 1-65535", c.Port)
	}
	bind := or(c.Bind, "127.0.0.1")
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("# Written by redlock-kit. Every line below is a Redlock safety setting.")
	line("bind %s", bind)
	if c.TLS != nil {
		if c.TLS.CertFile == "" || c.TLS.KeyFile == "" || c.TLS.CACertFile == "" {
			return "", fmt.Errorf("redisconf: TLS needs a certificate, a key and a CA certificate file")
		}
		line("# TLS only: the plain-text port is closed. Clients authenticate with passwords, not")
		line("# certificates; they verify the server against the CA.")
		line("port 0")
		line("tls-port %d", c.Port)
		line("tls-cert-file %s", quote(c.TLS.CertFile))
		line("tls-key-file %s", quote(c.TLS.KeyFile))
		line("tls-ca-cert-file %s", quote(c.TLS.CACertFile))
		line("tls-auth-clients no")
		line("tls-protocols %s", quote(TLSProtocols))
	} else {
		line("port %d", c.Port)
	}
	line("protected-mode yes")
	line("daemonize no")
	line("dir %s", quote(c.DataDir))
	if c.PidFile != "" {
		line("pidfile %s", quote(c.PidFile))
	}
	if c.LogFile != "" {
		line("logfile %s", quote(c.LogFile))
	}
	line("# Durability: acknowledged keys survive a crash and a power loss.")
	line("appendonly yes")
	line("appendfsync %s", or(c.AppendFsync, AppendFsync))
	line("no-appendfsync-on-rewrite %s", NoAppendfsyncOnRewrite)
	line(`save ""`)
	line("# Eviction would silently drop live locks.")
	line("maxmemory %s", or(c.MaxMemory, DefaultMaxMemory))
	line("maxmemory-policy %s", MaxmemoryPolicy)
	line("# Independent master: never a replica, never replicated from.")
	line("replica-serve-stale-data no")
	if c.ACLFile != "" {
		line("# Authentication: every user, the admin (default) included, is in the ACL file, with")
		line("# password hashes only (RenderACL); live changes are saved there (ACL SAVE).")
		line("aclfile %s", quote(c.ACLFile))
	} else {
		line("# Authentication: admin is the default user; lock clients get a restricted user.")
		line("requirepass %s", quote(c.AdminPassword))
		for _, u := range users {
			line("user %s", userLine(u.Name, u.Password, u.KeyPattern(), u.Commands()))
		}
		if c.EvalPassword != "" {
			line("# Clients that send their own Lua (EVAL) get their own user.")
			line("user %s", userLine(or(c.EvalUser, DefaultEvalUser), c.EvalPassword, "*", EvalUserCommands()))
		}
	}
	// With an ACL file the monitoring user is in it (RenderACL): the server refuses to start
	// with users both in its config and in an ACL file.
	if c.MonitorPassword != "" && c.ACLFile == "" {
		line("# Exporters log in as the monitoring user: server state, no key, no CONFIG.")
		line("user %s on %s resetkeys resetchannels -@all %s", or(c.MonitorUser, DefaultMonitorUser),
			quote(">"+c.MonitorPassword), strings.Join(MonitorUserCommands, " "))
	}
	line("# Slow events (an fsync above all) are recorded for LATENCY LATEST, which monitoring reads.")
	line("latency-monitor-threshold %d", LatencyMonitorThreshold)
	line("# Scripts: lock users run the kit's function library (FCALL; the admin loads it at every")
	line("# start). A script running longer than this makes the server answer BUSY and accept SCRIPT KILL.")
	line("busy-reply-threshold %d", BusyReplyThreshold)
	return b.String(), nil
}

// Users returns the lock users c defines: LockUsers, or the single LockUser (default name
// DefaultLockUser) with no prefix.
func (c Config) Users() []LockUser {
	if len(c.LockUsers) > 0 {
		return c.LockUsers
	}
	return []LockUser{{Name: or(c.LockUser, DefaultLockUser), Password: c.LockPassword}}
}

// userLine is a redis.conf user directive after "user ": its keys and channels share one
// pattern.
func userLine(name, password, keyPattern string, commands []string) string {
	p := or(keyPattern, "*")
	return fmt.Sprintf("%s on %s resetkeys ~%s resetchannels &%s -@all %s", name, quote(">"+password), p, p,
		strings.Join(commands, " "))
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// quote wraps a value for redis.conf, which accepts C-style double-quoted strings.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}
