package provider

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/redlock-kit/redlock-kit/internal/pki"
)

// Monitoring passwords the write-only tests give literally (unique in the test's files).
const (
	woMonitor1 = "wo-monitor-first-0123456789abcdef"
	woMonitor2 = "wo-monitor-second-0123456789abcdef"
)

// testServerPair is a CA and a server certificate for testBind made outside Terraform, so
// that the key is in no state unless the master's resource puts it there.
func testServerPair(t *testing.T) (ca, server pki.Pair) {
	t.Helper()
	ca, err := pki.NewCA(pki.CAOptions{})
	if err != nil {
		t.Fatalf("CA: %v", err)
	}
	server, err = pki.NewServer(ca, pki.ServerOptions{IPAddresses: []net.IP{net.ParseIP(testBind)}})
	if err != nil {
		t.Fatalf("server certificate: %v", err)
	}
	return ca, server
}

// keyLine is a line from the middle of a PEM key: what a state file (JSON, with "\n"
// escapes) holds of the key, found by a plain substring search.
func keyLine(pemKey string) string {
	lines := strings.Split(strings.TrimSpace(pemKey), "\n")
	return lines[len(lines)/2]
}

// writeOnlyTLSMonitorConfig is a TLS master whose passwords, monitoring password and TLS
// key are all write-only. monitor "" leaves the monitoring user out.
func writeOnlyTLSMonitorConfig(m *testMaster, ca, server pki.Pair, monitor string, version int) string {
	extra := fmt.Sprintf(`
  admin_password_wo   = %q
  lock_password_wo    = %q
  password_wo_version = %d
  tls                 = true
  tls_cert_pem        = %q
  tls_key_pem_wo      = %q
  tls_ca_cert_pem     = %q
`, woAdmin1, woLock1, version, server.CertPEM, server.KeyPEM, ca.CertPEM)
	if monitor != "" {
		extra += fmt.Sprintf("  monitor_password_wo = %q\n", monitor)
	}
	return masterConfig(m, extra)
}

// checkServedCertPEM: the certificate the master presents over TLS is certPEM.
func (m *testMaster) checkServedCertPEM(certPEM string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		want, err := pki.ParseCert(certPEM)
		if err != nil {
			return err
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", m.addr, m.tls)
		if err != nil {
			return fmt.Errorf("TLS handshake with %s trusting the CA: %w", m.addr, err)
		}
		defer conn.Close()
		if got := conn.ConnectionState().PeerCertificates[0].SerialNumber; got.Cmp(want.SerialNumber) != 0 {
			return fmt.Errorf("the master presents certificate %x, want %x", got, want.SerialNumber)
		}
		return nil
	}
}

// TestAccMaster_writeOnlyMonitorAndTLSKey: monitor_password_wo and tls_key_pem_wo never
// reach the state (nor its backup, after destroy either). The master serves TLS with the
// key and has the monitoring user; refresh works from its data dir; a new certificate and
// key rotate in place with no version; a new password_wo_version changes the monitoring
// password, and removing it (with a new version) removes the user.
func TestAccMaster_writeOnlyMonitorAndTLSKey(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	work := t.TempDir()
	ca, first := testServerPair(t)
	second, err := pki.NewServer(ca, pki.ServerOptions{IPAddresses: []net.IP{net.ParseIP(testBind)}})
	if err != nil {
		t.Fatalf("second server certificate: %v", err)
	}
	all := []func() string{literal(woAdmin1), literal(woLock1), literal(woMonitor1), literal(woMonitor2),
		literal(keyLine(first.KeyPEM)), literal(keyLine(second.KeyPEM))}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		TerraformVersionChecks:   writeOnlyTerraform,
		WorkingDir:               work,
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(m.checkGone(false), checkNotInState(work, all...)),
		Steps: []resource.TestStep{
			{
				Config: writeOnlyTLSMonitorConfig(m, ca, first, woMonitor1, 1),
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					resource.TestCheckNoResourceAttr(testAddr, "monitor_password"),
					resource.TestCheckNoResourceAttr(testAddr, "monitor_password_wo"),
					resource.TestCheckNoResourceAttr(testAddr, "tls_key_pem"),
					resource.TestCheckNoResourceAttr(testAddr, "tls_key_pem_wo"),
					m.checkAuth(woAdmin1, woLock1),
					m.checkServedCertPEM(first.CertPEM),
					m.checkPlainTextRefused(),
					m.expectMonitorUser(t, woMonitor1),
					checkNotInState(work, all...),
					m.checkSecretFileModes(woAdmin1, woLock1, woMonitor1, keyLine(first.KeyPEM)),
				),
			},
			{
				// Refresh reaches the master over TLS with what its data dir keeps.
				RefreshState: true,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					resource.TestCheckNoResourceAttr(testAddr, "monitor_password"),
					checkNotInState(work, all...),
				),
			},
			{
				// A new certificate (in the state) brings its write-only key; a new version
				// brings the new monitoring password. In place.
				Config: writeOnlyTLSMonitorConfig(m, ca, second, woMonitor2, 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrPtr(testAddr, "pid", &m.firstPID),
					m.checkServedCertPEM(second.CertPEM),
					m.checkAuth(woAdmin1, woLock1),
					m.expectMonitorUser(t, woMonitor2, woMonitor1),
					checkNotInState(work, all...),
				),
			},
			{
				// Same config again: nothing to do (the write-only values are not compared).
				Config: writeOnlyTLSMonitorConfig(m, ca, second, woMonitor2, 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
			},
			{
				// monitor_password_wo removed with a new version: the monitoring user is gone.
				Config: writeOnlyTLSMonitorConfig(m, ca, second, "", 3),
				Check: resource.ComposeAggregateTestCheckFunc(
					m.checkAuth(woAdmin1, woLock1),
					m.checkMonitorUserGone(t, woMonitor2),
					checkNotInState(work, all...),
				),
			},
		},
	})
}

// checkMonitorUserGone: the monitoring user no longer logs in, with its last password.
func (m *testMaster) checkMonitorUserGone(t *testing.T, last string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		err := m.expectMonitorUser(t, last)(s)
		if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			return fmt.Errorf("monitoring user with its last password after its removal: %v, want WRONGPASS", err)
		}
		return nil
	}
}

// TestAccMaster_plainMonitorAndTLSKeyInState is the negative control of the test above:
// given as plain arguments, the monitoring password and the TLS key are in the state, and
// the same search finds them.
func TestAccMaster_plainMonitorAndTLSKeyInState(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	work := t.TempDir()
	ca, server := testServerPair(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		TerraformVersionChecks:   writeOnlyTerraform,
		WorkingDir:               work,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{{
			Config: masterConfig(m, fmt.Sprintf(`
  monitor_password = %q
  tls              = true
  tls_cert_pem     = %q
  tls_key_pem      = %q
  tls_ca_cert_pem  = %q
`, woMonitor1, server.CertPEM, server.KeyPEM, ca.CertPEM)),
			Check: resource.ComposeAggregateTestCheckFunc(
				m.capture(),
				m.expectMonitorUser(t, woMonitor1),
				func(*terraform.State) error {
					found, err := secretsInState(work, woMonitor1, keyLine(server.KeyPEM))
					if err != nil || len(found) != 2 {
						return fmt.Errorf("the search finds %v (err %v) in a state that holds the monitoring password and the key", found, err)
					}
					return nil
				},
			),
		}},
	})
}
