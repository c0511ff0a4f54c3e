package validation

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
)

// lockClientOptions is how validation talks to a master as the lock user: ClientOptions
// with Options.Dialer.
// A lock client of phases 2 and 3 also checks, on every new connection, that it reached
// the server the audit saw (identityWatch).
func lockClientOptions(o *validateOptions, addr string) *redis.Options {
	opt := ClientOptions(o.cfg, addr, o.dialer)
	if o.identity != nil {
		opt.OnConnect = o.identity.onConnect(addr)
	}
	return opt
}

// ClientOptions is how every lockagent command talks to a master as the lock user. Context
// deadlines are honoured (ContextTimeoutEnabled), so a stopped master costs only the
// library's per-node timeout; go-redis never retries on its own (the library decides); the
// handshake sends nothing the restricted ACL user may not run. dialer, when not nil, opens
// the connections. With TLS the masters are verified against the config's CA
// (agentconfig.Config.ClientTLS), also through dialer; a CA that cannot be read (Validate
// reports it) is trusted for nothing, so the handshake fails rather than falls back.
func ClientOptions(cfg *agentconfig.Config, addr string, dialer func(ctx context.Context, network, addr string) (net.Conn, error)) *redis.Options {
	opt := &redis.Options{
		Addr:                  addr,
		Username:              cfg.Username,
		Password:              cfg.Password,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialTimeout:           2 * time.Second,
		// One dial per attempt: go-redis would otherwise retry a refused dial for longer
		// than a node timeout, and the refusal would show as a timeout. The library retries.
		DialerRetries:   1,
		DisableIdentity: true,
		MaintNotificationsConfig: &maintnotifications.Config{
			Mode: maintnotifications.ModeDisabled,
		},
		Dialer: dialer,
	}
	if cfg.TLS {
		tlsConf, err := cfg.ClientTLS()
		if err != nil {
			tlsConf = &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}
		}
		host, _, _ := net.SplitHostPort(addr)
		tlsConf.ServerName = strings.Trim(host, "[]")
		opt.TLSConfig = tlsConf
		if dialer != nil {
			// go-redis applies TLSConfig only with its own dialer.
			opt.Dialer = pki.WrapDialer(dialer, tlsConf)
		}
	}
	return opt
}

// lockClients returns one new client per endpoint; the caller closes them.
func lockClients(o *validateOptions) []*redis.Client {
	clients := make([]*redis.Client, len(o.cfg.Endpoints))
	for i, e := range o.cfg.Endpoints {
		clients[i] = redis.NewClient(lockClientOptions(o, e))
	}
	return clients
}

// clientTLS is the config's TLS (nil without TLS or when it cannot be built: CheckConfig
// reported that before).
func clientTLS(cfg *agentconfig.Config) *tls.Config {
	c, _ := cfg.ClientTLS()
	return c
}
