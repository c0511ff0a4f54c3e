package validation

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/funclib"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// The catalogue of unsafe deployments: each case makes one change, through the admin
// user, that breaks (or hides) the safety of a deployment validation called SAFE, and
// validation must not call it SAFE any more. It proves that each check can fail; users run
// it (CheckCatalogue) against their own wiring: the same cases, on their masters.

// UnsafeCase is one unsafe change.
type UnsafeCase struct {
	// Name names the case; Want is the verdict the kit's validation gives it (never SAFE).
	Name string
	Want Verdict
	// During applies the change after the first audit (when the contention phase starts),
	// so that only the audit after the contention phase can see it. The redlock_audit data
	// source, which audits once, gets it before its read.
	During bool
	// NeedsSpare: the case needs CaseEnv.Spare, a second server (CatalogueOptions.Spare).
	NeedsSpare bool
	// NeedsTwoAudits: the change is made and undone during the run, so only a validator
	// that audits before and after (validate) can see it; a single read (the redlock_audit
	// data source) is not expected to.
	NeedsTwoAudits bool
	// Apply makes the change and returns how to undo it. It may edit env.Config (this
	// case's copy): the credentials or endpoints validation then uses.
	Apply func(ctx context.Context, env *CaseEnv) (undo func(context.Context) error, err error)
}

// CaseEnv is what a case works on: the deployment's configuration (a copy for the case)
// and an admin connection to each of its masters.
type CaseEnv struct {
	Config *agentconfig.Config
	// Spare is another server with the same users and passwords, not in Config.Endpoints
	// ("" when none was given).
	Spare  string
	admins []*redis.Client
	dialer func(ctx context.Context, network, addr string) (net.Conn, error)
}

// NewCaseEnv opens admin connections to cfg's masters for one case; Close closes them.
// cfg is copied: a case edits the copy (env.Config).
func NewCaseEnv(cfg *agentconfig.Config, spare string, dialer func(ctx context.Context, network, addr string) (net.Conn, error)) (*CaseEnv, error) {
	c := *cfg
	if err := CheckConfig(&c); err != nil {
		return nil, err
	}
	c.Endpoints = append([]string(nil), cfg.Endpoints...)
	env := &CaseEnv{Config: &c, Spare: spare, dialer: dialer}
	for _, ep := range c.Endpoints {
		env.admins = append(env.admins, env.adminClient(ep))
	}
	return env, nil
}

func (env *CaseEnv) adminClient(ep string) *redis.Client {
	opt := ClientOptions(env.Config, ep, env.dialer)
	opt.Username, opt.Password = env.Config.AdminUsername, env.Config.AdminPassword
	return redis.NewClient(opt)
}

// Admin is the admin connection to master i (in Config.Endpoints' original order).
func (env *CaseEnv) Admin(i int) *redis.Client { return env.admins[i] }

// Close closes the admin connections.
func (env *CaseEnv) Close() {
	for _, c := range env.admins {
		_ = c.Close()
	}
}

// each runs cmd (one command's arguments) as admin on every master.
func (env *CaseEnv) each(ctx context.Context, args ...any) error {
	for i, c := range env.admins {
		if err := c.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("%s on %s: %w", strings.Join(strings.Fields(fmt.Sprint(args[:min(2, len(args))]...)), " "), env.Config.Endpoints[i], err)
		}
	}
	return nil
}

// undoAll runs the undos in reverse order and joins their errors.
func undoAll(undos []func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		var errs []error
		for i := len(undos) - 1; i >= 0; i-- {
			errs = append(errs, undos[i](ctx))
		}
		return errors.Join(errs...)
	}
}

// configSetOne sets a setting on the second master (one master is enough to break it) and
// restores the value it had.
func configSetOne(name, value string) func(context.Context, *CaseEnv) (func(context.Context) error, error) {
	return func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
		c := env.admins[min(1, len(env.admins)-1)]
		old, err := c.ConfigGet(ctx, name).Result()
		if err != nil {
			return nil, err
		}
		if err := c.ConfigSet(ctx, name, value).Err(); err != nil {
			return nil, err
		}
		return func(ctx context.Context) error { return c.ConfigSet(ctx, name, old[name]).Err() }, nil
	}
}

// userCommands saves user's command rules on every master, for restoring them.
func (env *CaseEnv) userCommands(ctx context.Context, user string) (func(context.Context) error, error) {
	saved := make([][]any, len(env.admins))
	for i, c := range env.admins {
		reply, err := c.Do(ctx, "ACL", "GETUSER", user).Result()
		if err != nil {
			return nil, err
		}
		rules, ok := userField(reply, "commands")
		if !ok {
			return nil, fmt.Errorf("ACL GETUSER %s on %s: no commands field", user, env.Config.Endpoints[i])
		}
		args := []any{"ACL", "SETUSER", user}
		for _, r := range strings.Fields(rules) {
			args = append(args, r)
		}
		saved[i] = args
	}
	return func(ctx context.Context) error {
		for i, c := range env.admins {
			if err := c.Do(ctx, saved[i]...).Err(); err != nil {
				return err
			}
		}
		return nil
	}, nil
}

func userField(reply any, name string) (string, bool) {
	switch r := reply.(type) {
	case map[any]any:
		v, ok := r[name].(string)
		return v, ok
	case []any:
		for i := 0; i+1 < len(r); i += 2 {
			if fmt.Sprint(r[i]) == name {
				v, ok := r[i+1].(string)
				return v, ok
			}
		}
	}
	return "", false
}

// setUserRights adds rules to user on every master, restoring its command rules after.
func setUserRights(user func(*CaseEnv) string, rules ...string) func(context.Context, *CaseEnv) (func(context.Context) error, error) {
	return func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
		name := user(env)
		undo, err := env.userCommands(ctx, name)
		if err != nil {
			return nil, err
		}
		args := []any{"ACL", "SETUSER", name}
		for _, r := range rules {
			args = append(args, r)
		}
		return undo, env.each(ctx, args...)
	}
}

func lockUser(env *CaseEnv) string { return env.Config.Username }

// extraUser creates a user on every master and deletes it after.
func extraUser(name string, rules ...string) func(context.Context, *CaseEnv) (func(context.Context) error, error) {
	return func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
		args := []any{"ACL", "SETUSER", name, "reset"}
		for _, r := range rules {
			args = append(args, r)
		}
		undo := func(ctx context.Context) error { return env.each(ctx, "ACL", "DELUSER", name) }
		return undo, env.each(ctx, args...)
	}
}

// Names of what the catalogue creates on the masters (and deletes after each case).
const (
	catalogueUser   = "redlock-catalogue-backdoor"
	catalogueTenant = "redlock-catalogue-tenant"
	catalogueAdmin  = "redlock-catalogue-admin"
	cataloguePass   = "redlock-catalogue-password-0123456789"
	// catalogueLibrary is a function library the catalogue loads.
	catalogueLibrary = "redlock_catalogue"
)

// UnsafeCatalogue is every unsafe change the kit's validation must catch, in the order the
// test runs them.
func UnsafeCatalogue() []UnsafeCase {
	return []UnsafeCase{
		{Name: "no authentication: requirepass \"\" and protected-mode no on every master", Want: VerdictUnsafe,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				var undos []func(context.Context) error
				for _, c := range env.admins {
					old, err := c.ConfigGet(ctx, "*").Result()
					if err != nil {
						return undoAll(undos), err
					}
					undos = append(undos, func(ctx context.Context) error {
						return c.ConfigSet(ctx, "requirepass", old["requirepass"]).Err()
					}, func(ctx context.Context) error {
						return c.ConfigSet(ctx, "protected-mode", old["protected-mode"]).Err()
					})
					// The default user's password first: CONFIG SET requirepass "" makes it nopass.
					if err := c.ConfigSet(ctx, "protected-mode", "no").Err(); err != nil {
						return undoAll(undos), err
					}
					if err := c.ConfigSet(ctx, "requirepass", "").Err(); err != nil {
						return undoAll(undos), err
					}
				}
				return undoAll(undos), nil
			}},
		{Name: "a passwordless extra user with every right (nopass ~* &* +@all)", Want: VerdictUnsafe,
			Apply: extraUser(catalogueUser, "on", "nopass", "~*", "&*", "+@all")},
		{Name: "the lock user nopass", Want: VerdictUnsafe,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				undo := func(ctx context.Context) error {
					return env.each(ctx, "ACL", "SETUSER", lockUser(env), "resetpass", ">"+env.Config.Password)
				}
				return undo, env.each(ctx, "ACL", "SETUSER", lockUser(env), "nopass")
			}},
		{Name: "lock user rights beyond a fixed list: SLAVEOF, FUNCTION LOAD/DELETE/RESTORE, CLIENT KILL, FAILOVER, MIGRATE, RESTORE", Want: VerdictUnsafe,
			Apply: setUserRights(lockUser, "+slaveof", "+function|load", "+function|delete", "+function|restore", "+client|kill", "+failover", "+migrate", "+restore")},
		{Name: "an admin without ACL rights (+config|get +info +time +function|list) and a lock user with +@all -config", Want: VerdictInconclusive,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				undoUser, err := extraUser(catalogueAdmin, "on", ">"+cataloguePass, "~*", "&*", "+config|get", "+info", "+time", "+function|list")(ctx, env)
				if err != nil {
					return undoUser, err
				}
				undoLock, err := setUserRights(lockUser, "+@all", "-config")(ctx, env)
				env.Config.AdminUsername, env.Config.AdminPassword = catalogueAdmin, cataloguePass
				return undoAll([]func(context.Context) error{undoUser, nilSafe(undoLock)}), err
			}},
		{Name: "another user's rights: a tenant with +flushall +replicaof +shutdown +function|load", Want: VerdictUnsafe,
			Apply: extraUser(catalogueTenant, "on", ">"+cataloguePass, "~"+catalogueTenant+":*", "&"+catalogueTenant+":*", "+flushall", "+replicaof", "+shutdown", "+function|load")},
		{Name: "a user whose selector grants MIGRATE on keys of its own", Want: VerdictUnsafe,
			Apply: extraUser(catalogueTenant, "on", ">"+cataloguePass, "+ping", "(~"+catalogueTenant+":* +migrate)")},
		{Name: "a monitoring user that may CONFIG GET (it reveals the passwords)", Want: VerdictUnsafe,
			Apply: extraUser(catalogueTenant, "on", ">"+cataloguePass, "+ping", "+info", "+config|get")},
		{Name: "one endpoint a TCP balancer over two servers", Want: VerdictUnsafe, NeedsSpare: true,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				rr, err := newRoundRobin([]string{env.Config.Endpoints[0], env.Spare}, env.dialer)
				if err != nil {
					return nil, err
				}
				env.Config.Endpoints[0] = rr.Addr()
				return func(context.Context) error { return rr.Close() }, nil
			}},
		{Name: "one endpoint a port forward to its master (the server listens on another port)", Want: VerdictInconclusive,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				fwd, err := newRoundRobin([]string{env.Config.Endpoints[0]}, env.dialer)
				if err != nil {
					return nil, err
				}
				env.Config.Endpoints[0] = fwd.Addr()
				return func(context.Context) error { return fwd.Close() }, nil
			}},
		{Name: "restart delay not published by the masters", Want: VerdictUnsafe,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				undo, err := saveDeployment(ctx, env)
				if err != nil {
					return nil, err
				}
				// The field, not the record: a supervisor takes a record gone for a flushed
				// keyspace and kills its master (held like after a crash).
				return undo, env.each(ctx, "HDEL", hold.DeploymentKey, hold.FieldRestartDelayMS)
			}},
		{Name: "restart delay published below max lock TTL + drift", Want: VerdictUnsafe,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				undo, err := saveDeployment(ctx, env)
				if err != nil {
					return nil, err
				}
				return undo, env.each(ctx, "HSET", hold.DeploymentKey, hold.FieldRestartDelayMS, strconv.FormatInt(env.Config.MaxLockTTL.Milliseconds(), 10))
			}},
		{Name: "the deployment record vouches for another run of the server (started outside its runtime)", Want: VerdictUnsafe,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				undo, err := saveDeployment(ctx, env)
				if err != nil {
					return nil, err
				}
				return undo, env.each(ctx, "HSET", hold.DeploymentKey, hold.FieldRunID, strings.Repeat("0", 40))
			}},
		{Name: "the runtime reports the server config changed on disk since it rendered it (config_drift)", Want: VerdictUnsafe,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				undo, err := saveDeployment(ctx, env)
				if err != nil {
					return nil, err
				}
				return undo, env.each(ctx, "HSET", hold.DeploymentKey, hold.FieldConfigDrift,
					"/etc/redlock/redis-server.conf changed on disk since it was rendered (sha256 0, rendered 1)")
			}},
		{Name: "the runtime reports the data dir on tmpfs (data_fs): a reboot empties it", Want: VerdictUnsafe,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				undo, err := saveDeployment(ctx, env)
				if err != nil {
					return nil, err
				}
				return undo, env.each(ctx, "HSET", hold.DeploymentKey, hold.FieldDataFS, "tmpfs")
			}},
		{Name: "a key restored (RESTORE) on a master while it serves: its dataset no longer only its own", Want: VerdictUnsafe,
			Apply: restoreOneKey},
		{Name: "agent.json's restart_delay disagrees with the masters'", Want: VerdictUnsafe,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				env.Config.RestartDelay.Duration = 3 * env.Config.MaxLockTTL.Duration
				return func(context.Context) error { return nil }, nil
			}},
		{Name: "a master marked unseeded (it started empty, its fence registers not seeded) while its lock user can log in", Want: VerdictUnsafe,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				c := env.admins[min(1, len(env.admins)-1)]
				saved, err := c.HGetAll(ctx, audit.FenceSeedKey).Result()
				if err != nil {
					return nil, err
				}
				undo := func(ctx context.Context) error {
					if err := c.Del(ctx, audit.FenceSeedKey).Err(); err != nil || len(saved) == 0 {
						return err
					}
					return c.HSet(ctx, audit.FenceSeedKey, saved).Err()
				}
				return undo, c.HSet(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedUnseeded,
					audit.FenceSeedReasonField, "the catalogue marked it").Err()
			}},
		{Name: "the lock user may HSET (rewrite the published restart delay)", Want: VerdictUnsafe, Apply: setUserRights(lockUser, "+hset")},
		{Name: "appendfsync no after phase 1", Want: VerdictUnsafe, During: true, Apply: configSetOne("appendfsync", "no")},
		{Name: "maxmemory-policy allkeys-lru after phase 1", Want: VerdictUnsafe, During: true, Apply: configSetOne("maxmemory-policy", "allkeys-lru")},
		{Name: "appendfsync everysec", Want: VerdictUnsafe, Apply: configSetOne("appendfsync", "everysec")},
		{Name: "appendonly no", Want: VerdictUnsafe, Apply: configSetOne("appendonly", "no")},
		{Name: "no-appendfsync-on-rewrite yes", Want: VerdictUnsafe, Apply: configSetOne("no-appendfsync-on-rewrite", "yes")},
		{Name: "maxmemory-policy allkeys-lru", Want: VerdictUnsafe, Apply: configSetOne("maxmemory-policy", "allkeys-lru")},
		{Name: "maxmemory 0", Want: VerdictUnsafe, Apply: configSetOne("maxmemory", "0")},
		{Name: "maxmemory above the machine's memory", Want: VerdictUnsafe,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				c := env.admins[min(1, len(env.admins)-1)]
				info, err := c.Info(ctx, "memory").Result()
				if err != nil {
					return nil, err
				}
				total := int64(0)
				for _, line := range strings.Split(info, "\n") {
					if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_system_memory:"); ok {
						total, _ = strconv.ParseInt(v, 10, 64)
					}
				}
				if total <= 0 {
					return nil, errors.New("INFO memory does not report total_system_memory")
				}
				return configSetOne("maxmemory", strconv.FormatInt(total*2, 10))(ctx, env)
			}},
		{Name: "the lock user may CONFIG", Want: VerdictUnsafe, Apply: setUserRights(lockUser, "+config")},
		{Name: "the lock user may FLUSHALL and SELECT", Want: VerdictUnsafe, Apply: setUserRights(lockUser, "+flushall", "+select")},
		{Name: "the kit's function library replaced by other code under the same function names", Want: VerdictUnsafe,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				undo := restoreLibrary(env)
				return undo, env.each(ctx, "FUNCTION", "LOAD", "REPLACE", redlock.FunctionLibrary().Code+"\n-- not the kit's code\n")
			}},
		{Name: "the kit's function names registered by a library of another name", Want: VerdictUnsafe,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				lib := redlock.FunctionLibrary()
				undo := func(ctx context.Context) error {
					_ = env.each(ctx, "FUNCTION", "DELETE", catalogueLibrary)
					return restoreLibrary(env)(ctx)
				}
				if err := env.each(ctx, "FUNCTION", "DELETE", lib.Name); err != nil {
					return undo, err
				}
				return undo, env.each(ctx, "FUNCTION", "LOAD", strings.Replace(lib.Code, "name="+lib.Name, "name="+catalogueLibrary, 1))
			}},
		{Name: "the admin user also accepts the lock user's password", Want: VerdictUnsafe,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				admin, pass := env.Config.AdminUsername, env.Config.Password
				undo := func(ctx context.Context) error { return env.each(ctx, "ACL", "SETUSER", admin, "<"+pass) }
				return undo, env.each(ctx, "ACL", "SETUSER", admin, ">"+pass)
			}},
		{Name: "a user whose password is empty", Want: VerdictUnsafe,
			Apply: extraUser(catalogueUser, "on", ">", "~*", "+get")},
		{Name: "another Redlock client's lock (a user that may EVAL) with a TTL of an hour, above max_lock_ttl", Want: VerdictUnsafe,
			Apply: foreignLongLock},
		{Name: "appendfsync no and back to always while validate runs", Want: VerdictUnsafe, During: true, NeedsTwoAudits: true,
			Apply: func(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
				undo, err := configSetOne("appendfsync", "no")(ctx, env)
				if err != nil {
					return undo, err
				}
				return func(context.Context) error { return nil }, undo(ctx)
			}},
	}
}

// restoreLibrary loads the kit's current function library on every master again.
func restoreLibrary(env *CaseEnv) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, c := range env.admins {
			if err := funclib.Load(ctx, c); err != nil {
				return err
			}
		}
		return nil
	}
}

func nilSafe(f func(context.Context) error) func(context.Context) error {
	if f == nil {
		return func(context.Context) error { return nil }
	}
	return f
}

// saveDeployment saves what every master publishes under hold.DeploymentKey.
func saveDeployment(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
	saved := make([]map[string]string, len(env.admins))
	for i, c := range env.admins {
		v, err := c.HGetAll(ctx, hold.DeploymentKey).Result()
		if err != nil {
			return nil, err
		}
		saved[i] = v
	}
	return func(ctx context.Context) error {
		for i, c := range env.admins {
			// One transaction: a supervisor's heartbeat between a DEL and the HSET would find
			// the record gone, and take the master for one whose keyspace was flushed.
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.Del(ctx, hold.DeploymentKey)
				if len(saved[i]) > 0 {
					p.HSet(ctx, hold.DeploymentKey, saved[i])
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}, nil
}

// foreignLongLock adds a user with the rights other Redlock clients get (EVAL, every key,
// as redisconf renders an EVAL user) and takes, as that user, a lock of an hour on every
// master, as such a client may: the restart hold covers only max_lock_ttl.
func foreignLongLock(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
	const key = catalogueTenant + ":long-lock"
	undoUser, err := extraUser(catalogueTenant, redisconf.UserRules(cataloguePass, "*", redisconf.EvalUserCommands())...)(ctx, env)
	if err != nil {
		return undoUser, err
	}
	undo := undoAll([]func(context.Context) error{undoUser, func(ctx context.Context) error { return env.each(ctx, "DEL", key) }})
	for _, ep := range env.Config.Endpoints {
		opt := ClientOptions(env.Config, ep, env.dialer)
		opt.Username, opt.Password = catalogueTenant, cataloguePass
		c := redis.NewClient(opt)
		err := c.SetNX(ctx, key, "foreign-token", time.Hour).Err()
		_ = c.Close()
		if err != nil {
			return undo, fmt.Errorf("SET %s NX PX 3600000 as %s on %s: %w", key, catalogueTenant, ep, err)
		}
	}
	return undo, nil
}

// restoreOneKey plays a backup restored into a serving master, one key of it: DUMP a key,
// then RESTORE it under another name, on master 1. Undone by deleting both and CONFIG
// RESETSTAT (the command counts the audit reads start again from zero).
func restoreOneKey(ctx context.Context, env *CaseEnv) (func(context.Context) error, error) {
	c := env.admins[min(1, len(env.admins)-1)]
	const from, to = "redlock-kit-catalogue:dumped", "redlock-kit-catalogue:restored"
	undo := func(ctx context.Context) error {
		if err := c.Del(ctx, from, to).Err(); err != nil {
			return err
		}
		return c.ConfigResetStat(ctx).Err()
	}
	if err := c.Set(ctx, from, "x", 0).Err(); err != nil {
		return nil, err
	}
	payload, err := c.Dump(ctx, from).Result()
	if err != nil {
		return undo, err
	}
	return undo, c.Restore(ctx, to, 0, payload).Err()
}
