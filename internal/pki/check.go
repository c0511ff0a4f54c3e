package pki

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"time"
)

// ParseCert parses the first PEM CERTIFICATE block of s.
func ParseCert(s string) (*x509.Certificate, error) {
	block, err := pemBlock(s, "CERTIFICATE")
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(block.Bytes)
}

// ParseCerts parses every PEM CERTIFICATE block of s (a bundle); at least one is required.
func ParseCerts(s string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	rest := []byte(s)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM \"CERTIFICATE\" block found")
	}
	return out, nil
}

// ParseKey parses a PEM private key: PKCS#8 ("PRIVATE KEY"), SEC 1 ("EC PRIVATE KEY") or
// PKCS#1 ("RSA PRIVATE KEY").
func ParseKey(s string) (crypto.Signer, error) {
	rest := []byte(s)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("no PEM private key block found (want \"PRIVATE KEY\", \"EC PRIVATE KEY\" or \"RSA PRIVATE KEY\")")
		}
		var key any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("unsupported private key type %T", key)
		}
		return signer, nil
	}
}

func pemBlock(s, typ string) (*pem.Block, error) {
	rest := []byte(s)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, fmt.Errorf("no PEM %q block found", typ)
		}
		if block.Type == typ {
			return block, nil
		}
	}
}

// keyMatches reports whether key is the private key of cert.
func keyMatches(cert *x509.Certificate, key crypto.Signer) error {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	pub, ok := key.Public().(equaler)
	if !ok || !pub.Equal(cert.PublicKey) {
		return errors.New("the private key does not belong to the certificate (their public keys differ)")
	}
	return nil
}

// ServerProblem is what is wrong with a server's TLS material, by the part it is in.
type ServerProblem struct {
	Part   string // "cert", "key" or "ca"
	Detail string
}

func (p *ServerProblem) Error() string { return p.Part + ": " + p.Detail }

// CheckServer checks that certPEM and keyPEM belong together, that certPEM was issued by
// the CA in caPEM for server authentication and is valid at now, and that it covers host
// (an IP address or a DNS name; "" skips that check). A wildcard bind address (0.0.0.0, ::)
// is covered by any certificate: clients reach such a master at an address the certificate
// must name, which only they know. keyPEM "" skips the key's checks (a key that reaches
// the server some other way). The error is a *ServerProblem.
func CheckServer(certPEM, keyPEM, caPEM, host string, now time.Time) error {
	cert, err := ParseCert(certPEM)
	if err != nil {
		return &ServerProblem{"cert", "does not parse: " + err.Error()}
	}
	if keyPEM != "" {
		key, err := ParseKey(keyPEM)
		if err != nil {
			return &ServerProblem{"key", "does not parse: " + err.Error()}
		}
		if err := keyMatches(cert, key); err != nil {
			return &ServerProblem{"key", err.Error()}
		}
	}
	cas, err := ParseCerts(caPEM)
	if err != nil {
		return &ServerProblem{"ca", "does not parse: " + err.Error()}
	}
	pool := x509.NewCertPool()
	for _, c := range cas {
		pool.AddCert(c)
	}
	if now.IsZero() {
		now = time.Now()
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return &ServerProblem{"cert", "is not valid under the CA: " + err.Error()}
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return nil
	}
	if host != "" {
		if err := cert.VerifyHostname(host); err != nil {
			return &ServerProblem{"cert", fmt.Sprintf("does not cover %s (%v)", host, err)}
		}
	}
	return nil
}
