// Package pki makes the certificates a TLS deployment of Redlock masters needs, offline, with
// crypto/x509: one certificate authority per deployment and one server certificate per
// master, ECDSA P-256, signed by that CA and valid for the master's IP addresses and DNS
// names. It also checks material it is given (a certificate and key that belong together,
// signed by the CA, covering an address) and builds the client side: a *tls.Config that
// trusts only the deployment's CA.
//
// Nothing here knows about Terraform: the provider's redlock_ca and
// redlock_server_certificate resources convert and report.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// Defaults of the validity periods.
const (
	DefaultCAValidity     = 10 * 365 * 24 * time.Hour
	DefaultServerValidity = 365 * 24 * time.Hour
	// backdate makes a certificate valid slightly before it was made, so that a master whose
	// clock is a little behind the machine that ran terraform accepts it at once.
	backdate = 5 * time.Minute
)

// Pair is a PEM certificate and its PEM private key (PKCS#8).
type Pair struct {
	CertPEM string
	KeyPEM  string
}

// CAOptions describe a certificate authority. Zero values take the defaults.
type CAOptions struct {
	CommonName string        // "redlock-kit CA" when empty
	Validity   time.Duration // DefaultCAValidity when zero
	Now        time.Time     // the issue time; time.Now() when zero
}

// ServerOptions describe a server certificate. At least one IP address or DNS name is
// required: a client verifies the master's address against them.
type ServerOptions struct {
	CommonName  string // the first DNS name or IP address when empty
	IPAddresses []net.IP
	DNSNames    []string
	Validity    time.Duration // DefaultServerValidity when zero
	Now         time.Time     // the issue time; time.Now() when zero
}

// NewCA makes a self-signed certificate authority that may sign server certificates only
// (path length 0).
func NewCA(o CAOptions) (Pair, error) {
	if o.Validity < 0 {
		return Pair{}, fmt.Errorf("validity %s is negative: give a positive duration such as \"87600h\"", o.Validity)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	notBefore, notAfter := period(o.Now, o.Validity, DefaultCAValidity)
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: or(o.CommonName, "redlock-kit CA")},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		SubjectKeyId:          keyID(&key.PublicKey),
	}
	return sign(tmpl, tmpl, &key.PublicKey, key, key)
}

// NewServer makes a server certificate for o's addresses, signed by ca.
func NewServer(ca Pair, o ServerOptions) (Pair, error) {
	if len(o.IPAddresses) == 0 && len(o.DNSNames) == 0 {
		return Pair{}, errors.New("no IP address or DNS name: give the addresses clients reach the master at")
	}
	if o.Validity < 0 {
		return Pair{}, fmt.Errorf("validity %s is negative: give a positive duration such as \"8760h\"", o.Validity)
	}
	caCert, err := ParseCert(ca.CertPEM)
	if err != nil {
		return Pair{}, fmt.Errorf("CA certificate: %w", err)
	}
	caKey, err := ParseKey(ca.KeyPEM)
	if err != nil {
		return Pair{}, fmt.Errorf("CA private key: %w", err)
	}
	if !caCert.IsCA {
		return Pair{}, errors.New("CA certificate is not a certificate authority (basic constraints CA:FALSE)")
	}
	if err := keyMatches(caCert, caKey); err != nil {
		return Pair{}, fmt.Errorf("CA private key: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, err
	}
	notBefore, notAfter := period(o.Now, o.Validity, DefaultServerValidity)
	if notAfter.After(caCert.NotAfter) {
		notAfter = caCert.NotAfter // a server certificate cannot outlive its CA
	}
	cn := o.CommonName
	if cn == "" {
		if len(o.DNSNames) > 0 {
			cn = o.DNSNames[0]
		} else {
			cn = o.IPAddresses[0].String()
		}
	}
	tmpl := &x509.Certificate{
		Subject:        pkix.Name{CommonName: cn},
		NotBefore:      notBefore,
		NotAfter:       notAfter,
		KeyUsage:       x509.KeyUsageDigitalSignature,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:    o.IPAddresses,
		DNSNames:       o.DNSNames,
		SubjectKeyId:   keyID(&key.PublicKey),
		AuthorityKeyId: caCert.SubjectKeyId,
	}
	return sign(tmpl, caCert, &key.PublicKey, key, caKey)
}

func sign(tmpl, parent *x509.Certificate, pub *ecdsa.PublicKey, key *ecdsa.PrivateKey, signer crypto.Signer) (Pair, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return Pair{}, err
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, signer)
	if err != nil {
		return Pair{}, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{
		CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeyPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})),
	}, nil
}

func period(now time.Time, validity, def time.Duration) (time.Time, time.Time) {
	if now.IsZero() {
		now = time.Now()
	}
	if validity == 0 {
		validity = def
	}
	now = now.UTC().Truncate(time.Second)
	return now.Add(-backdate), now.Add(validity)
}

func keyID(pub *ecdsa.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(pub)
	sum := sha256.Sum256(der)
	return sum[:20]
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
