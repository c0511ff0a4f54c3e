package pki

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
)

// ClientConfig is the client side of a deployment: TLS 1.2 or later, trusting only the
// certificates in caPEM (the deployment's CA). The server name is taken from the address
// dialled (go-redis and crypto/tls do so when ServerName is empty; see WrapDialer).
func ClientConfig(caPEM string) (*tls.Config, error) {
	cas, err := ParseCerts(caPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	pool := x509.NewCertPool()
	for _, c := range cas {
		pool.AddCert(c)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// Dialer opens a plain connection (go-redis's Options.Dialer).
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// WrapDialer returns a dialer that dials with dial and then runs the TLS handshake with cfg,
// the server name taken from addr when cfg has none. go-redis applies Options.TLSConfig only
// with its own dialer: a caller that sets Options.Dialer (a tunnel, a network namespace)
// wraps it with this.
func WrapDialer(dial Dialer, cfg *tls.Config) Dialer {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		raw, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := cfg.Clone()
		if c.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			c.ServerName = strings.Trim(host, "[]")
		}
		conn := tls.Client(raw, c)
		if err := conn.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		return conn, nil
	}
}
