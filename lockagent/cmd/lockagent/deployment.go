package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// deploymentFlags are the flags that say which masters to lock on and how to log in,
// shared by run and bench. They overlay agent.json and LOCKAGENT_* (flags win).
type deploymentFlags struct {
	fs         *flag.FlagSet
	configPath string
	endpoints  string
	username   string
	password   string
	keyPrefix  string
	useTLS     bool
	caCert     string
	maxTTL     time.Duration
	logLevel   string
}

// deploymentHelp documents the flags and environment of deploymentFlags for --help.
const deploymentHelp = `Deployment (first -c agent.json, then the environment, then flags; flags win):
  -c, --config FILE        agent config JSON (the redlock-cluster module's agent_config output)
  --endpoints H:P,H:P,...  the independent masters, an odd number >= 3   [LOCKAGENT_ENDPOINTS]
  --username NAME          restricted lock user (default "redlock")      [LOCKAGENT_USERNAME]
  --password PW            lock user's password; prefer the environment:
                           flags are visible to every user in ps         [LOCKAGENT_PASSWORD]
  --key-prefix P           the lock user's key prefix (lock_users): every lock
                           name is prefixed with it ("billing:")          [LOCKAGENT_KEY_PREFIX]
  --tls                    connect with TLS (the config's CA, else the
                           system roots)                                 [LOCKAGENT_TLS=true]
  --cacert FILE            verify the masters against this CA (PEM);
                           implies --tls                                 [LOCKAGENT_CACERT]
  --max-lock-ttl D         largest TTL the deployment allows; longer TTLs
                           are refused (masters stay down that long after
                           a crash)                                      [LOCKAGENT_MAX_LOCK_TTL]
  --log-level L            debug, info, warn or error (default warn); diagnostics go
                           to stderr                                     [LOCKAGENT_LOG_LEVEL]
`

func addDeploymentFlags(fs *flag.FlagSet) *deploymentFlags {
	d := &deploymentFlags{fs: fs}
	fs.StringVar(&d.configPath, "c", "", "agent config JSON")
	fs.StringVar(&d.configPath, "config", "", "agent config JSON (same as -c)")
	fs.StringVar(&d.endpoints, "endpoints", "", "masters, host:port,host:port,...")
	fs.StringVar(&d.username, "username", "", "restricted lock user")
	fs.StringVar(&d.password, "password", "", "lock user's password (prefer LOCKAGENT_PASSWORD)")
	fs.StringVar(&d.keyPrefix, "key-prefix", "", "the lock user's key prefix")
	fs.BoolVar(&d.useTLS, "tls", false, "connect with TLS")
	fs.StringVar(&d.caCert, "cacert", "", "CA certificate file (PEM) the masters are verified against; implies --tls")
	fs.DurationVar(&d.maxTTL, "max-lock-ttl", 0, "largest TTL the deployment allows")
	fs.StringVar(&d.logLevel, "log-level", "", "debug, info, warn or error")
	return d
}

// load merges agent.json, LOCKAGENT_* and the flags that were given, then checks the
// result.
func (d *deploymentFlags) load() (*agentconfig.Config, error) {
	cfg, err := d.overlay()
	if err != nil {
		return nil, err
	}
	if cfg.Username == "" {
		cfg.Username = redisconf.DefaultLockUser
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	for _, e := range cfg.Endpoints {
		if _, port, err := net.SplitHostPort(e); err != nil || port == "" {
			return nil, fmt.Errorf("endpoints: %q is not host:port (for IPv6 write [::1]:6379)", e)
		}
	}
	if cfg.Quorum != 0 && cfg.Quorum != cfg.QuorumSize() {
		return nil, fmt.Errorf("quorum: agent.json says %d but %d endpoints need a quorum of %d (N/2+1); fix the endpoints or drop the quorum field", cfg.Quorum, len(cfg.Endpoints), cfg.QuorumSize())
	}
	if cfg.Password == "" {
		return nil, errors.New("password: none given; set LOCKAGENT_PASSWORD (preferred: flags show in ps), \"password\" in agent.json, or --password")
	}
	return cfg, nil
}

// overlay loads agent.json (and LOCKAGENT_*) and puts the deployment flags that were
// given over it, unchecked: run and bench check it in load, validate its own way.
func (d *deploymentFlags) overlay() (*agentconfig.Config, error) {
	cfg, err := agentconfig.Load(d.configPath)
	if err != nil {
		return nil, err
	}
	d.fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "endpoints":
			cfg.Endpoints = agentconfig.SplitList(d.endpoints)
		case "username":
			cfg.Username = d.username
		case "password":
			cfg.Password = d.password
		case "key-prefix":
			cfg.KeyPrefix = d.keyPrefix
		case "tls":
			cfg.TLS = d.useTLS
		case "cacert":
			cfg.CACertFile, cfg.CACertPEM, cfg.TLS = d.caCert, "", true
		case "max-lock-ttl":
			cfg.MaxLockTTL.Duration = d.maxTTL
		}
	})
	return cfg, nil
}

// logger builds the diagnostics logger from --log-level or LOCKAGENT_LOG_LEVEL. go-redis's
// own log lines (dial failures, which the library reports in its typed errors) go to it at
// debug level.
func (d *deploymentFlags) logger(stderr io.Writer) (*slog.Logger, error) {
	level := d.logLevel
	if level == "" {
		level = os.Getenv("LOCKAGENT_LOG_LEVEL")
	}
	l, err := parseLogLevel(level)
	if err != nil {
		return nil, err
	}
	return routeRedisLogs(stderr, l), nil
}

// lockClientOptions is how every lockagent command talks to a master as the lock user.
func lockClientOptions(cfg *agentconfig.Config, addr string) *redis.Options {
	return validation.ClientOptions(cfg, addr, nil)
}

// lockClients returns one new client per endpoint; the caller closes them.
func lockClients(cfg *agentconfig.Config) []*redis.Client {
	clients := make([]*redis.Client, len(cfg.Endpoints))
	for i, e := range cfg.Endpoints {
		clients[i] = redis.NewClient(lockClientOptions(cfg, e))
	}
	return clients
}
