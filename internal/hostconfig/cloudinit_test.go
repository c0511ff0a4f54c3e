package hostconfig

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/pki"
)

// The user-data keeps the settings files readable when it fits that way, gzips them when
// only that makes it fit (a plain host with a few more bytes of room than the kit's), and
// keeps them readable when nothing does (a plain host, with the exporters, and with TLS: its
// gzip form, the one the cloud is then given, is smaller that way).
func TestUserDataReadableUnlessCompactFits(t *testing.T) {
	tlsHost := func() Host {
		h := exporterHost()
		ca, err := pki.NewCA(pki.CAOptions{Validity: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		cert, err := pki.NewServer(ca, pki.ServerOptions{IPAddresses: []net.IP{net.ParseIP(h.Spec.Bind)}, Validity: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		h.Spec.TLS = &master.TLS{CertPEM: cert.CertPEM, KeyPEM: cert.KeyPEM, CACertPEM: ca.CertPEM}
		return h
	}
	for _, tc := range []struct {
		name         string
		host         Host
		wantFits     bool // the plain form fits
		wantReadable bool // the server config is readable in it
	}{
		{"plain host: over anyway, readable, its gzip form fits", testHost(), false, true},
		{"exporters: over anyway, readable, its gzip form fits", exporterHost(), false, true},
		{"TLS with exporters: over anyway, readable, its gzip form fits", tlsHost(), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Render(tc.host)
			if err != nil {
				t.Fatal(err)
			}
			readable, err := cloudConfig(b, tc.host.InstallPackages, readableFilesUpTo)
			if err != nil {
				t.Fatal(err)
			}
			compact, err := cloudConfig(b, tc.host.InstallPackages, compactFilesOver)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("user-data %d bytes (readable %d, compact %d), gzip+base64 %d", len(b.UserData), len(readable), len(compact), len(b.UserDataGzipBase64))
			if fits := len(b.UserData) <= MaxUserDataBytes; fits != tc.wantFits {
				t.Errorf("plain form fits = %v (%d bytes), want %v", fits, len(b.UserData), tc.wantFits)
			}
			conf := file(t, b, ConfDir+"/redis-server.conf").Content
			firstLine := strings.SplitN(strings.TrimSpace(conf), "\n", 2)[0]
			if got := strings.Contains(b.UserData, firstLine); got != tc.wantReadable {
				t.Errorf("server config readable in the user-data = %v, want %v", got, tc.wantReadable)
			}
			if !tc.wantFits && len(compact) <= MaxUserDataBytes {
				t.Errorf("the compact form fits (%d bytes) but the readable one was chosen", len(compact))
			}
		})
	}
}
