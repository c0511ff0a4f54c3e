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

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/redlock-kit/redlock-kit/internal/pki"
)

func caKeyFileConfig(file string) string {
	return fmt.Sprintf(`
resource "redlock_ca" "ca" {
  private_key_file = %q
}

resource "redlock_server_certificate" "m" {
  ca_cert_pem         = redlock_ca.ca.cert_pem
  ca_private_key_file = redlock_ca.ca.private_key_file
  ip_addresses        = ["127.0.0.1"]
}
`, file)
}

// TestAccCA_privateKeyFile: with private_key_file the CA's key is in that file (0600) and in
// no state, and a server certificate signed from the file verifies against the CA; destroy
// removes the file. The negative control: the same search finds the key of a CA without it.
func TestAccCA_privateKeyFile(t *testing.T) {
	work := t.TempDir()
	file := filepath.Join(t.TempDir(), "secrets", "ca.key")
	var key string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		WorkingDir:               work,
		CheckDestroy: func(*terraform.State) error {
			if _, err := os.Stat(file); !os.IsNotExist(err) {
				return fmt.Errorf("destroy left %s behind (stat: %v)", file, err)
			}
			return nil
		},
		Steps: []resource.TestStep{{
			Config: caKeyFileConfig(file),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckNoResourceAttr("redlock_ca.ca", "private_key_pem"),
				func(s *terraform.State) error {
					st, err := os.Stat(file)
					if err != nil {
						return err
					}
					if st.Mode().Perm() != 0o600 {
						return fmt.Errorf("%s has mode %v, want 0600", file, st.Mode().Perm())
					}
					b, _ := os.ReadFile(file)
					key = string(b)
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
				func(s *terraform.State) error { return checkNotInState(work, jsonForms(key)...)(s) },
			),
		}},
	})

	// The negative control.
	work = t.TempDir()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		WorkingDir:               work,
		Steps: []resource.TestStep{{
			Config: `resource "redlock_ca" "ca" {}`,
			Check: func(s *terraform.State) error {
				k := s.RootModule().Resources["redlock_ca.ca"].Primary.Attributes["private_key_pem"]
				if checkNotInState(work, jsonForms(k)...)(s) == nil {
					return fmt.Errorf("the key of a CA without private_key_file was not found in the state: the search cannot fail")
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
		},
	})
}
