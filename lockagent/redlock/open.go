package redlock

import (
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
)

// Open returns a Client over the deployment that the kit's client file at path describes:
// the JSON the redlock-cluster and redlock-hosts modules write as client_config (one of
// client_configs with several lock users). It is NewFromConfig of the file as written (no
// environment variables, no unknown field). Close closes the go-redis clients it made.
//
//	locker, err := redlock.Open("client.json", redlock.Options{})
func Open(path string, opts Options) (*Client, error) {
	cfg, err := agentconfig.Read(path)
	if err != nil {
		return nil, fmt.Errorf("redlock: client file: %w", err)
	}
	c, err := NewFromConfig(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("client file %s: %w", path, err)
	}
	return c, nil
}

// NewFromConfig returns a Client over cfg's endpoints, one go-redis client per master with
// MasterOptionsFor (the lock user, TLS with the deployment's CA), after checking cfg: an odd
// number of endpoints >= 3 that makes cfg's quorum, a user and a password. The deployment
// sets two options, which opts may only narrow (a file for the admin user, "default" or
// cfg's admin_username, is refused): Options.KeyPrefix (empty: cfg's
// key_prefix; else it must start with it, the only keys the user's ACL allows) and
// Options.MaxTTL (zero: cfg's max_lock_ttl; never above it, the longest lock the restart
// delay covers). Close closes the go-redis clients it made. Errors match ErrInvalid and
// name the field and the fix.
func NewFromConfig(cfg *agentconfig.Config, opts Options) (*Client, error) {
	opts, err := optionsFromConfig(cfg, opts)
	if err != nil {
		return nil, err
	}
	var clientOpts []*redis.Options
	for _, addr := range cfg.Endpoints {
		opt, err := MasterOptionsFor(cfg, addr)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		clientOpts = append(clientOpts, opt)
	}
	var owned []*redis.Client
	var masters []redis.UniversalClient
	for _, opt := range clientOpts {
		rdb := redis.NewClient(opt)
		owned = append(owned, rdb)
		masters = append(masters, rdb)
	}
	c, err := New(masters, opts)
	if err != nil {
		for _, rdb := range owned {
			_ = rdb.Close()
		}
		return nil, err
	}
	c.owned = owned
	return c, nil
}

// optionsFromConfig checks cfg and sets opts' KeyPrefix and MaxTTL from it.
func optionsFromConfig(cfg *agentconfig.Config, opts Options) (Options, error) {
	if err := cfg.Validate(); err != nil {
		return opts, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	switch {
	case cfg.Username == "":
		return opts, fmt.Errorf("%w: username: empty: give the lock user the module created (its client_config has it); "+
			"without one go-redis logs in as the default user, the admin, which lock clients must never use", ErrInvalid)
	case cfg.Username == "default" || (cfg.AdminUsername != "" && cfg.Username == cfg.AdminUsername):
		return opts, fmt.Errorf("%w: username: %q is the deployment's admin user, which may touch every key (the kit's own "+
			"records too) and run every command: lock clients must never use it. Fix: use the lock user's file, the module's "+
			"client_config (or client_configs[\"<user>\"] with several lock users)", ErrInvalid, cfg.Username)
	case cfg.Password == "":
		return opts, fmt.Errorf("%w: password: empty for user %q: give the lock user's password (the module's client_config "+
			"has it; the write-only module's client_settings do not: add it from credentials_files)", ErrInvalid, cfg.Username)
	case cfg.MaxLockTTL.Duration <= 0:
		return opts, fmt.Errorf("%w: max_lock_ttl: missing: give the deployment's max_lock_ttl (the module's client_config "+
			"has it): the longest lock its restart delay covers", ErrInvalid)
	case opts.MaxTTL > cfg.MaxLockTTL.Duration:
		return opts, fmt.Errorf("%w: Options.MaxTTL %v is above the deployment's max_lock_ttl %v: a crashed master's restart "+
			"delay covers only locks up to max_lock_ttl: leave Options.MaxTTL zero (max_lock_ttl) or lower it", ErrInvalid,
			opts.MaxTTL, cfg.MaxLockTTL.Duration)
	case opts.KeyPrefix != "" && !strings.HasPrefix(opts.KeyPrefix, cfg.KeyPrefix):
		return opts, fmt.Errorf("%w: Options.KeyPrefix %q does not start with key_prefix %q: user %q may only touch keys "+
			"that start with %q, so every lock would fail with NOPERM: leave Options.KeyPrefix empty (key_prefix) or start it with %q",
			ErrInvalid, opts.KeyPrefix, cfg.KeyPrefix, cfg.Username, cfg.KeyPrefix, cfg.KeyPrefix)
	}
	if opts.MaxTTL == 0 {
		opts.MaxTTL = cfg.MaxLockTTL.Duration
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = cfg.KeyPrefix
	}
	return opts, nil
}

// MasterOptionsFor is MasterOptions for the master at addr of cfg's deployment: cfg's
// lock user and password and, with TLS, the deployment's CA (agentconfig.Config.ClientTLS)
// and addr's host as the server name.
func MasterOptionsFor(cfg *agentconfig.Config, addr string) (*redis.Options, error) {
	opt := MasterOptions(addr)
	opt.Username, opt.Password = cfg.Username, cfg.Password
	tlsConf, err := cfg.ClientTLS()
	if err != nil {
		return nil, err
	}
	if tlsConf != nil {
		host, _, _ := net.SplitHostPort(addr)
		tlsConf.ServerName = strings.Trim(host, "[]")
		opt.TLSConfig = tlsConf
	}
	return opt, nil
}
