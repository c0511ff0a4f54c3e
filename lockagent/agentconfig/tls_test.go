package agentconfig

import (
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/pki"
)

func TestClientTLS(t *testing.T) {
	ca, err := pki.NewCA(pki.CAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, []byte(ca.CertPEM), 0o644); err != nil {
		t.Fatal(err)
	}
	endpoints := []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}
	for _, tc := range []struct {
		name    string
		cfg     Config
		env     map[string]string
		want    string // error text; "" for none
		trusted bool   // the CA is the only root
	}{
		{name: "no TLS", cfg: Config{}},
		{name: "CA inline", cfg: Config{TLS: true, CACertPEM: ca.CertPEM}, trusted: true},
		{name: "CA file", cfg: Config{TLS: true, CACertFile: caFile}, trusted: true},
		{name: "LOCKAGENT_CACERT implies TLS", env: map[string]string{"LOCKAGENT_CACERT": caFile}, trusted: true},
		{name: "system roots", cfg: Config{TLS: true}},
		{name: "CA without TLS", cfg: Config{CACertPEM: ca.CertPEM}, want: "tls: a CA certificate is given"},
		{name: "both forms", cfg: Config{TLS: true, CACertPEM: ca.CertPEM, CACertFile: caFile}, want: "both set"},
		{name: "missing file", cfg: Config{TLS: true, CACertFile: caFile + ".missing"}, want: "ca_cert_file: open"},
		{name: "not PEM", cfg: Config{TLS: true, CACertPEM: "garbage"}, want: "ca_cert_pem: CA certificate: no PEM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg
			c.Endpoints = endpoints
			if err := c.ApplyEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }); err != nil {
				t.Fatal(err)
			}
			err := c.Validate()
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Validate = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			conf, err := c.ClientTLS()
			if err != nil || (conf == nil) != !c.TLS {
				t.Fatalf("ClientTLS = %v, %v with tls %v", conf, err, c.TLS)
			}
			if conf != nil && tc.trusted != (conf.RootCAs != nil) {
				t.Fatalf("RootCAs set %v, want %v", conf.RootCAs != nil, tc.trusted)
			}
			if tc.trusted {
				srv, err := pki.NewServer(ca, pki.ServerOptions{IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
				if err != nil {
					t.Fatal(err)
				}
				cert, _ := pki.ParseCert(srv.CertPEM)
				if _, err := cert.Verify(verifyOpts(conf.RootCAs)); err != nil {
					t.Fatalf("a certificate of the CA does not verify: %v", err)
				}
			}
		})
	}
}

func verifyOpts(roots *x509.CertPool) x509.VerifyOptions {
	return x509.VerifyOptions{Roots: roots, DNSName: "127.0.0.1"}
}
