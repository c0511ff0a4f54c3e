package provider

import (
	"crypto/x509"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/redlock-kit/redlock-kit/internal/pki"
)

func caKeyFileConfig(file, serverFile string) string {
	return fmt.Sprintf(`
resource "redlock_ca" "ca" {
  private_key_file = %q
}

resource "redlock_server_certificate" "m" {
  ca_cert_pem         = redlock_ca.ca.cert_pem
  ca_private_key_file = redlock_ca.ca.private_key_file
  ip_addresses        = ["127.0.0.1"]
  private_key_file    = %q
}
`, file, serverFile)
}

// TestAccCA_privateKeyFile: with private_key_file the CA's key and the server's are in their
// files (0600) and in no state, the server certificate signed from the CA's file verifies
// against the CA, and the server's file holds that certificate's key; destroy removes both
// files. The negative control: the same search finds the key of a CA without it.
func TestAccCA_privateKeyFile(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	file := filepath.Join(t.TempDir(), "secrets", "ca.key")
	serverFile := filepath.Join(filepath.Dir(file), "tls", "server-0.key")
	var key, serverKey string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		WorkingDir:               work,
		CheckDestroy: func(*terraform.State) error {
			for _, f := range []string{file, serverFile} {
				if _, err := os.Stat(f); !os.IsNotExist(err) {
					return fmt.Errorf("destroy left %s behind (stat: %v)", f, err)
				}
			}
			return nil
		},
		Steps: []resource.TestStep{{
			Config: caKeyFileConfig(file, serverFile),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckNoResourceAttr("redlock_ca.ca", "private_key_pem"),
				resource.TestCheckNoResourceAttr("redlock_server_certificate.m", "private_key_pem"),
				func(s *terraform.State) error {
					for _, f := range []string{file, serverFile} {
						st, err := os.Stat(f)
						if err != nil {
							return err
						}
						if st.Mode().Perm() != 0o600 {
							return fmt.Errorf("%s has mode %v, want 0600", f, st.Mode().Perm())
						}
					}
					b, _ := os.ReadFile(file)
					key = string(b)
					b, _ = os.ReadFile(serverFile)
					serverKey = string(b)
					caPEM := s.RootModule().Resources["redlock_ca.ca"].Primary.Attributes["cert_pem"]
					certPEM := s.RootModule().Resources["redlock_server_certificate.m"].Primary.Attributes["cert_pem"]
					if err := pki.CheckServer(certPEM, serverKey, caPEM, "127.0.0.1", time.Time{}); err != nil {
						return fmt.Errorf("%s does not hold the server certificate's key: %w", serverFile, err)
					}
					ca, err := pki.ParseCert(s.RootModule().Resources["redlock_ca.ca"].Primary.Attributes["cert_pem"])
					if err != nil {
						return err
					}
					srv, err := pki.ParseCert(s.RootModule().Resources["redlock_server_certificate.m"].Primary.Attributes["cert_pem"])
					if err != nil {
						return err
					}
					roots := x509.NewCertPool()
					roots.AddCert(ca)
					_, err = srv.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
					return err
				},
				func(s *terraform.State) error {
					return checkNotInState(work, append(jsonForms(key), jsonForms(serverKey)...)...)(s)
				},
			),
		}},
	})

	// The negative control: keys without private_key_file.
	work = t.TempDir()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		WorkingDir:               work,
		Steps: []resource.TestStep{{
			Config: `
resource "redlock_ca" "ca" {}

resource "redlock_server_certificate" "m" {
  ca_cert_pem        = redlock_ca.ca.cert_pem
  ca_private_key_pem = redlock_ca.ca.private_key_pem
  ip_addresses       = ["127.0.0.1"]
}`,
			Check: func(s *terraform.State) error {
				for _, addr := range []string{"redlock_ca.ca", "redlock_server_certificate.m"} {
					k := s.RootModule().Resources[addr].Primary.Attributes["private_key_pem"]
					if checkNotInState(work, jsonForms(k)...)(s) == nil {
						return fmt.Errorf("the key of %s without private_key_file was not found in the state: the search cannot fail", addr)
					}
				}
				return nil
			},
		}},
	})
}

// jsonForms are a multi-line secret as a state file holds it (JSON-escaped) and as is.
func jsonForms(secret string) []func() string {
	enc, _ := json.Marshal(secret)
	return []func() string{literal(secret), literal(strings.Trim(string(enc), `"`))}
}

// TestAccCA_privateKeyFileRefusals: a relative file, and a server certificate given the CA key
// both ways or neither.
func TestAccCA_privateKeyFileRefusals(t *testing.T) {
	t.Parallel()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{
			{Config: `resource "redlock_ca" "ca" { private_key_file = "ca.key" }`, PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)is relative:\s+give\s+an\s+absolute\s+path`)},
			{Config: `
resource "redlock_server_certificate" "m" {
  ca_cert_pem  = "x"
  ip_addresses = ["127.0.0.1"]
}`, PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)Give the CA's private key one way`)},
			{Config: `
resource "redlock_server_certificate" "m" {
  ca_cert_pem        = "x"
  ca_private_key_pem = "y"
  ip_addresses       = ["127.0.0.1"]
  private_key_file   = "server.key"
}`, PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)is relative:\s+give\s+an\s+absolute\s+path`)},
		},
	})
}
