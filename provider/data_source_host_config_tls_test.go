package provider

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

const hostTLSCerts = `
resource "redlock_ca" "ca" {}

resource "redlock_server_certificate" "m" {
  ca_cert_pem        = redlock_ca.ca.cert_pem
  ca_private_key_pem = redlock_ca.ca.private_key_pem
  ip_addresses       = ["10.20.0.11"]
}
`

const hostTLSArgs = `
  tls             = true
  tls_cert_pem    = redlock_server_certificate.m.cert_pem
  tls_key_pem     = redlock_server_certificate.m.private_key_pem
  tls_ca_cert_pem = redlock_ca.ca.cert_pem
`

// TestAccHostConfigDataSource_tls: a TLS host gets its certificate, key (0600) and CA under
// /etc/redlock, a server config that serves TLS only, and a policy script config whose CLI
// calls use the CA; a certificate for another address is refused.
func TestAccHostConfigDataSource_tls(t *testing.T) {
	t.Parallel()
	const ds = "data.redlock_host_config.m"
	config := func(address string) string {
		return hostTLSCerts + `data "redlock_host_config" "m" {
  name    = "m1"
  address = "` + address + `"
` + hostConfigPasswords + hostTLSArgs + `}`
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: config("10.20.0.11"),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(ds, "endpoint", "10.20.0.11:6379"),
					resource.TestCheckResourceAttr(ds, "file_permissions./etc/redlock/tls-server.key", "0600"),
					resource.TestCheckResourceAttr(ds, "file_permissions./etc/redlock/tls-server.crt", "0644"),
					resource.TestCheckResourceAttr(ds, "file_permissions./etc/redlock/tls-ca.crt", "0644"),
					resource.TestCheckResourceAttrPair(ds, "files./etc/redlock/tls-server.key", "redlock_server_certificate.m", "private_key_pem"),
					resource.TestCheckResourceAttrPair(ds, "files./etc/redlock/tls-ca.crt", "redlock_ca.ca", "cert_pem"),
					resource.TestMatchResourceAttr(ds, "files./etc/redlock/redis-server.conf",
						regexp.MustCompile(`\nport 0\ntls-port 6379\ntls-cert-file "/etc/redlock/tls-server.crt"\ntls-key-file "/etc/redlock/tls-server.key"\ntls-ca-cert-file "/etc/redlock/tls-ca.crt"\ntls-auth-clients no\n`)),
					resource.TestMatchResourceAttr(ds, "files./etc/redlock/master.conf",
						regexp.MustCompile(`TLS_CA_FILE='/etc/redlock/tls-ca.crt'\n`)),
					resource.TestMatchResourceAttr(ds, "files./etc/redlock/master.conf",
						regexp.MustCompile(`SERVICE_USER='redis'\n`)),
					resource.TestMatchResourceAttr(ds, "user_data", regexp.MustCompile(`path: /etc/redlock/tls-server.key\n\s+permissions: "0600"`)),
				),
			},
			{
				Config:      config("10.20.0.12"),
				ExpectError: regexp.MustCompile(strings.ReplaceAll(regexp.QuoteMeta("tls_cert_pem does not cover 10.20.0.12"), " ", `\s+`)),
			},
		},
	})
}
