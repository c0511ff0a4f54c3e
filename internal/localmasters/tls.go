package localmasters

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// tlsMaterial is one CA and one server certificate for the cluster's host, shared by its
// masters (they all listen on the same address), written under the cluster's dir.
type tlsMaterial struct {
	caPEM  string
	files  redisconf.TLSFiles
	client *tls.Config
}

func newTLSMaterial(dir, host string) (*tlsMaterial, error) {
	ca, err := pki.NewCA(pki.CAOptions{CommonName: "localmasters CA"})
	if err != nil {
		return nil, err
	}
	srv, err := pki.NewServer(ca, pki.ServerOptions{IPAddresses: []net.IP{net.ParseIP(host)}})
	if err != nil {
		return nil, err
	}
	tm := &tlsMaterial{caPEM: ca.CertPEM, files: redisconf.TLSFiles{CertFile: filepath.Join(dir, "server.crt"),
		KeyFile: filepath.Join(dir, "server.key"), CACertFile: filepath.Join(dir, "ca.crt")}}
	for path, content := range map[string]string{tm.files.CertFile: srv.CertPEM, tm.files.KeyFile: srv.KeyPEM,
		tm.files.CACertFile: ca.CertPEM} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return nil, err
		}
	}
	if tm.client, err = pki.ClientConfig(ca.CertPEM); err != nil {
		return nil, err
	}
	return tm, nil
}

// IsPlainTextRefused reports whether err is what a plain-text client gets from a TLS-only
// master: the server reads the command as a broken TLS handshake and closes the connection
// (EOF, or a reset when it closes with the command unread).
func IsPlainTextRefused(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}
