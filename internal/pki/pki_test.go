package pki_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/pki"
)

func mustCA(t *testing.T) pki.Pair {
	t.Helper()
	ca, err := pki.NewCA(pki.CAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustServer(t *testing.T, ca pki.Pair, o pki.ServerOptions) pki.Pair {
	t.Helper()
	p, err := pki.NewServer(ca, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewCA(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ca, err := pki.NewCA(pki.CAOptions{CommonName: "test CA", Validity: 48 * time.Hour, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ParseCert(ca.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if !cert.IsCA || !cert.MaxPathLenZero || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA: IsCA %v MaxPathLenZero %v key usage %v, want a CA that signs leaf certificates only", cert.IsCA, cert.MaxPathLenZero, cert.KeyUsage)
	}
	if cert.Subject.CommonName != "test CA" {
		t.Errorf("common name %q", cert.Subject.CommonName)
	}
	if got := cert.NotAfter.Sub(now); got != 48*time.Hour {
		t.Errorf("valid for %s after issue, want 48h", got)
	}
	if !cert.NotBefore.Before(now) {
		t.Errorf("not before %s: want slightly before the issue time %s (clock skew)", cert.NotBefore, now)
	}
	key, err := pki.ParseKey(ca.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pub, ok := key.Public().(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("key %T, want ECDSA P-256", key.Public())
	}
	if !strings.Contains(ca.KeyPEM, "BEGIN PRIVATE KEY") {
		t.Errorf("key is not PKCS#8 PEM: %.40q", ca.KeyPEM)
	}
}

func TestNewServer(t *testing.T) {
	ca := mustCA(t)
	srv := mustServer(t, ca, pki.ServerOptions{IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.5")},
		DNSNames: []string{"master-1.internal"}})
	cert, err := pki.ParseCert(srv.CertPEM)
	if err != nil {
		t.Fatal(err)
	}
	if cert.IsCA {
		t.Error("server certificate is a CA")
	}
	if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("ext key usage %v, want server auth only", cert.ExtKeyUsage)
	}
	caCert, _ := pki.ParseCert(ca.CertPEM)
	if cert.NotAfter.After(caCert.NotAfter) {
		t.Errorf("server certificate outlives its CA")
	}
	for _, host := range []string{"127.0.0.1", "10.0.0.5", "master-1.internal"} {
		if err := pki.CheckServer(srv.CertPEM, srv.KeyPEM, ca.CertPEM, host, time.Time{}); err != nil {
			t.Errorf("CheckServer(%s): %v", host, err)
		}
	}
	if _, err := pki.NewServer(ca, pki.ServerOptions{}); err == nil {
		t.Error("a server certificate without an address was made")
	}
	if _, err := pki.NewServer(pki.Pair{CertPEM: ca.CertPEM, KeyPEM: srv.KeyPEM}, pki.ServerOptions{DNSNames: []string{"x"}}); err == nil ||
		!strings.Contains(err.Error(), "does not belong") {
		t.Errorf("signing with a key that is not the CA's: %v, want a key mismatch", err)
	}
	if _, err := pki.NewServer(srv, pki.ServerOptions{DNSNames: []string{"x"}}); err == nil || !strings.Contains(err.Error(), "not a certificate authority") {
		t.Errorf("signing with a server certificate: %v, want \"not a certificate authority\"", err)
	}
}

func TestCheckServer(t *testing.T) {
	ca, other := mustCA(t), mustCA(t)
	srv := mustServer(t, ca, pki.ServerOptions{IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
	foreign := mustServer(t, other, pki.ServerOptions{IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
	for _, tc := range []struct {
		name                 string
		cert, key, caPEM, at string
		now                  time.Time
		part, want           string
	}{
		{name: "good", cert: srv.CertPEM, key: srv.KeyPEM, caPEM: ca.CertPEM, at: "127.0.0.1"},
		{name: "wildcard bind", cert: srv.CertPEM, key: srv.KeyPEM, caPEM: ca.CertPEM, at: "0.0.0.0"},
		{name: "other address", cert: srv.CertPEM, key: srv.KeyPEM, caPEM: ca.CertPEM, at: "127.0.0.2", part: "cert", want: "does not cover 127.0.0.2"},
		{name: "cert not PEM", cert: "garbage", key: srv.KeyPEM, caPEM: ca.CertPEM, part: "cert", want: "does not parse"},
		{name: "key not PEM", cert: srv.CertPEM, key: "garbage", caPEM: ca.CertPEM, part: "key", want: "does not parse"},
		{name: "ca not PEM", cert: srv.CertPEM, key: srv.KeyPEM, caPEM: "garbage", part: "ca", want: "does not parse"},
		{name: "key of another cert", cert: srv.CertPEM, key: foreign.KeyPEM, caPEM: ca.CertPEM, part: "key", want: "does not belong"},
		{name: "signed by another CA", cert: foreign.CertPEM, key: foreign.KeyPEM, caPEM: ca.CertPEM, part: "cert", want: "not valid under the CA"},
		{name: "expired", cert: srv.CertPEM, key: srv.KeyPEM, caPEM: ca.CertPEM, now: time.Now().Add(2 * pki.DefaultServerValidity), part: "cert", want: "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := pki.CheckServer(tc.cert, tc.key, tc.caPEM, tc.at, tc.now)
			if tc.part == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var p *pki.ServerProblem
			if !errors.As(err, &p) || p.Part != tc.part || !strings.Contains(p.Detail, tc.want) {
				t.Fatalf("CheckServer = %v, want a %s problem containing %q", err, tc.part, tc.want)
			}
		})
	}
}

// TestHandshake: a client with ClientConfig accepts the server its CA signed, for the
// address dialled, and refuses one signed by another CA.
func TestHandshake(t *testing.T) {
	ca, other := mustCA(t), mustCA(t)
	for _, tc := range []struct {
		name    string
		signer  pki.Pair
		wantErr string
	}{
		{name: "signed by the CA", signer: ca},
		{name: "signed by another CA", signer: other, wantErr: "certificate signed by unknown authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := mustServer(t, tc.signer, pki.ServerOptions{IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}})
			pair, err := tls.X509KeyPair([]byte(srv.CertPEM), []byte(srv.KeyPEM))
			if err != nil {
				t.Fatal(err)
			}
			ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				_ = c.(*tls.Conn).Handshake()
				c.Close()
			}()
			cfg, err := pki.ClientConfig(ca.CertPEM)
			if err != nil {
				t.Fatal(err)
			}
			var d net.Dialer
			dial := pki.WrapDialer(d.DialContext, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, err := dial(ctx, "tcp", ln.Addr().String())
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("handshake: %v", err)
				}
				conn.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("handshake: %v, want %q", err, tc.wantErr)
			}
		})
	}
}
