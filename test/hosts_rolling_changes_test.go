package test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/hostlab"
	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/pki"
)

// TestHostsRollingChanges is the day-2 guide's rolling procedures, each a run of "Replace a
// host", done one after another on ONE cluster of five real systemd hosts rendered with
// seed_fences, as an operator does them over a cluster's life: hosts replaced, then the
// certificates rotated to a new CA, then the servers migrated from Redis to Valkey. Every
// new host holds its restart delay, starts with its lock user off and marks itself
// unseeded; the seeding (what redlock_users runs) seeds it from the other four and turns the
// user on, and the host's journal gives the reason.
//
// Separate `lockagent run` processes contend for two hot locks through all three phases
// (two cold locks rest at fence 30), each logging its fence under its lock to one log. After
// each phase the whole log so far is checked by internal/overlap: no run failed, no fence
// went backwards, no two holds of a lock overlapped. Each phase keeps its own checks:
//   - replacement: three hosts replaced one at a time; then the two original hosts are cut
//     off from the client and a new client takes every lock (only the replaced majority
//     answers it).
//   - certificate rotation: the hosts start serving TLS only with certificates from the old
//     CA that expire in 20 days (the audit warns for each); the clients' config moves to
//     the old + new CA bundle, each host is replaced by one with a certificate from the new
//     CA, then the clients trust the new CA only; the audit then reads the new expiry on
//     every master, with no warning.
//   - Redis -> Valkey: every host in turn replaced by a valkey-server 8.0 host
//     (bookworm-backports; the lab's image has it); the cluster is mixed until the last
//     step; at the end every master says it is Valkey 8.0 and runs valkey-server.service
//     (the same check fails before the migration: every master is Redis).
//
// Negative controls: a client still trusting only the old CA is refused by every master
// (the trust step is needed, and the failure counter would see it); two writers without the
// lock make the overlap checker fire; and at the end three hosts are replaced together
// without seeding: a cold lock's fence goes back to 1.
func TestHostsRollingChanges(t *testing.T) {
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
	// What each host runs now; each phase changes it host by host.
	running := make([]rollingHost, 5)
	c := startRollingCluster(t, []string{"r1", "r2", "r3", "r4", "r5"}, clientTrust(t, oldCA.CertPEM),
		func(i int, h *hostlab.Host) rollingHost {
			running[i] = rollingHost{server: "redis-server", tls: serverTLS(oldCA, h, oldValidity)}
			return running[i]
		})
	t.Logf("five redis-server TLS hosts up and seeded: %s", time.Since(started).Round(time.Second))

	expiries, warnings := c.auditCertificates()
	for i, at := range expiries {
		if left := time.Until(at); left > oldValidity || left < oldValidity-time.Hour {
			t.Fatalf("before the rotation: %s's certificate expires at %s, want in about %s", c.endpoints[i], at, oldValidity)
		}
	}
	if len(warnings) != len(c.hosts) {
		t.Fatalf("before the rotation: %d certificate warnings, want one per master (under 30 days): %q", len(warnings), warnings)
	}
	t.Logf("audit before the rotation: %s", warnings[0])
	if valkey := c.valkeyMasters(); len(valkey) != 0 {
		t.Fatalf("before the migration, masters %q say they are Valkey", valkey)
	}

	k := c.newContention(oldCA.CertPEM)
	coldKeys, hotKeys := []string{"app:cold-1", "app:cold-2"}, []string{"app:hot-1", "app:hot-2"}
	allKeys := append(append([]string{}, coldKeys...), hotKeys...)
	warm := c.lockClient()
	for _, key := range coldKeys {
		for n := 0; n < 30; n++ {
			k.take(warm, key)
		}
	}
	// probe takes every lock with a new client from which the two hosts never replaced in
	// the first phase are cut off: only the three replaced ones answer it.
	probe := func() {
		c.t.Helper()
		if err := c.lab.CutClient(0, c.hosts[3], c.hosts[4]); err != nil {
			c.t.Fatal(err)
		}
		defer func() {
			if err := c.lab.Heal(); err != nil {
				c.t.Fatal(err)
			}
		}()
		lc := c.lockClient()
		for _, key := range allKeys {
			k.take(lc, key)
		}
	}
	// checkLog checks the whole log so far: no failed run, no fence backwards, no overlap.
	checkLog := func(what string, since time.Time) {
		c.t.Helper()
		holds := readHolds(c.t, k.holds)
		back, overlapping := holdViolations(holds)
		failed, expired := k.failedRuns()
		c.t.Logf("%s under contention: %d acquisitions so far, %d failed runs (%d of them lost to their 2s validity running out on a busy machine), %d overlaps, %d fences out of order, phase %s (test %s)",
			what, len(begins(holds)), failed, expired, len(overlapping), len(back), time.Since(since).Round(time.Second),
			time.Since(started).Round(time.Second))
		if failed > expired || len(back) > 0 || len(overlapping) > 0 {
			c.t.Fatalf("%s: %d failed runs (%d expired), fences out of order %q, overlaps %q\n%s", what, failed, expired, back, overlapping, k.failureLines())
		}
		if expired > 0 {
			c.t.Logf("runs that outlived their validity (the lock was released by expiry, the fences and overlaps above are checked):\n%s", k.failureLines())
		}
	}

	if !c.phase(t, "replace three hosts one at a time: each seeded, fences never go backwards", func(t *testing.T) {
		since := time.Now()
		k.start(4, hotKeys)
		k.waitHolds(20)
		for _, i := range []int{0, 1, 2} {
			before := largest(readHolds(t, k.holds))
			c.replace(i, c.render(i, running[i]))
			k.waitHolds(20)
			t.Logf("replaced %s: largest fence before %d, after %d", c.hosts[i].Name(), before, largest(readHolds(t, k.holds)))
		}
		k.stopWorkers()
		probe()
		checkLog("replacement of 3 hosts", since)
	}) {
		return
	}

	if !c.phase(t, "rotate certificates to a new CA one host at a time: no run fails, the audit stops warning", func(t *testing.T) {
		since := time.Now()
		k.start(4, hotKeys)
		k.waitHolds(10)
		// 1. The clients trust the old and the new CA (and the operator's apply too).
		bundle := oldCA.CertPEM + newCA.CertPEM
		k.writeAgentConfig(bundle)
		c.trust = clientTrust(t, bundle)
		k.waitHolds(10)
		// 2. One host at a time, a new host with a certificate from the new CA.
		for i := range c.hosts {
			running[i].tls = serverTLS(newCA, c.hosts[i], newValidity)
			c.replace(i, c.render(i, running[i]))
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
		for _, key := range allKeys {
			k.take(lc, key)
		}
		checkLog("certificate rotation of 5 hosts", since)

		expiries, warnings := c.auditCertificates()
		for i, at := range expiries {
			if left := time.Until(at); left > newValidity || left < newValidity-time.Hour {
				t.Errorf("after the rotation: %s's certificate expires at %s, want the new one's, in about %s", c.endpoints[i], at, newValidity)
			}
		}
		if len(warnings) > 0 {
			t.Errorf("after the rotation the audit still warns: %q", warnings)
		}
		t.Logf("audit after the rotation: every certificate expires at %s", expiries[0].UTC().Format(time.RFC3339))
	}) {
		return
	}

	c.phase(t, "negative control: a client trusting only the old CA is refused", func(t *testing.T) {
		oldOnly := filepath.Join(t.TempDir(), "agent-old-ca.json")
		k.writeAgentConfigTo(oldOnly, oldCA.CertPEM)
		ctx, cancel := context.WithTimeout(c.ctx, 2*time.Minute)
		defer cancel()
		// A handshake that a loaded machine does not finish within the wait is reported as
		// masters that did not answer: that run shows nothing either way, and runs again.
		for try := 1; ; try++ {
			out, err := c.lab.ClientCommand(ctx, 0, lockagentBin, "run", "-c", oldOnly, "--key", "app:old-ca", "--ttl", "2s",
				"--wait", "5s", "--", "true").CombinedOutput()
			if err != nil && strings.Contains(string(out), "certificate signed by unknown authority") {
				return
			}
			if err == nil || try == 3 || !strings.Contains(string(out), "did not answer within the node timeout") {
				t.Fatalf("lockagent run trusting only the old CA: %v, want a refused certificate:\n%s", err, out)
			}
			t.Logf("try %d: no handshake finished within the wait (a loaded machine): again\n%s", try, out)
		}
	})

	if !c.phase(t, "migrate from Redis to Valkey one host at a time: no run fails, every master ends on Valkey 8.0", func(t *testing.T) {
		since := time.Now()
		k.start(4, hotKeys)
		k.waitHolds(10)
		for i := range c.hosts {
			running[i].server = "valkey-server"
			c.replace(i, c.render(i, running[i]))
			k.waitHolds(10)
			t.Logf("%s now runs %s: %d holds so far, largest fence %d", c.hosts[i].Name(), c.units[i],
				len(begins(readHolds(t, k.holds))), largest(readHolds(t, k.holds)))
		}
		k.stopWorkers()
		lc := c.lockClient()
		for _, key := range allKeys {
			k.take(lc, key)
		}
		checkLog("Redis -> Valkey migration of 5 hosts", since)
		if valkey := c.valkeyMasters(); len(valkey) != len(c.hosts) {
			t.Fatalf("after the migration only %q are Valkey 8.0", valkey)
		}
		for i, h := range c.hosts {
			if out, err := h.Exec(c.ctx, "systemctl", "is-active", "valkey-server.service"); err != nil {
				t.Errorf("valkey-server on %s: %v %s", h.Name(), err, out)
			}
			if out, _ := h.Exec(c.ctx, "systemctl", "is-active", "redis-server.service"); strings.TrimSpace(out) == "active" {
				t.Errorf("redis-server still runs on %s (%s)", h.Name(), c.endpoints[i])
			}
		}
	}) {
		return
	}

	c.phase(t, "negative control: holders without the lock overlap", func(t *testing.T) {
		if _, o := holdViolations(unlockedHolds(t)); len(o) == 0 {
			t.Fatal("two writers without the lock logged no overlap: the overlap checker cannot tell")
		}
	})

	// Last: it leaves the cluster's fences broken on purpose.
	c.phase(t, "negative control: three hosts replaced without seeding: a fence goes backwards", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for _, i := range []int{0, 1, 2} {
			userData := c.render(i, running[i])
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = c.hosts[i].Replace(c.ctx, userData) }()
		}
		wg.Wait()
		for _, i := range []int{0, 1, 2} {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			c.waitUnseeded(i)
		}
		c.seedAndOpen(false, 0)
		probe()
		back, _ := holdViolations(readHolds(t, k.holds))
		t.Logf("negative control, not seeded: %d fences out of order %q", len(back), back)
		if len(back) == 0 {
			t.Fatal("negative control: without seeding no fence went backwards, so the test cannot tell")
		}
	})
}

// phase runs one step of a story on c as a subtest: c's helpers report to the subtest
// while it runs. It reports whether the subtest passed.
func (c *rollingCluster) phase(parent *testing.T, name string, f func(t *testing.T)) bool {
	return parent.Run(name, func(t *testing.T) {
		c.t = t
		defer func() { c.t = parent }()
		f(t)
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

// valkeyMasters lists the masters whose INFO says valkey-server 8.0.
func (c *rollingCluster) valkeyMasters() []string {
	c.t.Helper()
	var out []string
	for i := range c.hosts {
		admin := c.client(i, "", c.adminPass)
		info, err := admin.Info(c.ctx, "server").Result()
		_ = admin.Close()
		if err != nil {
			c.t.Fatalf("INFO server of %s: %v", c.endpoints[i], err)
		}
		if strings.Contains(info, "server_name:valkey") && strings.Contains(info, "valkey_version:8.0.") {
			out = append(out, c.endpoints[i])
		}
	}
	return out
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
