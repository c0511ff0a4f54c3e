package provider

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// tlsMasterConfig is a CA, a server certificate for testBind (validity sets it apart, so
// that changing it makes a new one) and a TLS master using them.
func tlsMasterConfig(m *testMaster, certValidity, extra string) string {
	return fmt.Sprintf(`
resource "redlock_ca" "ca" {}

resource "redlock_server_certificate" "m" {
  ca_cert_pem        = redlock_ca.ca.cert_pem
  ca_private_key_pem = redlock_ca.ca.private_key_pem
  ip_addresses       = [%q]
  validity           = %q
}
`, testBind, certValidity) + masterConfig(m, `
  tls             = true
  tls_cert_pem    = redlock_server_certificate.m.cert_pem
  tls_key_pem     = redlock_server_certificate.m.private_key_pem
  tls_ca_cert_pem = redlock_ca.ca.cert_pem
`+extra)
}

// TestAccMaster_tlsLifecycle: a TLS-only master is created, read, imported, repaired after
// drift, given a new certificate in place and destroyed; every step talks to it over TLS
// trusting only the deployment's CA, and a plain-text client is refused.
func TestAccMaster_tlsLifecycle(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	var firstCertSerial string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(m.checkGone(true), func(*terraform.State) error {
			// SHUTDOWN went over TLS: the supervisor recorded a clean stop.
			if _, err := os.Stat(filepath.Join(m.dir, supervisor.CleanMarkerName)); err != nil {
				return fmt.Errorf("no clean-stop marker after destroy (the supervisor could not SHUTDOWN the master over TLS?): %v", err)
			}
			return nil
		}),
		Steps: []resource.TestStep{
			{
				Config: tlsMasterConfig(m, "8760h", "  keep_data_on_destroy = true\n"),
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					resource.TestCheckResourceAttr(testAddr, "tls", "true"),
					resource.TestCheckResourceAttr(testAddr, "appendfsync", "always"),
					resource.TestMatchResourceAttr("redlock_ca.ca", "cert_pem", regexp.MustCompile(`^-----BEGIN CERTIFICATE-----`)),
					resource.TestMatchResourceAttr("redlock_server_certificate.m", "id", regexp.MustCompile(`^[0-9a-f]+$`)),
					resource.TestCheckResourceAttrWith("redlock_server_certificate.m", "id", func(v string) error {
						firstCertSerial = v
						return nil
					}),
					fileMode(filepath.Join(m.dir, master.TLSKeyFileName), 0o600),
					fileMode(filepath.Join(m.dir, master.TLSCertFileName), 0o600),
					fileMode(filepath.Join(m.dir, master.TLSCACertFileName), 0o600),
					m.expectConfig("port", "0"),
					func(s *terraform.State) error {
						_, port, _ := net.SplitHostPort(m.addr)
						return m.expectConfig("tls-port", port)(s)
					},
					m.expectConfig("tls-auth-clients", "no"),
					m.checkLockUser(),
					m.checkPlainTextRefused(),
					m.checkServedCert("redlock_server_certificate.m"),
				),
			},
			{
				ResourceName:      testAddr,
				ImportState:       true,
				ImportStateId:     m.dir,
				ImportStateVerify: true,
			},
			{
				// Drift behind Terraform's back (over TLS), seen by refresh and repaired in place.
				PreConfig: func() {
					c := m.admin()
					defer c.Close()
					if err := c.ConfigSet(ctxT(t), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
						t.Fatalf("CONFIG SET over TLS: %v", err)
					}
				},
				Config: tlsMasterConfig(m, "8760h", "  keep_data_on_destroy = true\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "maxmemory_policy", "noeviction"),
					m.expectConfig("maxmemory-policy", "noeviction"),
				),
			},
			{
				// A new server certificate: loaded in place, no restart.
				Config: tlsMasterConfig(m, "4380h", "  keep_data_on_destroy = true\n  maxmemory = \"32mb\"\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("redlock_server_certificate.m", plancheck.ResourceActionDestroyBeforeCreate),
						plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate),
					},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttrWith(testAddr, "run_id", func(v string) error {
						if v != m.firstRunID {
							return fmt.Errorf("run_id changed: the certificate update restarted the master")
						}
						return nil
					}),
					resource.TestCheckResourceAttrWith("redlock_server_certificate.m", "id", func(v string) error {
						if v == firstCertSerial {
							return fmt.Errorf("the server certificate was not replaced")
						}
						return nil
					}),
					m.checkServedCert("redlock_server_certificate.m"),
					m.expectConfig("maxmemory", strconv.Itoa(32<<20)),
					m.checkLockUser(),
				),
			},
		},
	})
}

// checkPlainTextRefused: a client without TLS gets no answer from the master: the server
// takes its command for a broken TLS handshake and closes the connection.
func (m *testMaster) checkPlainTextRefused() resource.TestCheckFunc {
	return func(*terraform.State) error {
		c := redis.NewClient(&redis.Options{Addr: m.addr, Username: m.lockUser, Password: m.lockPass, MaxRetries: -1,
			DialTimeout: time.Second, ReadTimeout: time.Second, DisableIdentity: true})
		defer c.Close()
		err := c.Ping(context.Background()).Err()
		if !redistest.IsPlainTextRefused(err) {
			return fmt.Errorf("plain-text PING to the TLS master: %v, want the connection closed (EOF or reset)", err)
		}
		return nil
	}
}

// checkServedCert: the certificate the master presents is the one in the state of the
// server certificate resource (by serial number).
func (m *testMaster) checkServedCert(certResource string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[certResource]
		if !ok {
			return fmt.Errorf("%s not in state", certResource)
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", m.addr, m.tls)
		if err != nil {
			return fmt.Errorf("TLS handshake with %s trusting the CA: %w", m.addr, err)
		}
		defer conn.Close()
		got := conn.ConnectionState().PeerCertificates[0].SerialNumber.Text(16)
		if want := rs.Primary.Attributes["id"]; got != want {
			return fmt.Errorf("the master presents certificate %s, want %s (%s)", got, want, certResource)
		}
		return nil
	}
}

// TestAccMaster_tlsPlanErrors: missing or unusable TLS material is refused at plan time,
// naming the argument and the fix.
func TestAccMaster_tlsPlanErrors(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	other := fmt.Sprintf(`
resource "redlock_ca" "other" {}

resource "redlock_server_certificate" "other" {
  ca_cert_pem        = redlock_ca.other.cert_pem
  ca_private_key_pem = redlock_ca.other.private_key_pem
  ip_addresses       = [%q]
}
`, testBind)
	cases := []struct {
		name, config string
		want         string
		sameApply    bool // the certificates are made in the same apply: unknown at plan, checked by the create
	}{
		{name: "tls without material", config: masterConfig(m, "  tls = true\n"),
			want: `tls_cert_pem is required with tls = true`},
		{name: "material without tls", config: masterConfig(m, "  tls_ca_cert_pem = \"x\"\n"),
			want: `tls_ca_cert_pem is set but tls is false`},
		{name: "certificate not PEM", config: masterConfig(m, `
  tls             = true
  tls_cert_pem    = "not a certificate"
  tls_key_pem     = "not a key"
  tls_ca_cert_pem = "not a CA"
`), want: `tls_cert_pem does not parse`},
		{name: "certificate for another address", config: strings.Replace(tlsMasterConfig(m, "8760h", ""),
			fmt.Sprintf(`ip_addresses       = [%q]`, testBind), `ip_addresses       = ["127.0.0.2"]`, 1),
			want: `tls_cert_pem does not cover ` + testBind},
		{name: "certificate for another address, made in the same apply", sameApply: true,
			config: strings.Replace(tlsMasterConfig(m, "8760h", ""), fmt.Sprintf(`ip_addresses       = [%q]`, testBind), `ip_addresses       = ["127.0.0.2"]`, 1),
			want:   `tls_cert_pem does not cover ` + testBind},
		{name: "key of another certificate", config: other + strings.Replace(tlsMasterConfig(m, "8760h", ""),
			"redlock_server_certificate.m.private_key_pem", "redlock_server_certificate.other.private_key_pem", 1),
			want: `tls_key_pem the private key does not belong to the certificate`},
		{name: "CA that did not sign the certificate", config: other + strings.Replace(tlsMasterConfig(m, "8760h", ""),
			"tls_ca_cert_pem = redlock_ca.ca.cert_pem", "tls_ca_cert_pem = redlock_ca.other.cert_pem", 1),
			want: `tls_cert_pem is not valid under the CA`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			steps := []resource.TestStep{}
			if strings.Contains(tc.config, "redlock_ca") && !tc.sameApply {
				// The certificates exist first, so that the master's plan sees their values.
				certsOnly := tc.config[:strings.Index(tc.config, `resource "redlock_master"`)]
				steps = append(steps, resource.TestStep{Config: certsOnly})
			}
			steps = append(steps, resource.TestStep{Config: tc.config, ExpectError: regexp.MustCompile(strings.ReplaceAll(regexp.QuoteMeta(tc.want), " ", `\s+`))})
			resource.Test(t, resource.TestCase{ProtoV6ProviderFactories: testAccProviderFactories, Steps: steps})
		})
	}
}
