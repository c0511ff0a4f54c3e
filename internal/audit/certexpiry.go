package audit

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// CertExpiryWarning is how long before its server certificate expires a master is warned
// about: time to rotate it (a new certificate, CONFIG SET of a tls-* setting) calmly.
const CertExpiryWarning = 30 * 24 * time.Hour

// readServerCert reads the master's TLS server certificate's NotAfter from a handshake of
// its own. That handshake checks nothing, so that an expired (or otherwise refused)
// certificate can still be read and reported: nothing is sent over it. Every other
// connection of the audit verifies the certificate.
func (m *Master) readServerCert(ctx context.Context, t Target) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true} //nolint:gosec // read only, see above
	if t.TLSConfig != nil {
		cfg.ServerName = t.TLSConfig.ServerName
	}
	if cfg.ServerName == "" {
		host, _, _ := net.SplitHostPort(m.Endpoint)
		cfg.ServerName = host
	}
	ctx, cancel := context.WithTimeout(ctx, t.NodeTimeout)
	defer cancel()
	var raw net.Conn
	var err error
	if t.Dialer != nil {
		raw, err = t.Dialer(ctx, "tcp", m.Endpoint)
	} else {
		raw, err = (&net.Dialer{}).DialContext(ctx, "tcp", m.Endpoint)
	}
	if err != nil {
		m.CertError = err.Error()
		return
	}
	defer raw.Close()
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(ctx); err != nil {
		m.CertError = err.Error()
		return
	}
	certs := conn.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		m.CertError = "the server sent no certificate"
		return
	}
	m.CertNotAfter = certs[0].NotAfter
}

// certFindings: an expired server certificate fails the audit (clients that verify it
// cannot connect); one that expires within CertExpiryWarning is a warning.
func (m Master) certFindings(now time.Time) (problems, warnings []string) {
	if m.CertNotAfter.IsZero() {
		return nil, nil
	}
	at := m.CertNotAfter.UTC().Format(time.RFC3339)
	switch left := m.CertNotAfter.Sub(now); {
	case left <= 0:
		problems = append(problems, fmt.Sprintf("Master %s's TLS server certificate expired at %s: clients that verify it cannot connect, "+
			"so the master cannot vote. Fix: issue a new certificate (redlock_server_certificate) and rotate it onto the master "+
			"(the day-2 guide), then audit again.", m.Endpoint, at))
	case left < CertExpiryWarning:
		warnings = append(warnings, fmt.Sprintf("Master %s's TLS server certificate expires at %s, in %s (under %d days): once it has, "+
			"clients that verify it cannot connect. Fix: issue a new certificate (redlock_server_certificate) and rotate it onto the "+
			"master before then (the day-2 guide).", m.Endpoint, at, left.Round(time.Minute), int(CertExpiryWarning.Hours()/24)))
	}
	return problems, warnings
}
