// Package redisconf renders the one safe redis.conf a Redlock master may run with.
//
// The provider, the test harness and the audit all derive from this package, so the
// settings the kit promises are written down exactly once.
package redisconf

import (
	"fmt"
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
)

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
// when a held key expires, pub/sub for release notifications, and the connection
// handshake. Functions run with the caller's permissions, so their bodies are bounded by
// this too: DEL and PEXPIRE are listed for compare-and-delete / compare-and-pexpire.
// There is no EVAL, EVALSHA, SCRIPT or FUNCTION: a lock user runs the kit's functions
// and no other Lua (only the admin can load functions). Every lock user gets this list.
var LockUserCommands = []string{
	"+ping", "+hello", "+auth", "+client|setname",
	"+set", "+get", "+del", "+pexpire", "+pttl", "+fcall",
	"+publish", "+subscribe", "+unsubscribe", "+time",
}

// EvalCommands are what a client that sends its own Lua (other Redlock clients, such as
// redsync, release with EVAL) needs beyond the lock commands. Such a client can run any
// script, busy ones included (cut short only by BusyReplyThreshold and a SCRIPT KILL), so
// it gets a user of its own (Config.EvalUser), never the lock user's rights.
var EvalCommands = []string{"+eval", "+evalsha", "+script|load", "+script|exists"}

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

// UserRules are the ACL rules of a restricted user (the lock user, an EVAL user), after
// its name, in the order ACL SETUSER takes them: password, keys, channels, commands.
func UserRules(password, keyPattern string, commands []string) []string {
	return append([]string{"reset", "on", ">" + password, "~" + or(keyPattern, "*"), "resetchannels", "&*", "-@all"},
		commands...)
}

// Config describes one master. Zero values mean the safe default where one exists.
type Config struct {
	Bind           string // address to listen on; "127.0.0.1" when empty
	Port           int
	DataDir        string // AOF and the rest live here
	AdminPassword  string // password of the default (admin) user; required
	LockUser       string // restricted ACL user for lock clients; DefaultLockUser when empty
	LockPassword   string // required
	LockKeyPattern string // key pattern the lock user may touch; "*" when empty
	// EvalUser/EvalPassword add a user for clients that need EVAL (EvalUserCommands, the
	// same key pattern as the lock user), e.g. redsync beside the kit's library; none
	// when EvalPassword is empty.
	EvalUser     string
	EvalPassword string
	MaxMemory    string // explicit maxmemory; DefaultMaxMemory when empty
	// AppendFsync is "always" unless a caller explicitly opted out of safety.
	AppendFsync string
	PidFile     string // optional
	LogFile     string // optional; "" logs to stdout
}

// Render returns the redis.conf text. It fails when a required field is missing rather than
// producing a config that would start an unauthenticated master.
func (c Config) Render() (string, error) {
	if c.AdminPassword == "" || c.LockPassword == "" {
		return "", fmt.Errorf("redisconf: admin and lock passwords are required")
	}
	if c.EvalUser != "" && c.EvalPassword == "" {
		return "", fmt.Errorf("redisconf: eval user %q has no password: set EvalPassword", c.EvalUser)
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
	line("port %d", c.Port)
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
	line("# Authentication: admin is the default user; lock clients get a restricted user.")
	line("requirepass %s", quote(c.AdminPassword))
	line("user %s", userLine(or(c.LockUser, DefaultLockUser), c.LockPassword, c.LockKeyPattern, LockUserCommands))
	if c.EvalPassword != "" {
		line("# Clients that send their own Lua (EVAL) get their own user.")
		line("user %s", userLine(or(c.EvalUser, DefaultEvalUser), c.EvalPassword, c.LockKeyPattern, EvalUserCommands()))
	}
	line("# Scripts: lock users run the kit's function library (FCALL; the admin loads it at every")
	line("# start). A script running longer than this makes the server answer BUSY and accept SCRIPT KILL.")
	line("busy-reply-threshold %d", BusyReplyThreshold)
	return b.String(), nil
}

// userLine is a redis.conf user directive after "user ".
func userLine(name, password, keyPattern string, commands []string) string {
	return fmt.Sprintf("%s on %s resetkeys ~%s resetchannels &* -@all %s", name, quote(">"+password),
		or(keyPattern, "*"), strings.Join(commands, " "))
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
