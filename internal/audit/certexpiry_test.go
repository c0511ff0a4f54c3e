package audit_test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestServerCertificateExpiry: the audit reads each master's TLS server certificate. One
// that expires within 30 days is a warning, one that has expired fails the audit, and one
// good for a year (the negative control) is neither. The certificates are made by the
// provider's PKI code, with short validity periods.
func TestServerCertificateExpiry(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3, TLS: true})
	ca, err := pki.NewCA(pki.CAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The audit trusts the cluster's CA and this one: only expiry differs between cases.
	tlsConf, err := pki.ClientConfig(c.CACertPEM + ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	tgt := target(c)
	tgt.TLS, tgt.TLSConfig = true, tlsConf
	m := c.Masters[1]
	now := time.Now()

	for _, tc := range []struct {
		name     string
		issued   time.Time
		validity time.Duration
		problem  string // a problem starting with this, or none when ""
		warning  string // a warning starting with this, or none when ""
	}{
		{name: "good for a year: neither", issued: now, validity: 365 * 24 * time.Hour},
		{name: "expires in 10 days: a warning", issued: now, validity: 10 * 24 * time.Hour,
			warning: "Master " + m.Addr + "'s TLS server certificate expires at "},
		{name: "expired a day ago: a problem", issued: now.Add(-48 * time.Hour), validity: 24 * time.Hour,
			problem: "Master " + m.Addr + "'s TLS server certificate expired at "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pair, err := pki.NewServer(ca, pki.ServerOptions{IPAddresses: []net.IP{net.ParseIP(m.Host)}, Now: tc.issued, Validity: tc.validity})
			if err != nil {
				t.Fatal(err)
			}
			useCertificate(t, m, pair, tlsConf)
			rep := run(t, tgt)
			var got audit.Master
			for _, rm := range rep.Masters {
				if rm.Endpoint == m.Addr {
					got = rm
				}
			}
			cert, err := pki.ParseCert(pair.CertPEM)
			if err != nil {
				t.Fatal(err)
			}
			if !got.CertNotAfter.Equal(cert.NotAfter) {
				t.Errorf("CertNotAfter = %v (error %q), want the certificate's %v", got.CertNotAfter, got.CertError, cert.NotAfter)
			}
			certProblems := matching(rep.Problems, "TLS server certificate")
			certWarnings := matching(rep.Warnings, "TLS server certificate")
			switch {
			case tc.problem != "" && !containsPrefix(rep.Problems, tc.problem):
				t.Errorf("want a problem starting %q, got:\n%s", tc.problem, strings.Join(rep.Problems, "\n"))
			case tc.problem == "" && len(certProblems) > 0:
				t.Errorf("want no certificate problem, got:\n%s", strings.Join(certProblems, "\n"))
			}
			switch {
			case tc.warning != "" && !containsPrefix(rep.Warnings, tc.warning):
				t.Errorf("want a warning starting %q, got:\n%s", tc.warning, strings.Join(rep.Warnings, "\n"))
			case tc.warning == "" && len(certWarnings) > 0:
				t.Errorf("want no certificate warning, got:\n%s", strings.Join(certWarnings, "\n"))
			}
			if tc.problem == "" && !rep.Safe {
				t.Errorf("want safe, got:\n%s", strings.Join(rep.Problems, "\n"))
			}
		})
	}
}

// useCertificate makes m serve pair from now on, as a rotation does (CONFIG SET of the
// tls-* files), and gives it back its own files after the test. tlsConf trusts both CAs.
func useCertificate(t *testing.T, m *redistest.Master, pair pki.Pair, tlsConf *tls.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin := redis.NewClient(&redis.Options{Addr: m.Addr, Password: redistest.AdminPassword, TLSConfig: tlsConf, DisableIdentity: true})
	t.Cleanup(func() { _ = admin.Close() })
	old, err := admin.ConfigGet(ctx, "tls-*-file").Result()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{"tls-cert-file": pair.CertPEM, "tls-key-file": pair.KeyPEM}
	args := []any{"CONFIG", "SET"}
	for name, content := range files {
		p := filepath.Join(dir, name+".pem")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, name, p)
	}
	if err := admin.Do(ctx, args...).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := admin.Do(ctx, "CONFIG", "SET", "tls-cert-file", old["tls-cert-file"], "tls-key-file", old["tls-key-file"]).Err(); err != nil {
			t.Errorf("give %s its own certificate back: %v", m.Addr, err)
		}
	})
}

// matching are the lines of list that contain s.
func matching(list []string, s string) []string {
	var out []string
	for _, l := range list {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return out
}
