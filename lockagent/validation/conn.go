package validation

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
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

// ClientOptions is how every lockagent command talks to a master as the lock user: the
// library's safe go-redis options for cfg's deployment (redlock.MasterOptionsFor: no
// retries, context deadlines honoured, one dial per attempt, a handshake that sends nothing
// the restricted ACL user may not run, TLS with the config's CA). dialer, when not nil,
// opens the connections, with the TLS handshake done through it. A CA that cannot be read
// (Validate reports it) is trusted for nothing, so the handshake fails rather than falls back.
func ClientOptions(cfg *agentconfig.Config, addr string, dialer func(ctx context.Context, network, addr string) (net.Conn, error)) *redis.Options {
	opt, err := redlock.MasterOptionsFor(cfg, addr)
	if err != nil {
		opt = redlock.MasterOptions(addr)
		opt.Username, opt.Password = cfg.Username, cfg.Password
		host, _, _ := net.SplitHostPort(addr)
		opt.TLSConfig = &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12, ServerName: strings.Trim(host, "[]")}
	}
	opt.Dialer = dialer
	if dialer != nil && opt.TLSConfig != nil {
		// go-redis applies TLSConfig only with its own dialer.
		opt.Dialer = pki.WrapDialer(dialer, opt.TLSConfig)
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
