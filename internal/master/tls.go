package master

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"path/filepath"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// TLS is the material of a master that serves TLS only, PEM each. Clients authenticate with
// passwords, not certificates; they verify the master against CACertPEM.
type TLS struct {
	CertPEM   string // server certificate; must cover the bind address
	KeyPEM    string // its private key
	CACertPEM string // the CA that signed it, which clients trust
	// KeyOnHost (hosts only) means KeyPEM is empty and stays out of the rendered files: the
	// host's provisioning puts the key in the key file itself, and the host's gate keeps the
	// master down until it is there.
	KeyOnHost bool
}

// Names of the TLS files a runtime writes in the directory it keeps them in (the data dir
// locally, /etc/redlock on a host). The key file is 0600.
const (
	TLSCertFileName   = "tls-server.crt"
	TLSKeyFileName    = "tls-server.key"
	TLSCACertFileName = "tls-ca.crt"
)

// TLSFiles is where redis.conf points at the TLS files kept in dir; nil without TLS.
func (s Spec) TLSFiles(dir string) *redisconf.TLSFiles {
	if s.TLS == nil {
		return nil
	}
	return &redisconf.TLSFiles{CertFile: filepath.Join(dir, TLSCertFileName), KeyFile: filepath.Join(dir, TLSKeyFileName),
		CACertFile: filepath.Join(dir, TLSCACertFileName)}
}

// TLSFileContents maps each TLS file name to its content; nil without TLS.
func (s Spec) TLSFileContents() map[string]string {
	if s.TLS == nil {
		return nil
	}
	return map[string]string{TLSCertFileName: s.TLS.CertPEM, TLSKeyFileName: s.TLS.KeyPEM, TLSCACertFileName: s.TLS.CACertPEM}
}

// ClientTLS is how the runtime's own clients (health checks, refresh, destroy) reach a TLS
// master: trusting its CA only, the server name taken from the address. nil without TLS. A
// CA that does not parse (Check reports it) yields a config that trusts nothing.
func (s Spec) ClientTLS() *tls.Config {
	if s.TLS == nil {
		return nil
	}
	return ClientTLS(s.TLS.CACertPEM)
}

// ClientTLS is a client config trusting every CA in the PEM bundles given (an update that
// changes the CA trusts the old and the new one while the master switches).
func ClientTLS(caPEMs ...string) *tls.Config {
	pool := x509.NewCertPool()
	for _, p := range caPEMs {
		if certs, err := pki.ParseCerts(p); err == nil {
			for _, c := range certs {
				pool.AddCert(c)
			}
		}
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// tlsFields maps a pki.ServerProblem's part to the attribute that sets it.
var tlsFields = map[string]string{"cert": "tls_cert_pem", "key": "tls_key_pem", "ca": "tls_ca_cert_pem"}

// CheckTLS reports what is wrong with the TLS material as *FieldError values (nil without
// TLS): a missing part, one that does not parse, a key that is not the certificate's, a
// certificate the CA did not sign, an expired one, or one that does not cover the bind
// address.
func (s Spec) CheckTLS(now time.Time) error {
	if s.TLS == nil {
		return nil
	}
	var errs []error
	if s.TLS.KeyOnHost && s.TLS.KeyPEM != "" {
		errs = append(errs, &FieldError{Field: "tls_key_pem", Summary: "The TLS key, once",
			Detail: "tls_key_on_host = true and tls_key_pem is set: the key would be in the user-data after all. Leave " +
				"tls_key_pem out and deliver the key to the host, or set tls_key_on_host = false."})
	}
	for _, f := range []struct{ field, value, what string }{
		{"tls_cert_pem", s.TLS.CertPEM, "the master's server certificate (redlock_server_certificate's cert_pem)"},
		{"tls_key_pem", s.TLS.KeyPEM, "its private key (redlock_server_certificate's private_key_pem), or set tls_key_on_host = true and deliver it to the host"},
		{"tls_ca_cert_pem", s.TLS.CACertPEM, "the CA certificate clients trust (redlock_ca's cert_pem)"},
	} {
		if f.value == "" && (f.field != "tls_key_pem" || !s.TLS.KeyOnHost) {
			errs = append(errs, &FieldError{Field: f.field, Summary: f.field + " is required with tls = true",
				Detail: "tls = true and " + f.field + " is empty: give " + f.what + ", or set tls = false."})
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	host := s.Bind
	if ip := net.ParseIP(host); ip == nil {
		host = "" // Check reports the bind address itself
	}
	err := pki.CheckServer(s.TLS.CertPEM, s.TLS.KeyPEM, s.TLS.CACertPEM, host, now)
	var p *pki.ServerProblem
	if !errors.As(err, &p) {
		return err
	}
	field := tlsFields[p.Part]
	fix := map[string]string{
		"tls_cert_pem":    "give a PEM certificate issued by the CA in tls_ca_cert_pem (redlock_server_certificate makes one) whose ip_addresses include the bind address " + s.Bind,
		"tls_key_pem":     "give the PEM private key of the certificate in tls_cert_pem (redlock_server_certificate's private_key_pem)",
		"tls_ca_cert_pem": "give the PEM certificate of the CA that signed tls_cert_pem (redlock_ca's cert_pem)",
	}[field]
	return &FieldError{Field: field, Summary: "Unusable " + field, Detail: field + " " + p.Detail + ": " + fix + "."}
}
