package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// hostConfigUsers is a host with two tenants and a monitoring user, each password given as
// the password (sha = false) or as its hash.
func hostConfigUsers(name string, sha bool) string {
	pw := func(attr, v string) string {
		if sha {
			return fmt.Sprintf("%s_sha256 = %q", attr, redisconf.HashPassword(v))
		}
		return fmt.Sprintf("%s = %q", attr, v)
	}
	return fmt.Sprintf(`data "redlock_host_config" %q {
  name    = "m1"
  address = "10.20.0.11"
  %s
  %s
  lock_users = {
    billing = { key_prefix = "billing:", %s }
    orders  = { key_prefix = "orders:", %s }
  }
}
`, name, pw("admin_password", woAdmin1), pw("monitor_password", woAdmin2), pw("password", woLock1), pw("password", woLock2))
}

// TestAccHostConfigDataSource_hashes: given the hashes instead of the passwords, the host's
// files are the same (a host only needs the hashes), and neither the state nor the rendered
// files hold a password; given the passwords, the state does (the negative control).
func TestAccHostConfigDataSource_hashes(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	passwords := []string{woAdmin1, woAdmin2, woLock1, woLock2}
	sameFiles := func(s *terraform.State) error {
		a, b := s.RootModule().Resources["data.redlock_host_config.plain"], s.RootModule().Resources["data.redlock_host_config.hashed"]
		for k, v := range a.Primary.Attributes {
			if strings.HasPrefix(k, "files.") && b.Primary.Attributes[k] != v {
				return fmt.Errorf("%s differs between the host rendered from passwords and from hashes", k)
			}
		}
		if a.Primary.Attributes["user_data"] != b.Primary.Attributes["user_data"] {
			return fmt.Errorf("user_data differs between the host rendered from passwords and from hashes")
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		WorkingDir:               work,
		Steps: []resource.TestStep{
			{
				Config: hostConfigUsers("plain", false) + hostConfigUsers("hashed", true),
				Check: resource.ComposeAggregateTestCheckFunc(sameFiles, func(s *terraform.State) error {
					// The negative control: the passwords are in the state, as the plain host's arguments.
					found, err := secretsInState(work, passwords...)
					if err != nil {
						return err
					}
					if len(found) != len(passwords) {
						return fmt.Errorf("%d of %d passwords found in the state of the plain host: the search cannot see them", len(found), len(passwords))
					}
					return nil
				}),
			},
		},
	})
	// A fresh working dir: the backup of the state above still holds the plain host.
	work = t.TempDir()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		WorkingDir:               work,
		Steps: []resource.TestStep{
			{
				Config: hostConfigUsers("hashed", true),
				Check: resource.ComposeAggregateTestCheckFunc(
					checkNotInState(work, literal(woAdmin1), literal(woAdmin2), literal(woLock1), literal(woLock2)),
					resource.TestMatchResourceAttr("data.redlock_host_config.hashed", "files./etc/redlock/users.acl",
						regexp.MustCompile(`user billing reset on #`+redisconf.HashPassword(woLock1)+` `)),
				),
			},
		},
	})
	// Refusals, with no state (a refused data source leaves nothing to destroy).
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{
			{Config: `data "redlock_host_config" "m" {
  name                  = "m1"
  address               = "10.20.0.11"
  admin_password        = "` + woAdmin1 + `"
  admin_password_sha256 = "` + redisconf.HashPassword(woAdmin1) + `"
  lock_password         = "` + woLock1 + `"
}`, PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)admin_password and admin_password_sha256 are\s+both\s+set`)},
			{Config: `data "redlock_host_config" "m" {
  name          = "m1"
  address       = "10.20.0.11"
  lock_password = "` + woLock1 + `"
}`, PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)Set\s+admin_password_sha256`)},
			{Config: `data "redlock_host_config" "m" {
  name                    = "m1"
  address                 = "10.20.0.11"
  admin_password_sha256   = "` + redisconf.HashPassword(woAdmin1) + `"
  lock_password_sha256    = "` + redisconf.HashPassword(woLock1) + `"
  exporters               = true
}`, PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)monitoring\s+user\s+is\s+not\s+defined`)},
			{Config: `data "redlock_host_config" "m" {
  name                  = "m1"
  address               = "10.20.0.11"
  admin_password_sha256 = "` + redisconf.HashPassword(woAdmin1) + `"
  lock_users = { billing = { key_prefix = "billing:" } }
}`, PlanOnly: true, ExpectError: regexp.MustCompile(`(?s)neither password nor\s+password_sha256`)},
		},
	})
}
