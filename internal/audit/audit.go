package audit

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/funclib"
	"github.com/redlock-kit/redlock-kit/internal/pki"
)

// Defaults for the zero values of Target.
const (
	DefaultNodeTimeout   = 2 * time.Second
	DefaultClockInterval = 500 * time.Millisecond
	DefaultDriftFactor   = 0.01
	DefaultRTTSamples    = 5
	// driftConstant is the fixed part of Redlock's drift allowance.
	driftConstant = 2 * time.Millisecond
)

// Target is the deployment to audit. Zero values are safe defaults where one exists.
type Target struct {
	// Endpoints are the masters, "host:port" each.
	Endpoints []string
	// Username/Password: a user allowed to run CONFIG GET, INFO and TIME (the admin user).
	// An empty Username means the default user.
	Username string
	Password string
	// LockUsername/LockPassword: the restricted lock user. When given, the audit checks
	// that it can authenticate and that it cannot run CONFIG (a lock client that can
	// reconfigure a master can switch off its safety).
	LockUsername string
	LockPassword string
	// TLS connects with TLS (server name = endpoint host). TLSConfig overrides the
	// default config when set (the deployment's CA: pki.ClientConfig). TLS also makes the
	// audit check that every master serves TLS only (plain-text port closed).
	TLS       bool
	TLSConfig *tls.Config
	// MaxLockTTL is the largest TTL clients use. Required: the restart delay, the clock
	// and the round-trip checks are all relative to it.
	MaxLockTTL time.Duration
	// RestartDelay is how long a crashed master stays down; 0 means unknown (not checked).
	RestartDelay time.Duration
	// NodeTimeout bounds each connection attempt and command; DefaultNodeTimeout when zero.
	NodeTimeout time.Duration
	// ClockInterval separates the two TIME samples of the clock-rate measurement;
	// DefaultClockInterval when zero.
	ClockInterval time.Duration
	// DriftFactor is the clock-rate error Redlock tolerates (0.01 = 1%);
	// DefaultDriftFactor when zero.
	DriftFactor float64
	// RTTSamples is how many round trips the RTT median is taken over; DefaultRTTSamples when zero.
	RTTSamples int
	// Dialer, when set, opens the connections to the masters (go-redis's Options.Dialer),
	// for callers that reach them through a tunnel or another network namespace.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Master is what the audit learnt about one endpoint.
type Master struct {
	Endpoint  string `json:"endpoint"`
	Reachable bool   `json:"reachable"`
	// Error is why the master could not be audited (fully); empty when it could.
	Error                  string `json:"error,omitempty"`
	Role                   string `json:"role,omitempty"`
	ConnectedReplicas      int    `json:"connected_replicas"`
	MasterHost             string `json:"master_host,omitempty"` // "host:port" of its master when a replica
	RunID                  string `json:"run_id,omitempty"`
	AOFEnabled             bool   `json:"aof_enabled"`
	AppendFsync            string `json:"appendfsync,omitempty"`
	NoAppendfsyncOnRewrite string `json:"no_appendfsync_on_rewrite,omitempty"`
	MaxMemory              int64  `json:"maxmemory"`
	MaxMemoryPolicy        string `json:"maxmemory_policy,omitempty"`
	// SystemMemory is the machine's memory as the server reports it (total_system_memory;
	// 0 when not reported): a maxmemory above it is no limit at all.
	SystemMemory           int64  `json:"total_system_memory,omitempty"`
	AOFLastWriteStatus     string `json:"aof_last_write_status,omitempty"`
	AOFLastBgrewriteStatus string `json:"aof_last_bgrewrite_status,omitempty"`
	// ClockOffset is the master's wall clock minus the caller's, at the midpoint of the
	// TIME round trip (positive: the master is ahead).
	ClockOffset time.Duration `json:"-"`
	// ClockRate is master-clock elapsed / caller-monotonic elapsed over ClockInterval
	// (1 = same rate); ClockRateError bounds the measurement error of that ratio.
	ClockRate      float64       `json:"clock_rate"`
	ClockRateError float64       `json:"clock_rate_error"`
	RTT            time.Duration `json:"-"` // median round trip of a trivial command (TIME)
	Uptime         time.Duration `json:"-"`
	// PlainPort and TLSPort are the master's port and tls-port settings, read when the
	// deployment uses TLS ("0": closed). A TLS deployment's masters serve TLS only.
	PlainPort string `json:"plain_port,omitempty"`
	TLSPort   string `json:"tls_port,omitempty"`
	// BusyReplyThreshold is how long a script or function may run before the master
	// answers BUSY and accepts SCRIPT KILL (busy-reply-threshold, lua-time-limit before
	// Redis 7); BusyReplyThresholdMS says whether it was read.
	BusyReplyThreshold time.Duration `json:"-"`
	// FunctionLibrary is what the master holds of the kit's function library:
	// "current" (this build's), "stale" (another version: its clients fall back to EVALSHA,
	// which lock users may not run), "missing", or "" when it could not be read
	// (FunctionLibraryError says why: a server without Functions, an admin without
	// FUNCTION LIST).
	FunctionLibrary        string `json:"function_library"`
	FunctionLibraryVersion string `json:"function_library_version,omitempty"`
	FunctionLibraryError   string `json:"function_library_error,omitempty"`
	// ShadowedFunctions are functions this build's clients call by name that the master
	// runs with other code than this build's library (funclib.Status.Shadowed);
	// ForgedFunctions says that code cannot be any kit version's.
	ShadowedFunctions []string `json:"shadowed_functions,omitempty"`
	ForgedFunctions   bool     `json:"forged_functions,omitempty"`
	// LockUserCanEval: the lock user may run EVAL (arbitrary Lua, busy loops included),
	// asked with ACL DRYRUN as admin.
	LockUserCanEval bool `json:"lock_user_can_eval"`
	// LockUserChecked is true when lock credentials were given and tried.
	LockUserChecked bool `json:"lock_user_checked"`
	// LockUserCanConfig: the lock user was allowed to run CONFIG GET (it must not be).
	LockUserCanConfig bool `json:"lock_user_can_config"`
	// LockUsers are the users other than the admin, with their key and channel patterns,
	// whether they need a password, and the dangerous commands each may run (ACL DRYRUN as
	// admin); Admin is the admin's own entry. TenantsChecked is true when the isolation
	// between them was asked, and TenantLeaks is what one of them may do to another's locks:
	// with several lock users, each must be confined to its own prefix.
	LockUsers      []LockUserACL `json:"lock_users,omitempty"`
	Admin          *LockUserACL  `json:"admin,omitempty"`
	TenantsChecked bool          `json:"tenants_checked"`
	TenantLeaks    []string      `json:"tenant_leaks,omitempty"`
	// ForeignLocks are the keys of users that may run their own Lua (allow_eval) whose TTL
	// the restart hold does not cover (foreign.go), out of ForeignKeysSampled keys of the
	// ForeignUsers sampled.
	ForeignLocks       []ForeignLock `json:"foreign_locks,omitempty"`
	ForeignUsers       []string      `json:"foreign_users,omitempty"`
	ForeignKeysSampled int           `json:"foreign_keys_sampled"`
	// Anonymous says whether a client without credentials is refused ("refused") or let in
	// ("allowed"); "" when it could not be told (see Unchecked). ProtectedMode and Bind are
	// the master's settings, as read.
	Anonymous     string `json:"anonymous,omitempty"`
	ProtectedMode string `json:"protected_mode,omitempty"`
	Bind          string `json:"bind,omitempty"`
	// ConnectionRunIDs are the distinct run_ids seen over several connections to the
	// endpoint: more than one means it is not one server (a balancer or NAT over several).
	ConnectionRunIDs []string `json:"connection_run_ids,omitempty"`
	// PublishedRestartDelay and Runtime are what the runtime that holds the master down after
	// a crash publishes on it (hold.DeploymentKey); DeploymentError says what is wrong with it.
	PublishedRestartDelay time.Duration `json:"-"`
	Runtime               string        `json:"runtime,omitempty"`
	DeploymentError       string        `json:"deployment_error,omitempty"`
	// ConfigUncompared: the record has no hold.FieldConfigDrift, so its runtime does not
	// compare the config file on disk with the rendered one (a host provisioned before the
	// check): a hand edit of the file would go unseen until the next start loads it.
	ConfigUncompared bool `json:"config_uncompared,omitempty"`
	// EndpointForwarded says how the admin connections' server end differed from the
	// address dialled (a port forward, NAT or proxy in between); "" when it did not.
	EndpointForwarded string `json:"endpoint_forwarded,omitempty"`
	// DataFS is the type of the filesystem the master's data dir is on, as its runtime
	// published it (hold.FieldDataFS; "": not published, an earlier version's runtime).
	DataFS string `json:"data_fs,omitempty"`
	// DatasetReplaced says why the master's dataset may have been replaced since it
	// started (continuity.go): replication, a restore, a flush.
	DatasetReplaced []string `json:"dataset_replaced,omitempty"`
	// FenceSeed is the master's record of whether its fence registers are seeded
	// (FenceSeedKey); its zero value: no record.
	FenceSeed FenceSeed `json:"fence_seed"`
	// CertNotAfter is when the master's TLS server certificate expires (TLS only; zero when
	// not read, CertError says why).
	CertNotAfter time.Time `json:"cert_not_after,omitempty"`
	CertError    string    `json:"cert_error,omitempty"`
	// Unchecked are the checks that could not be made on this master (a probe that failed,
	// a command renamed or missing, a field that could not be read). Each leaves the
	// verdict unknown: the audit fails closed.
	Unchecked []string `json:"unchecked,omitempty"`
	// LockUserError is the lock user's authentication failure, if any.
	LockUserError string `json:"lock_user_error,omitempty"`
	// ErrorClass says what kind of failure Error (or LockUserError) is, so that a caller
	// can tell evidence from ignorance: "denied" (WRONGPASS, NOPERM, NOAUTH: the
	// credentials or the ACL are wrong), "unavailable" (no answer in time, connection
	// refused or reset) or "error" (any other refusal). Empty when nothing failed.
	ErrorClass string `json:"error_class,omitempty"`

	// audited is true when every setting above was read; infoRead, configRead and
	// clockRead say which groups were (see Known).
	audited                         bool
	infoRead, configRead, clockRead bool
	busyRead, usersRead             bool
	deploymentRead                  bool
	deploymentReplID                string // the replid the deployment record vouches for ("": none)
	continuityRead                  bool
	// commands is the server's command table (read by checkUsers); stateCalls counts how
	// often each state-changing command has run since the server started (INFO
	// commandstats), so that two audits can tell a change made and undone in between.
	commands   []ServerCommand
	stateCalls string
	// serverVersion is INFO's redis_version ("" when not read).
	serverVersion      string
	uncheckedTransient []bool // per Unchecked entry: no answer (may pass on a new audit)
}

// PublishedRestartDelayMS is PublishedRestartDelay in milliseconds, -1 when it was not read
// or the record does not vouch for this server (DeploymentError: another run, config
// drift): such a record counts as absent, and no hold is shown for it.
func (m Master) PublishedRestartDelayMS() int64 {
	if !m.deploymentRead || m.DeploymentError != "" {
		return -1
	}
	return m.PublishedRestartDelay.Milliseconds()
}

// BusyReplyThresholdMS is BusyReplyThreshold in milliseconds, -1 when it was not read.
func (m Master) BusyReplyThresholdMS() int64 {
	if !m.busyRead {
		return -1
	}
	return m.BusyReplyThreshold.Milliseconds()
}

// Error classes of Master.ErrorClass.
const (
	ClassDenied      = "denied"
	ClassUnavailable = "unavailable"
	ClassError       = "error"
)

// Audited reports whether every setting of the master was read. When false, the zero
// values of the fields that were not read (see Known) mean "unknown", not "off" or 0.
func (m Master) Audited() bool { return m.audited }

// Known says which groups of fields hold values read from the master: info (Role, RunID,
// ConnectedReplicas, Uptime, AOF statuses), config (AOFEnabled, AppendFsync,
// NoAppendfsyncOnRewrite, MaxMemory, MaxMemoryPolicy) and clock (ClockOffset, ClockRate).
func (m Master) Known() (info, config, clock bool) { return m.infoRead, m.configRead, m.clockRead }

// IsDenied reports whether err (or its text, for errors that crossed a process boundary)
// is an access refusal: WRONGPASS, NOPERM or NOAUTH. Retrying cannot help; the
// credentials or the ACL must be fixed.
func IsDenied(err error) bool { return err != nil && DeniedText(err.Error()) }

// DeniedText is IsDenied for an error message.
func DeniedText(msg string) bool {
	for _, code := range []string{"WRONGPASS", "NOPERM", "NOAUTH"} {
		if strings.Contains(msg, code) {
			return true
		}
	}
	return false
}

// classify names the class of one failure (see Master.ErrorClass).
func classify(err error) string {
	var reply redis.Error
	switch {
	case IsDenied(err):
		return ClassDenied
	case errors.As(err, &reply):
		return ClassError // the server answered, with a refusal
	default:
		return ClassUnavailable // no answer: timeout, refused or reset connection, ctx ended
	}
}

// worse keeps the class that matters most for a verdict: denied, then error, then
// unavailable (a refusal is not cured by waiting; a timeout may be).
func worse(a, b string) string {
	rank := map[string]int{"": 0, ClassUnavailable: 1, ClassError: 2, ClassDenied: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// Report is the outcome of Run.
type Report struct {
	Masters []Master `json:"masters"`
	// Quorum is N/2+1 for the endpoints given.
	Quorum    int `json:"quorum"`
	Reachable int `json:"reachable"`
	// Safe is true only when Problems is empty.
	Safe     bool     `json:"safe"`
	Problems []string `json:"problems"`
	// Warnings cost fault tolerance or latency without breaking exclusion, e.g. a
	// minority of masters unreachable.
	Warnings []string `json:"warnings"`
	// Denied and Unknown are the problems that are not evidence against the deployment:
	// Denied, what the credentials or the ACL did not let the audit read (WRONGPASS,
	// NOPERM); Unknown, what it could not learn because masters did not answer (in time).
	// Each is also in Problems. Problems in neither list were read from a master.
	Denied  []string `json:"denied"`
	Unknown []string `json:"unknown"`
	// Unchecked are the unknown problems that are about checks the audit could not make
	// (a renamed command, an admin without ACL rights): waiting does not change them.
	Unchecked []string `json:"unchecked"`
	// OneMachine is true when every endpoint is on one machine (all loopback, or one
	// address): fine for trying the kit, but its masters are not independent. Independence
	// says so in words.
	OneMachine   bool   `json:"one_machine"`
	Independence string `json:"independence"`
	// The limits the findings were computed against.
	MaxLockTTL   time.Duration `json:"-"`
	RestartDelay time.Duration `json:"-"`
	Drift        time.Duration `json:"-"`
	DriftFactor  float64       `json:"drift_factor"`
}

// ErrBadTarget wraps every error Run returns for a Target it cannot audit.
var ErrBadTarget = errors.New("audit: bad target")

// Drift is Redlock's allowance for clock-rate error over ttl: ttl*factor + 2ms.
func Drift(ttl time.Duration, factor float64) time.Duration {
	return time.Duration(float64(ttl)*factor) + driftConstant
}

func (t Target) withDefaults() Target {
	if t.NodeTimeout <= 0 {
		t.NodeTimeout = DefaultNodeTimeout
	}
	if t.ClockInterval <= 0 {
		t.ClockInterval = DefaultClockInterval
	}
	if t.DriftFactor <= 0 {
		t.DriftFactor = DefaultDriftFactor
	}
	if t.RTTSamples <= 0 {
		t.RTTSamples = DefaultRTTSamples
	}
	return t
}

func (t Target) validate() error {
	if len(t.Endpoints) == 0 {
		return fmt.Errorf("%w: endpoints: none given; list every master as host:port", ErrBadTarget)
	}
	for _, e := range t.Endpoints {
		if _, _, err := net.SplitHostPort(e); err != nil {
			return fmt.Errorf("%w: endpoints: %q is not host:port (%v)", ErrBadTarget, e, err)
		}
	}
	if t.MaxLockTTL <= 0 {
		return fmt.Errorf("%w: max_lock_ttl: must be a positive duration such as 30s (the largest TTL clients use); the restart-delay, clock and round-trip checks are relative to it", ErrBadTarget)
	}
	if t.RestartDelay < 0 {
		return fmt.Errorf("%w: restart_delay: must not be negative", ErrBadTarget)
	}
	if t.DriftFactor >= 1 {
		return fmt.Errorf("%w: drift factor %v: must be below 1 (0.01 = 1%%)", ErrBadTarget, t.DriftFactor)
	}
	return nil
}

// Run audits every endpoint concurrently and computes the findings. It returns an error
// only when target itself is unusable (errors.Is(err, ErrBadTarget)) or ctx ends first.
func Run(ctx context.Context, target Target) (*Report, error) {
	return RunWithProgress(ctx, target, nil)
}

// RunWithProgress is Run with a callback per audited master (called from the auditing
// goroutine; it must be safe for concurrent use).
func RunWithProgress(ctx context.Context, target Target, progress func(Master)) (*Report, error) {
	if err := target.validate(); err != nil {
		return nil, err
	}
	target = target.withDefaults()
	masters := make([]Master, len(target.Endpoints))
	var wg sync.WaitGroup
	for i, ep := range target.Endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			masters[i] = auditMaster(ctx, target, ep)
			if progress != nil {
				progress(masters[i])
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return newReport(ctx, target, masters), nil
}

func newReport(ctx context.Context, t Target, masters []Master) *Report {
	r := &Report{Masters: masters, Quorum: len(t.Endpoints)/2 + 1,
		MaxLockTTL: t.MaxLockTTL, RestartDelay: t.RestartDelay,
		Drift: Drift(t.MaxLockTTL, t.DriftFactor), DriftFactor: t.DriftFactor}
	for _, m := range masters {
		if m.Reachable {
			r.Reachable++
		}
	}
	r.Problems, r.Warnings, r.Denied, r.Unknown, r.Unchecked = findings(t, r)
	r.OneMachine, r.Independence = independence(ctx, t.Endpoints, min(t.NodeTimeout, 500*time.Millisecond))
	for _, l := range []*[]string{&r.Problems, &r.Warnings, &r.Denied, &r.Unknown, &r.Unchecked} {
		if *l == nil {
			*l = []string{}
		}
	}
	r.Safe = len(r.Problems) == 0
	return r
}

func (t Target) clientOptions(ep, user, pass string) *redis.Options {
	o := &redis.Options{Addr: ep, Username: user, Password: pass,
		DialTimeout: t.NodeTimeout, ReadTimeout: t.NodeTimeout, WriteTimeout: t.NodeTimeout,
		ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 1,
		// One dial attempt: a master that refuses is reported, not retried for seconds.
		DialerRetries: 1,
		// The audit reads server state; it must not register a client name or library info
		// the lock user may not set.
		DisableIdentity: true,
		Dialer:          t.Dialer}
	if t.TLS {
		if t.TLSConfig != nil {
			o.TLSConfig = t.TLSConfig.Clone()
		} else {
			o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if o.TLSConfig.ServerName == "" {
			host, _, _ := net.SplitHostPort(ep)
			o.TLSConfig.ServerName = strings.Trim(host, "[]")
		}
		if t.Dialer != nil {
			// go-redis applies TLSConfig only with its own dialer.
			o.Dialer = pki.WrapDialer(t.Dialer, o.TLSConfig)
		}
	}
	return o
}

func auditMaster(ctx context.Context, t Target, ep string) Master {
	m := Master{Endpoint: ep}
	if t.TLS {
		// First, and whatever follows: an expired certificate makes the master unreachable.
		m.readServerCert(ctx, t)
	}
	opts := t.clientOptions(ep, t.Username, t.Password)
	conns := &connIdentities{}
	opts.OnConnect, opts.Dialer = conns.onConnect, conns.dialer(opts)
	c := redis.NewClient(opts)
	defer c.Close()

	var errs []string
	note := func(what string, err error) {
		errs = append(errs, what+": "+err.Error())
		m.ErrorClass = worse(m.ErrorClass, classify(err))
	}
	rtt, err := medianRTT(ctx, c, t.RTTSamples, t.NodeTimeout)
	if err != nil {
		var reply redis.Error
		if !errors.As(err, &reply) && !IsDenied(err) {
			m.Error = err.Error() // no answer at all: down, wrong address, TLS mismatch
			m.ErrorClass = ClassUnavailable
			return m
		}
		// The server answered, but with an error (wrong credentials, a replica whose link
		// is down...): it is there, it just cannot be trusted; keep reading what it allows.
		note("TIME", err)
	}
	m.Reachable, m.RTT = true, rtt

	if info, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (string, error) {
		return c.Info(ctx, "server", "replication", "persistence", "memory").Result()
	}); err != nil {
		note("INFO", err)
	} else {
		m.applyInfo(parseInfo(info))
		m.infoRead = true
	}
	if cfg, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (map[string]string, error) {
		return configGet(ctx, c, "appendonly", "appendfsync", "no-appendfsync-on-rewrite", "maxmemory", "maxmemory-policy")
	}); err != nil {
		note("CONFIG GET", err)
	} else if err := m.applyConfig(cfg); err != nil {
		note("CONFIG GET", err)
		m.ErrorClass = worse(m.ErrorClass, ClassError)
	} else {
		m.configRead = true
	}
	if ports, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (map[string]string, error) {
		return configGet(ctx, c, "port", "tls-port")
	}); err != nil {
		note("CONFIG GET", err)
	} else {
		m.PlainPort, m.TLSPort = ports["port"], ports["tls-port"]
	}
	m.readScriptLimits(ctx, t, c)
	m.checkAnonymous(ctx, t, c)
	m.checkIdentity(ctx, t)
	m.readDeployment(ctx, c, t)
	m.readContinuity(ctx, c, t)
	m.readFenceSeed(ctx, c, t)
	m.checkUsers(ctx, c, t)
	m.checkTenants(ctx, c, t)
	m.checkForeignLocks(ctx, c, t)
	if off, rate, rateErr, err := measureClock(ctx, c, t.NodeTimeout, t.ClockInterval); err != nil {
		note("TIME", err)
	} else {
		m.ClockOffset, m.ClockRate, m.ClockRateError = off, rate, rateErr
		m.clockRead = true
	}
	if t.LockUsername != "" {
		m.checkLockUser(ctx, t, c)
	}
	m.readStateCalls(ctx, c, t)
	// Last: every connection the admin client opened, the first one's and any opened again.
	m.mergeConnIdentities(conns)
	if len(errs) > 0 {
		m.Error = strings.Join(errs, "; ")
	} else {
		m.audited = true
	}
	return m
}

// readScriptLimits reads the busy-script threshold and the kit's function library. What
// it cannot read stays unknown (BusyReplyThresholdMS -1, FunctionLibrary "" with the reason); it does not make the master
// unaudited, since neither breaks exclusion.
func (m *Master) readScriptLimits(ctx context.Context, t Target, c *redis.Client) {
	for _, name := range []string{"busy-reply-threshold", "lua-time-limit"} {
		cfg, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (map[string]string, error) {
			return c.ConfigGet(ctx, name).Result()
		})
		if v, ok := cfg[name]; err == nil && ok {
			if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
				m.BusyReplyThreshold, m.busyRead = time.Duration(ms)*time.Millisecond, true
			}
			break
		}
	}
	st, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (funclib.Status, error) { return funclib.Check(ctx, c) })
	switch {
	case err != nil:
		m.FunctionLibraryError = err.Error()
		if !m.beforeFunctions() {
			// A server with Functions whose FUNCTION LIST fails (renamed, NOPERM) may run
			// anything under the kit's function names.
			m.uncheck("the functions the kit's clients call could not be read (FUNCTION LIST)", err)
		}
	case st.Current:
		m.FunctionLibrary = FunctionLibraryCurrent
	case st.Loaded:
		m.FunctionLibrary = FunctionLibraryStale
	default:
		m.FunctionLibrary = FunctionLibraryMissing
	}
	m.FunctionLibraryVersion = st.Version
	// Every shadowed function is forged (funclib.Status.Forged): a finding, not a gap.
	m.ShadowedFunctions, m.ForgedFunctions = st.Shadowed, st.Forged
}

// beforeFunctions reports whether the server predates Redis Functions (7.0): FUNCTION LIST
// failing there is no gap, since no function can shadow the kit's.
func (m Master) beforeFunctions() bool {
	major, _, _ := strings.Cut(m.serverVersion, ".")
	n, err := strconv.Atoi(major)
	return err == nil && n < 7
}

// Values of Master.FunctionLibrary.
const (
	FunctionLibraryCurrent = "current"
	FunctionLibraryStale   = "stale"
	FunctionLibraryMissing = "missing"
)

// nodeCall runs one command bounded by the per-node timeout.
func nodeCall[T any](ctx context.Context, timeout time.Duration, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return f(ctx)
}

// medianRTT times a few TIME commands. TIME rather than PING: a replica whose link is
// down refuses PING (replica-serve-stale-data no) but answers TIME, and the audit must
// still see it to report it.
func medianRTT(ctx context.Context, c *redis.Client, n int, timeout time.Duration) (time.Duration, error) {
	// The first command dials and authenticates; it is not a round trip worth measuring.
	if _, err := nodeCall(ctx, timeout, func(ctx context.Context) (time.Time, error) { return c.Time(ctx).Result() }); err != nil {
		return 0, err
	}
	rtts := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := nodeCall(ctx, timeout, func(ctx context.Context) (time.Time, error) { return c.Time(ctx).Result() }); err != nil {
			return 0, err
		}
		rtts = append(rtts, time.Since(start))
	}
	return Median(rtts), nil
}

// Median returns the middle value (the mean of the two middle values for an even count).
func Median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func configGet(ctx context.Context, c *redis.Client, names ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		res, err := c.ConfigGet(ctx, n).Result()
		if err != nil {
			return nil, err
		}
		v, ok := res[n]
		if !ok {
			return nil, fmt.Errorf("server does not report %s", n)
		}
		out[n] = v
	}
	return out, nil
}

func (m *Master) applyConfig(cfg map[string]string) error {
	m.AOFEnabled = cfg["appendonly"] == "yes"
	m.AppendFsync = cfg["appendfsync"]
	m.NoAppendfsyncOnRewrite = cfg["no-appendfsync-on-rewrite"]
	m.MaxMemoryPolicy = cfg["maxmemory-policy"]
	mm, err := strconv.ParseInt(cfg["maxmemory"], 10, 64)
	if err != nil {
		return fmt.Errorf("maxmemory %q: %v", cfg["maxmemory"], err)
	}
	m.MaxMemory = mm
	return nil
}

// parseInfo turns INFO text into key -> value.
func parseInfo(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

func (m *Master) applyInfo(info map[string]string) {
	m.Role = info["role"]
	m.RunID = info["run_id"]
	m.serverVersion = info["redis_version"]
	m.ConnectedReplicas, _ = strconv.Atoi(info["connected_slaves"])
	if h := info["master_host"]; h != "" {
		m.MasterHost = net.JoinHostPort(h, info["master_port"])
	}
	if s, err := strconv.ParseInt(info["uptime_in_seconds"], 10, 64); err == nil {
		m.Uptime = time.Duration(s) * time.Second
	}
	m.SystemMemory, _ = strconv.ParseInt(info["total_system_memory"], 10, 64)
	m.AOFLastWriteStatus = info["aof_last_write_status"]
	m.AOFLastBgrewriteStatus = info["aof_last_bgrewrite_status"]
	// INFO is authoritative for whether AOF is on; CONFIG GET appendonly agrees unless a
	// rewrite is switching it.
	if v, ok := info["aof_enabled"]; ok {
		m.AOFEnabled = v == "1"
	}
}

// checkLockUser verifies the restricted lock user authenticates and is refused CONFIG
// (tried as the lock user itself), and asks whether it may EVAL. Its other rights are
// checked with every other user's (checkUsers).
func (m *Master) checkLockUser(ctx context.Context, t Target, admin *redis.Client) {
	m.LockUserChecked = true
	c := redis.NewClient(t.clientOptions(m.Endpoint, t.LockUsername, t.LockPassword))
	defer c.Close()
	// TIME is in the lock user's command list and, unlike PING, answered by a stale replica.
	if _, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (time.Time, error) { return c.Time(ctx).Result() }); err != nil {
		m.LockUserError = err.Error()
		m.ErrorClass = worse(m.ErrorClass, classify(err))
		return
	}
	_, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (map[string]string, error) {
		return c.ConfigGet(ctx, "appendfsync").Result()
	})
	switch {
	case err == nil:
		m.LockUserCanConfig = true
	case strings.HasPrefix(err.Error(), "NOPERM"):
		m.LockUserCanConfig = false
	default:
		m.LockUserError = "CONFIG GET probe: " + err.Error()
		m.ErrorClass = worse(m.ErrorClass, classify(err))
		return
	}
	canEval, err := mayRun(ctx, admin, t.NodeTimeout, t.LockUsername, "EVAL", "return 1", "0")
	if err != nil {
		m.uncheck("whether the lock user may run EVAL could not be asked", err)
		return
	}
	m.LockUserCanEval = canEval
}

// MarshalJSON writes durations as numbers with their unit in the name (clock_offset_ms,
// rtt_ms, uptime_seconds), the form the data source and `lockagent validate --json` use.
func (m Master) MarshalJSON() ([]byte, error) {
	type plain Master
	return json.Marshal(struct {
		plain
		ClockOffsetMS float64 `json:"clock_offset_ms"`
		// -1: unknown.
		BusyReplyThresholdMS int64   `json:"busy_reply_threshold_ms"`
		RTTMS                float64 `json:"rtt_ms"`
		UptimeSeconds        int64   `json:"uptime_seconds"`
		// -1: not read.
		PublishedRestartDelayMS int64 `json:"published_restart_delay_ms"`
		// Audited false: the settings that could not be read are unknown, whatever their
		// zero values say.
		Audited bool `json:"audited"`
	}{plain(m), Millis(m.ClockOffset), m.BusyReplyThresholdMS(), Millis(m.RTT), int64(m.Uptime / time.Second), m.PublishedRestartDelayMS(), m.audited})
}

// MarshalJSON writes the limits in milliseconds.
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		plain
		MaxLockTTLMS   int64   `json:"max_lock_ttl_ms"`
		RestartDelayMS int64   `json:"restart_delay_ms"`
		DriftMS        float64 `json:"drift_ms"`
	}{plain(r), r.MaxLockTTL.Milliseconds(), r.RestartDelay.Milliseconds(), Millis(r.Drift)})
}

// Millis is d in milliseconds with microsecond precision.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
