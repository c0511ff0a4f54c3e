package hostconfig

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/pki"
)

// tlsHost is testHost with a server certificate for its address; keyOnHost leaves the key out.
func tlsHost(t *testing.T, keyOnHost bool) (Host, pki.Pair) {
	t.Helper()
	h := testHost()
	ca, err := pki.NewCA(pki.CAOptions{Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.NewServer(ca, pki.ServerOptions{IPAddresses: []net.IP{net.ParseIP(h.Spec.Bind)}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	h.Spec.TLS = &master.TLS{CertPEM: cert.CertPEM, KeyPEM: cert.KeyPEM, CACertPEM: ca.CertPEM, KeyOnHost: keyOnHost}
	if keyOnHost {
		h.Spec.TLS.KeyPEM = ""
	}
	return h, cert
}

// TestRenderTLSKeyOnHost: with KeyOnHost the server key is in no rendered file and not in
// the user-data, while master.conf still names the key file (the gate waits for it there).
// The negative control: without it the same search finds the key.
func TestRenderTLSKeyOnHost(t *testing.T) {
	for _, keyOnHost := range []bool{false, true} {
		t.Run(fmt.Sprintf("key_on_host=%v", keyOnHost), func(t *testing.T) {
			h, cert := tlsHost(t, keyOnHost)
			b, err := Render(h)
			if err != nil {
				t.Fatal(err)
			}
			keyFile := h.Spec.TLSFiles(ConfDir).KeyFile
			// The key's base64 body, as any rendering of it would carry it.
			body := strings.Split(strings.TrimSpace(cert.KeyPEM), "\n")[1]
			var inFiles bool
			for _, f := range b.Files {
				inFiles = inFiles || f.Path == keyFile || strings.Contains(f.Content, body)
			}
			if inUserData := strings.Contains(b.UserData, body); inFiles == keyOnHost || inUserData == keyOnHost {
				t.Errorf("the key is in the files: %v, in the user-data: %v; want %v", inFiles, inUserData, !keyOnHost)
			}
			if conf := file(t, b, MasterConfPath).Content; !strings.Contains(conf, "TLS_KEY_FILE="+shellQuote(keyFile)+"\n") {
				t.Errorf("master.conf does not name the key file %s:\n%s", keyFile, conf)
			}
			file(t, b, h.Spec.TLSFiles(ConfDir).CertFile)
		})
	}
}

// TestRenderTLSKeyOnce: the key given and said to be on the host, or neither, fails on
// tls_key_pem.
func TestRenderTLSKeyOnce(t *testing.T) {
	for name, mutate := range map[string]func(*master.TLS, pki.Pair){
		"key given and on the host": func(s *master.TLS, c pki.Pair) { s.KeyPEM = c.KeyPEM },
		"no key, not on the host":   func(s *master.TLS, _ pki.Pair) { s.KeyOnHost = false },
	} {
		t.Run(name, func(t *testing.T) {
			h, cert := tlsHost(t, true)
			mutate(h.Spec.TLS, cert)
			_, err := Render(h)
			var fe *master.FieldError
			if !errors.As(err, &fe) || fe.Field != "tls_key_pem" {
				t.Fatalf("Render: %v, want a FieldError on tls_key_pem", err)
			}
		})
	}
}

// TestGateWaitsForTLSKey: a TLS master whose key has not been delivered stays down, its log
// naming the file, with a hold recorded from that first attempt, so that the stopped step
// systemd runs next sees no crash (no on_crash hook); once the key is there the gate gives
// it to the server's user, 0600, and lets the start go on.
func TestGateWaitsForTLSKey(t *testing.T) {
	p := newPolicy(t, 50*time.Millisecond)
	keyFile := filepath.Join(p.dir, "tls-server.key")
	conf := fmt.Sprintf("TLS_KEY_FILE=%s\nSERVICE_USER=%d\nSERVICE_GROUP=%d\n", shellQuote(keyFile), os.Getuid(), os.Getgid())
	p.appendConf(conf)

	out, err := p.command("gate").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no TLS key at "+keyFile) {
		t.Fatalf("gate without the key: %v, want a failure naming %s\n%s", err, keyFile, out)
	}
	if !p.exists("redlock.hold") {
		t.Error("no hold recorded by the attempt without the key")
	}
	if log, _ := p.run("stopped", "SERVICE_RESULT=exit-code", "EXIT_CODE=exited", "EXIT_STATUS=1"); !strings.Contains(log, "stopped during the hold") {
		t.Errorf("the stopped step after the attempt without the key:\n%s", log)
	}
	if hooks, _ := os.ReadFile(p.hookLog); len(hooks) != 0 {
		t.Errorf("a missing key ran hooks, as a crash would:\n%s", hooks)
	}
	if err := os.WriteFile(keyFile, []byte("-----BEGIN PRIVATE KEY-----\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if log, _ := p.run("gate"); !strings.Contains(log, "starting") {
		t.Errorf("gate with the key does not start:\n%s", log)
	}
	if st, err := os.Stat(keyFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the key file after the gate: %v (%v), want mode 0600", st.Mode().Perm(), err)
	}
}
