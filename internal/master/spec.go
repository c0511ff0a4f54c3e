// Package master is the specification of one Redlock master, independent of what runs it.
//
// A Spec says what a master is (address, data dir, credentials, limits, hooks) with plain Go
// types. Two runtimes take the same Spec and neither keeps its own copy of the rules:
//
//   - local: internal/master/local, behind the provider's redlock_master resource, which runs
//     redis-server under its supervisor (internal/master/local/supervisor) on the machine
//     that runs terraform;
//   - host: internal/hostconfig, which renders the files and systemd drop-in a host the user
//     runs needs (Debian's redis-server or valkey-server under systemd, via cloud-init).
//
// The durability and memory rules themselves are rendered into redis.conf by
// internal/redisconf; the timing rules (how long a crashed master stays down) live here.
package master

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// Defaults and floors of the timing rules.
const (
	// DefaultMaxLockTTL is the largest lock TTL clients may use when none is configured.
	DefaultMaxLockTTL = 30 * time.Second
	// MarginFloor is the smallest default clock drift margin.
	MarginFloor = time.Second
	// HealthCheckAllowance is how long a master may have been alive after it was last seen
	// alive by a runtime that polls it (the local supervisor's PING interval).
	HealthCheckAllowance = 100 * time.Millisecond
	// MinPasswordLength is the shortest admin or lock password accepted.
	MinPasswordLength = 16
)

// LockUser is a tenant: a restricted lock user confined to a key prefix.
type LockUser = redisconf.LockUser

// Users returns the lock users the master defines: LockUsers, or the single LockUser with
// no prefix.
func (s Spec) Users() []LockUser { return s.RedisConfig("").Users() }

// Hooks are commands (argv, no shell) run on restart-policy events. An empty argv runs
// nothing. Every runtime gives them the same environment: REDLOCK_EVENT (crash |
// before_restart | after_restart), REDLOCK_MASTER_NAME, REDLOCK_MASTER_ADDR, REDLOCK_DATA_DIR,
// REDLOCK_REDIS_PID, REDLOCK_RESTART_DELAY_MS and REDLOCK_RESTART_AT (RFC 3339). A failing
// hook is logged; it never changes the restart policy.
type Hooks struct {
	OnCrash       []string `json:"on_crash,omitempty"`
	BeforeRestart []string `json:"before_restart,omitempty"`
	AfterRestart  []string `json:"after_restart,omitempty"`
}

// Each calls fn for every hook in a fixed order, with its attribute name.
func (h Hooks) Each(fn func(name string, argv []string)) {
	fn("on_crash", h.OnCrash)
	fn("before_restart", h.BeforeRestart)
	fn("after_restart", h.AfterRestart)
}

// Spec is one master. Zero values take the safe default (see WithDefaults).
type Spec struct {
	Name         string // for logs and hooks
	Bind         string // address the server listens on
	Port         int
	DataDir      string // the AOF and the runtime's markers live here
	ServerBinary string // redis-server or valkey-server

	MaxLockTTL       time.Duration // largest TTL lock clients may use
	ClockDriftMargin time.Duration // added to MaxLockTTL for the restart delay
	// RestartDelay is how long a master that did not stop cleanly stays down before it
	// serves again: at least MaxLockTTL + ClockDriftMargin.
	RestartDelay time.Duration

	MaxMemory   string // explicit maxmemory (redis.conf units)
	AppendFsync string // "always"; anything else needs AllowUnsafeAppendFsync

	AllowUnsafeAppendFsync bool
	AllowNonLoopbackBind   bool

	AdminPassword string // the default (admin) user's password
	LockUser      string // the restricted user lock clients authenticate as
	LockPassword  string
	// LockUsers (tenants), when not empty, replace LockUser/LockPassword: one restricted
	// user per application, each confined to its own key prefix.
	LockUsers []LockUser

	// MonitorUser/MonitorPassword add the monitoring user exporters log in as (server
	// state only: redisconf.MonitorUserCommands); none when MonitorPassword is empty.
	// MonitorUser defaults to redisconf.DefaultMonitorUser.
	MonitorUser     string
	MonitorPassword string

	Hooks Hooks

	// TLS, when set, makes the master serve TLS only (see TLS).
	TLS *TLS
}

// MinMargin is the smallest clock drift margin that covers a lock of ttl: the clock-rate
// error Redlock allows (1% + 2 ms) plus the interval at which a runtime may last have seen
// the master alive.
func MinMargin(ttl time.Duration) time.Duration {
	return ttl/100 + 2*time.Millisecond + HealthCheckAllowance
}

// DefaultMargin is the clock drift margin used when none is configured.
func DefaultMargin(ttl time.Duration) time.Duration {
	return max(MarginFloor, MinMargin(ttl).Round(time.Millisecond))
}

// WithDefaults returns s with every zero value that has a safe default filled in: max lock
// TTL, drift margin, restart delay (max TTL + margin), lock user, maxmemory, appendfsync.
func (s Spec) WithDefaults() Spec {
	if s.MaxLockTTL == 0 {
		s.MaxLockTTL = DefaultMaxLockTTL
	}
	if s.ClockDriftMargin == 0 {
		s.ClockDriftMargin = DefaultMargin(s.MaxLockTTL)
	}
	if s.RestartDelay == 0 {
		s.RestartDelay = s.MaxLockTTL + s.ClockDriftMargin
	}
	// Whole milliseconds, rounded up: the unit of every file and record that carries the
	// delay (a fraction cut off there would hold a crashed master shorter than required).
	s.RestartDelay = hold.CeilMS(s.RestartDelay)
	if s.LockUser == "" {
		s.LockUser = redisconf.DefaultLockUser
	}
	if s.MaxMemory == "" {
		s.MaxMemory = redisconf.DefaultMaxMemory
	}
	if s.AppendFsync == "" {
		s.AppendFsync = redisconf.AppendFsync
	}
	if s.MonitorPassword != "" && s.MonitorUser == "" {
		s.MonitorUser = redisconf.DefaultMonitorUser
	}
	return s
}

// LongHoldTTL is the largest max lock TTL planned without a warning. Longer TTLs are safe,
// but every crash then costs availability in proportion: see LongHold.
const LongHoldTTL = 5 * time.Minute

// LongHold explains what a long max lock TTL (above LongHoldTTL), or a restart delay longer
// than such a TTL needs, costs: a crashed master stays down for the whole restart delay, and
// while a majority is down no lock can be taken at all. long is false for a shorter hold.
// Zero values take their defaults (WithDefaults).
func (s Spec) LongHold() (summary, detail string, long bool) {
	d := s.WithDefaults()
	if d.MaxLockTTL <= LongHoldTTL && d.RestartDelay <= LongHoldTTL+DefaultMargin(LongHoldTTL) {
		return "", "", false
	}
	return "Long max_lock_ttl: a crashed master stays down " + HumanDuration(d.RestartDelay),
		fmt.Sprintf("max_lock_ttl = %s, restart_delay = %s: a master that crashes (kill, OOM, reboot, power loss) stays "+
			"down for restart_delay = %s (about %s) after the crash before it serves again, so that every lock it granted "+
			"has expired on the other masters. While a majority of the masters is down at once (3 of 5, say), no lock "+
			"can be taken: every lock is refused for that long. Use the largest TTL your clients really hold a lock for (a long job can extend its lock), "+
			"usually seconds to a few minutes; this warning appears above %s.",
			d.MaxLockTTL, d.RestartDelay, d.RestartDelay, HumanDuration(d.RestartDelay), LongHoldTTL), true
}

// HumanDuration renders d in the largest whole unit that fits, for messages: "1.0 hours",
// "4208.3 days".
func HumanDuration(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.1f days", d.Hours()/24)
	case d >= time.Hour:
		return fmt.Sprintf("%.1f hours", d.Hours())
	case d >= 2*time.Minute:
		return fmt.Sprintf("%.1f minutes", d.Minutes())
	}
	return d.String()
}

// FieldError is a Spec field that is wrong, named as the Terraform attribute that sets it,
// with what is wrong and how to fix it. The provider turns it into an attribute diagnostic.
type FieldError struct {
	Field   string // attribute name, e.g. "restart_delay"
	Summary string
	Detail  string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Detail }

// CheckTiming checks the timing rules: a positive max lock TTL, a drift margin of at least
// MinMargin, and a restart delay of at least max TTL + margin. Zero margin or delay means
// the default and passes.
func (s Spec) CheckTiming() error {
	if s.MaxLockTTL <= 0 {
		return &FieldError{Field: "max_lock_ttl", Summary: "max_lock_ttl must be positive",
			Detail: fmt.Sprintf("max_lock_ttl is %s: set the largest lock TTL your clients use, e.g. \"30s\".", s.MaxLockTTL)}
	}
	margin := s.ClockDriftMargin
	if margin == 0 {
		margin = DefaultMargin(s.MaxLockTTL)
	} else if minimum := MinMargin(s.MaxLockTTL); margin < minimum {
		return &FieldError{Field: "clock_drift_margin", Summary: "clock_drift_margin too small",
			Detail: fmt.Sprintf("clock_drift_margin = %s is less than %s (1%% of max_lock_ttl %s + 2ms drift + 100ms "+
				"health-check interval): a restarted master could rejoin while a lock it granted is still valid "+
				"elsewhere. Set at least %q, or leave it out.", margin, minimum, s.MaxLockTTL, minimum.String())}
	}
	if delay := max(s.RestartDelay, s.MaxLockTTL+margin); delay > hold.MaxRestartDelay {
		return &FieldError{Field: "restart_delay", Summary: "restart_delay longer than a week",
			Detail: fmt.Sprintf("restart_delay (max_lock_ttl + clock_drift_margin, or as set) = %s is longer than %s, the "+
				"longest hold either runtime accepts (a longer one on disk reads as corrupt): lower max_lock_ttl or restart_delay.",
				delay, hold.MaxRestartDelay)}
	}
	if s.RestartDelay == 0 {
		return nil
	}
	if minimum := s.MaxLockTTL + margin; s.RestartDelay < minimum {
		return &FieldError{Field: "restart_delay", Summary: "restart_delay shorter than max_lock_ttl + clock_drift_margin",
			Detail: fmt.Sprintf("restart_delay = %s is less than max_lock_ttl (%s) + clock_drift_margin (%s) = %s: a crashed "+
				"master would rejoin while locks it granted are still valid on the other masters, and a second client "+
				"could win a majority. Set restart_delay to at least %q, or leave it out (it then defaults to that).",
				s.RestartDelay, s.MaxLockTTL, margin, minimum, minimum.String())}
	}
	return nil
}

// Check reports every field of a defaulted Spec that would make an unsafe or unusable
// master, each as a *FieldError (errors.Join; nil when the Spec is good).
func (s Spec) Check() error {
	var errs []error
	add := func(field, summary, detail string) {
		errs = append(errs, &FieldError{Field: field, Summary: summary, Detail: detail})
	}
	if err := s.CheckTiming(); err != nil {
		errs = append(errs, err)
	}
	if ip := net.ParseIP(s.Bind); ip == nil {
		add("bind", "Invalid bind address", fmt.Sprintf("bind = %q is not an IP address: give the address the master "+
			"listens on, such as \"127.0.0.1\" or the host's private address.", s.Bind))
	} else if !ip.IsLoopback() && !s.AllowNonLoopbackBind {
		add("bind", "Non-loopback bind refused", fmt.Sprintf("bind = %q is reachable from the network: use a loopback "+
			"address, or allow a network address explicitly.", s.Bind))
	}
	if s.Port < 1 || s.Port > 65535 {
		add("port", "Invalid port", fmt.Sprintf("port = %d: use 1-65535 (6379 is Redis's own).", s.Port))
	}
	if s.DataDir == "" {
		add("data_dir", "data_dir is required", "data_dir is empty: give the directory that holds the AOF.")
	}
	if s.AppendFsync != redisconf.AppendFsync && !s.AllowUnsafeAppendFsync {
		add("appendfsync", "Unsafe appendfsync refused", fmt.Sprintf("appendfsync = %q lets a crash or power loss "+
			"forget locks the master already acknowledged. Use \"always\".", s.AppendFsync))
	}
	passwords := [][2]string{{"admin_password", s.AdminPassword}}
	if len(s.LockUsers) == 0 {
		passwords = append(passwords, [2]string{"lock_password", s.LockPassword})
	}
	for _, pw := range passwords {
		if len(pw[1]) < MinPasswordLength {
			add(pw[0], "Password too short", fmt.Sprintf("%s has %d characters: use at least %d (redlock_credentials "+
				"generates 64).", pw[0], len(pw[1]), MinPasswordLength))
		}
	}
	if len(s.LockUsers) == 0 && s.AdminPassword != "" && s.AdminPassword == s.LockPassword {
		add("lock_password", "Lock password equals the admin password", "lock_password must differ from "+
			"admin_password: lock clients must not be able to act as the admin.")
	}
	errs = append(errs, CheckLockUsers(s.LockUsers, s.AdminPassword)...)
	errs = append(errs, s.checkMonitorUser()...)
	s.Hooks.Each(func(name string, argv []string) {
		if len(argv) > 0 && argv[0] == "" {
			add("hooks", "Hook program is empty", fmt.Sprintf("hooks.%s has an empty program name: give argv, e.g. "+
				"[\"/bin/sh\", \"-c\", \"...\"].", name))
		}
	})
	if err := s.CheckTLS(time.Now()); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// CheckLockUsers checks tenants: valid names, each with its own password (not the admin's)
// and a prefix that no other tenant's prefix reaches. Each problem is a *FieldError of
// "lock_users". A password that is still unknown ("") at plan time is not checked.
func CheckLockUsers(users []LockUser, adminPassword string) []error {
	var errs []error
	add := func(summary, detail string) {
		errs = append(errs, &FieldError{Field: "lock_users", Summary: summary, Detail: detail})
	}
	seen := map[string]string{}
	for _, u := range users {
		at := fmt.Sprintf("lock_users[%q]", u.Name)
		if !ValidUserName(u.Name) {
			add("Invalid lock user name", fmt.Sprintf("%s: the name is the ACL user clients log in as: use 1-64 letters, "+
				"digits, '_' or '-', and not \"default\" (the admin).", at))
		}
		if why := redisconf.ValidKeyPrefix(u.KeyPrefix); why != "" {
			add("Invalid key prefix", fmt.Sprintf("%s.key_prefix = %q %s.", at, u.KeyPrefix, why))
		}
		switch {
		case u.Password == "":
		case len(u.Password) < MinPasswordLength:
			add("Password too short", fmt.Sprintf("%s.password has %d characters: use at least %d (redlock_credentials "+
				"generates 64).", at, len(u.Password), MinPasswordLength))
		case u.Password == adminPassword:
			add("Lock password equals the admin password", fmt.Sprintf("%s.password must differ from admin_password: "+
				"lock clients must not be able to act as the admin.", at))
		case seen[u.Password] != "":
			add("Two lock users share a password", fmt.Sprintf("%s.password equals lock_users[%q].password: give each "+
				"application its own secret (one redlock_credentials per lock user).", at, seen[u.Password]))
		}
		if u.Password != "" && seen[u.Password] == "" {
			seen[u.Password] = u.Name
		}
	}
	if a, b, overlap := redisconf.OverlappingPrefixes(users); overlap {
		add("Key prefixes overlap", fmt.Sprintf("lock_users[%q].key_prefix = %q is a prefix of lock_users[%q].key_prefix "+
			"= %q: %s could read, delete and overwrite %s's locks. Give each lock user a prefix no other one starts "+
			"with, e.g. end every prefix with ':'.", a.Name, a.KeyPrefix, b.Name, b.KeyPrefix, a.Name, b.Name))
	}
	return errs
}

// checkMonitorUser checks the monitoring user, when there is one: a valid name of its own
// and a password of its own (an exporter's password sits in its config: it must not open
// the admin or a lock user).
func (s Spec) checkMonitorUser() []error {
	if s.MonitorPassword == "" {
		return nil
	}
	var errs []error
	add := func(field, summary, detail string) {
		errs = append(errs, &FieldError{Field: field, Summary: summary, Detail: detail})
	}
	name := s.MonitorUser
	if name == "" {
		name = redisconf.DefaultMonitorUser
	}
	if !ValidUserName(name) {
		add("monitor_user", "Invalid monitoring user name", fmt.Sprintf("monitor_user = %q: use 1-64 letters, digits, "+
			"'_' or '-', and not \"default\" (the admin).", name))
	}
	for _, u := range s.RedisConfig("").Users() {
		if u.Name == name {
			add("monitor_user", "Monitoring user is a lock user", fmt.Sprintf("monitor_user = %q is also a lock user's "+
				"name: give the monitoring user a name of its own (default %q).", name, redisconf.DefaultMonitorUser))
		}
		if u.Password == s.MonitorPassword {
			add("monitor_password", "Monitoring password equals a lock password", fmt.Sprintf("monitor_password equals "+
				"the password of lock user %q: an exporter's config must not open a lock user. Give it its own "+
				"(redlock_credentials generates one).", u.Name))
		}
	}
	switch {
	case len(s.MonitorPassword) < MinPasswordLength:
		add("monitor_password", "Password too short", fmt.Sprintf("monitor_password has %d characters: use at least %d "+
			"(redlock_credentials generates 64).", len(s.MonitorPassword), MinPasswordLength))
	case s.MonitorPassword == s.AdminPassword:
		add("monitor_password", "Monitoring password equals the admin password", "monitor_password must differ from "+
			"admin_password: an exporter's config must not open the admin.")
	}
	return errs
}

// UserNamePattern is what a lock user's name may be: 1-64 letters, digits, '_' or '-' (an
// ACL user name). The provider's attribute validators use it too.
var UserNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidUserName reports whether name can be a lock user: UserNamePattern, and not
// "default" (the admin user).
func ValidUserName(name string) bool { return name != "default" && UserNamePattern.MatchString(name) }

// RedisConfig is the redis.conf (internal/redisconf) this master runs with. A TLS master's
// files are in tlsDir (see TLSFiles); without TLS tlsDir is unused.
func (s Spec) RedisConfig(tlsDir string) redisconf.Config {
	return redisconf.Config{
		Bind: s.Bind, Port: s.Port, DataDir: s.DataDir,
		AdminPassword: s.AdminPassword, LockUser: s.LockUser, LockPassword: s.LockPassword, LockUsers: s.LockUsers,
		MonitorUser: s.MonitorUser, MonitorPassword: s.MonitorPassword,
		MaxMemory: s.MaxMemory, AppendFsync: s.AppendFsync, TLS: s.TLSFiles(tlsDir),
	}
}

// Addr is host:port of the master.
func (s Spec) Addr() string { return net.JoinHostPort(s.Bind, fmt.Sprint(s.Port)) }

// FieldErrors unpacks the *FieldError values of an error returned by Check or CheckTiming.
func FieldErrors(err error) []*FieldError {
	if err == nil {
		return nil
	}
	var out []*FieldError
	var fe *FieldError
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			out = append(out, FieldErrors(e)...)
		}
		return out
	}
	if errors.As(err, &fe) {
		out = append(out, fe)
	}
	return out
}
