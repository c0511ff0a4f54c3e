package test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/hostlab"
	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/pki"
)

// TestHostsRotateCertificates is the day-2 guide's "Rotate certificates" on five real
// systemd hosts serving TLS only, whose server certificates (from the old CA) expire in
// 20 days, so the audit warns. A new CA is made; the clients' config moves to trust the
// old and the new CA; each host in turn is replaced by one with a server certificate from
// the new CA (the guide's "Replace a host": held, unseeded, seeded from the other four,
// let in); then the clients' config trusts the new CA only. Four separate `lockagent run`
// loops contend for two locks throughout and log every hold: no run fails, no two holds
// overlap, no fence goes backwards, and the audit reads the new certificates' expiry
// with no warning. Negative controls: a client still trusting only the old CA is refused
// by every master (the trust step is needed, and the failure counter would see it), and
// two writers without the lock make the overlap checker fire.
func TestHostsRotateCertificates(t *testing.T) {
	started := time.Now()
	oldCA, newCA := newTestCA(t, "redlock-kit CA 2025"), newTestCA(t, "redlock-kit CA 2026")
	const oldValidity, newValidity = 20 * 24 * time.Hour, 365 * 24 * time.Hour
	serverTLS := func(ca pki.Pair, h *hostlab.Host, validity time.Duration) *master.TLS {
		cert, err := pki.NewServer(ca, pki.ServerOptions{IPAddresses: []net.IP{net.ParseIP(h.Address())}, Validity: validity})
		if err != nil {
			t.Fatal(err)
		}
		return &master.TLS{CertPEM: cert.CertPEM, KeyPEM: cert.KeyPEM, CACertPEM: ca.CertPEM}
	}
	c := startRollingCluster(t, []string{"c1", "c2", "c3", "c4", "c5"}, clientTrust(t, oldCA.CertPEM),
		func(_ int, h *hostlab.Host) rollingHost { return rollingHost{tls: serverTLS(oldCA, h, oldValidity)} })
	t.Logf("five TLS hosts up and seeded: %s", time.Since(started).Round(time.Second))

	expiries, warnings := c.auditCertificates()
	for i, at := range expiries {
		if left := time.Until(at); left > oldValidity || left < oldValidity-time.Hour {
			t.Fatalf("before the rotation: %s's certificate expires at %s, want in about %s", c.endpoints[i], at, oldValidity)
		}
	}
	if len(warnings) != len(c.hosts) {
		t.Fatalf("before the rotation: %d certificate warnings, want one per master (under 30 days): %q", len(warnings), warnings)
	}
	t.Logf("audit before: %s", warnings[0])

	rotating := time.Now()
	k := c.newContention(oldCA.CertPEM)
	coldKeys, hotKeys := []string{"app:cold-1", "app:cold-2"}, []string{"app:hot-1", "app:hot-2"}
	warm := c.lockClient()
	for _, key := range coldKeys {
		for n := 0; n < 30; n++ {
			k.take(warm, key)
		}
	}
	k.start(4, hotKeys)
	k.waitHolds(10)

	// 1. The clients trust the old and the new CA (and the operator's apply too).
	bundle := oldCA.CertPEM + newCA.CertPEM
	k.writeAgentConfig(bundle)
	c.trust = clientTrust(t, bundle)
	k.waitHolds(10)
	// 2. One host at a time, a new host with a certificate from the new CA.
	for i := range c.hosts {
		c.replace(i, c.render(i, rollingHost{tls: serverTLS(newCA, c.hosts[i], newValidity)}))
		k.waitHolds(10)
		t.Logf("rotated %s: %d holds so far, largest fence %d", c.hosts[i].Name(), len(begins(readHolds(t, k.holds))),
			largest(readHolds(t, k.holds)))
	}
	// 3. The clients trust the new CA only.
	k.writeAgentConfig(newCA.CertPEM)
	c.trust = clientTrust(t, newCA.CertPEM)
	k.waitHolds(10)
	k.stopWorkers()
	lc := c.lockClient()
	for _, key := range append(append([]string{}, coldKeys...), hotKeys...) {
		k.take(lc, key)
	}

	holds := readHolds(t, k.holds)
	back, overlapping := holdViolations(holds)
	failed := k.failedRuns()
	t.Logf("certificate rotation of 5 hosts under contention: %d acquisitions, %d failed runs, %d overlaps, %d fences out of order, rotation %s (test %s)",
		len(begins(holds)), failed, len(overlapping), len(back), time.Since(rotating).Round(time.Second), time.Since(started).Round(time.Second))
	if failed > 0 || len(back) > 0 || len(overlapping) > 0 {
		t.Fatalf("rotation: %d failed runs, fences out of order %q, overlaps %q\n%s", failed, back, overlapping, k.failureLines())
	}

	expiries, warnings = c.auditCertificates()
	for i, at := range expiries {
		if left := time.Until(at); left > newValidity || left < newValidity-time.Hour {
			t.Errorf("after the rotation: %s's certificate expires at %s, want the new one's, in about %s", c.endpoints[i], at, newValidity)
		}
	}
	if len(warnings) > 0 {
		t.Errorf("after the rotation the audit still warns: %q", warnings)
	}
	t.Logf("audit after: every certificate expires at %s", expiries[0].UTC().Format(time.RFC3339))

	t.Run("negative control: a client trusting only the old CA is refused", func(t *testing.T) {
		oldOnly := filepath.Join(t.TempDir(), "agent-old-ca.json")
		k.writeAgentConfigTo(oldOnly, oldCA.CertPEM)
		ctx, cancel := context.WithTimeout(c.ctx, 2*time.Minute)
		defer cancel()
		out, err := c.lab.ClientCommand(ctx, 0, lockagentBin, "run", "-c", oldOnly, "--key", "app:old-ca", "--ttl", "2s",
			"--wait", "5s", "--", "true").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "certificate signed by unknown authority") {
			t.Fatalf("lockagent run trusting only the old CA: %v, want a refused certificate:\n%s", err, out)
		}
	})
	t.Run("negative control: holders without the lock overlap", func(t *testing.T) {
		if _, o := holdViolations(unlockedHolds(t)); len(o) == 0 {
			t.Fatal("two writers without the lock logged no overlap: the overlap checker cannot tell")
		}
	})
}

// auditCertificates runs the audit (what the module's check block and lockagent validate
// run) and returns each master's certificate expiry and the certificate warnings.
func (c *rollingCluster) auditCertificates() ([]time.Time, []string) {
	c.t.Helper()
	report, err := audit.Run(c.ctx, audit.Target{Endpoints: c.endpoints, Password: c.adminPass, TLS: true, TLSConfig: c.trust,
		MaxLockTTL: replaceTTL, Dialer: c.lab.DialContext(0)})
	if err != nil {
		c.t.Fatal(err)
	}
	expiries := make([]time.Time, len(report.Masters))
	for i, m := range report.Masters {
		if m.CertNotAfter.IsZero() {
			c.t.Fatalf("the audit read no certificate from %s: %s", m.Endpoint, m.CertError)
		}
		expiries[i] = m.CertNotAfter
	}
	var warnings []string
	for _, w := range append(report.Warnings, report.Problems...) {
		if strings.Contains(w, "TLS server certificate") {
			warnings = append(warnings, w)
		}
	}
	return expiries, warnings
}

// unlockedHolds has two writers log holds of one key as the workers do, without the lock:
// the overlap check's negative control.
func unlockedHolds(t *testing.T) []holdEvent {
	t.Helper()
	log := filepath.Join(t.TempDir(), "unlocked.log")
	script := `w() { for n in $(seq 1 20); do echo "app:x $1$n begin" >>"$LOG"; sleep 0.05; echo "app:x $1$n end" >>"$LOG"; done; }; w 1 & w 2 & wait`
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(os.Environ(), "LOG="+log)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("unlocked writers: %v\n%s", err, out)
	}
	return readHolds(t, log)
}

func newTestCA(t *testing.T, name string) pki.Pair {
	t.Helper()
	ca, err := pki.NewCA(pki.CAOptions{CommonName: name})
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func clientTrust(t *testing.T, caPEM string) *tls.Config {
	t.Helper()
	cfg, err := pki.ClientConfig(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
