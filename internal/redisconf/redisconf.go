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
)

// LockUserCommands are the only commands a Redlock client needs: SET NX PX to acquire,
// the compare-and-delete / compare-and-pexpire / fencing scripts, PTTL to learn when a
// held key expires, pub/sub for release notifications, and the connection handshake.
// Scripts run with the caller's permissions, so the script bodies are bounded by this too:
// DEL and PEXPIRE are listed for the compare-and-delete / compare-and-pexpire scripts.
var LockUserCommands = []string{
	"+ping", "+hello", "+auth", "+client|setname",
	"+set", "+get", "+del", "+pexpire", "+pttl", "+eval", "+evalsha", "+script|load", "+script|exists",
	"+publish", "+subscribe", "+unsubscribe", "+time",
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
	MaxMemory      string // explicit maxmemory; DefaultMaxMemory when empty
	// AppendFsync is "always" unless a caller explicitly opted out of safety.
	AppendFsync string
	PidFile     string // optional
	LogFile     string // optional; "" logs to stdout
	// TLS, when set, makes the master serve TLS only: Port becomes the tls-port and the
	// plain-text port is closed (port 0).
	TLS *TLSFiles
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
	if c.AdminPassword == "" || c.LockPassword == "" {
		return "", fmt.Errorf("redisconf: admin and lock passwords are required")
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
	line("# Authentication: admin is the default user; lock clients get a restricted user.")
	line("requirepass %s", quote(c.AdminPassword))
	line("user %s on %s resetkeys ~%s resetchannels &* -@all %s", or(c.LockUser, DefaultLockUser),
		quote(">"+c.LockPassword), or(c.LockKeyPattern, "*"), strings.Join(LockUserCommands, " "))
	return b.String(), nil
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
