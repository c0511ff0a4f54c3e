package provider

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// writeOnlyClusterConfig is three masters whose passwords are nowhere in the state: a
// redlock_credentials with file, read back by the ephemeral one into write-only arguments,
// and audited by the ephemeral redlock_audit with adminPassword (an expression).
func writeOnlyClusterConfig(masters []*testMaster, file, adminPassword string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `
resource "redlock_credentials" "c" {
  file = %q
}

ephemeral "redlock_credentials" "c" {
  file    = redlock_credentials.c.file
  version = redlock_credentials.c.version
}
`, file)
	var addrs []string
	for i, m := range masters {
		fmt.Fprintf(&b, `
resource "redlock_master" "m%d" {
  name                = "m%d"
  data_dir            = %q
  max_lock_ttl        = %q
  admin_password_wo   = ephemeral.redlock_credentials.c.admin_password
  lock_password_wo    = ephemeral.redlock_credentials.c.lock_password
  password_wo_version = redlock_credentials.c.version
}
`, i, i, m.dir, testTTL)
		addrs = append(addrs, fmt.Sprintf("redlock_master.m%d.address", i))
	}
	fmt.Fprintf(&b, `
ephemeral "redlock_audit" "a" {
  endpoints     = [%s]
  password      = %s
  lock_username = "redlock"
  lock_password = ephemeral.redlock_credentials.c.lock_password
  max_lock_ttl  = %q
}

# The audit's verdict fails the apply here, not in a postcondition of the ephemeral
# resource: with one there, terraform 1.11.4's show -json panics ("unsupported resource
# mode") on the check results it records.
resource "terraform_data" "audited" {
  lifecycle {
    precondition {
      condition     = ephemeral.redlock_audit.a.safe && ephemeral.redlock_audit.a.quorum == 2 && ephemeral.redlock_audit.a.reachable == 3
      error_message = "The Redlock deployment is not safe: see the audit's warning."
    }
  }
}
`, strings.Join(addrs, ", "), adminPassword, testTTL)
	return b.String()
}

// TestAccAudit_ephemeral: three masters configured and audited with passwords that are in no
// plan and no state (Terraform >= 1.11), the audit passing; the negative control audits the
// same masters with a wrong admin password, and the postcondition fails naming the problem.
func TestAccAudit_ephemeral(t *testing.T) {
	t.Parallel()
	masters := []*testMaster{newTestMaster(t), newTestMaster(t), newTestMaster(t)}
	work := t.TempDir()
	file := filepath.Join(t.TempDir(), "credentials.json")
	var creds credentialsFile
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		TerraformVersionChecks:   writeOnlyTerraform,
		WorkingDir:               work,
		Steps: []resource.TestStep{
			{
				Config: writeOnlyClusterConfig(masters, file, "ephemeral.redlock_credentials.c.admin_password"),
				Check: resource.ComposeAggregateTestCheckFunc(
					func(*terraform.State) (err error) {
						creds, err = readCredentialsFile(file)
						return err
					},
					checkNotInState(work, func() string { return creds.AdminPassword }, func() string { return creds.LockPassword }),
				),
			},
			{
				Config:      writeOnlyClusterConfig(masters, file, `"wrong-password-0123456789"`),
				ExpectError: regexp.MustCompile(`(?s)The Redlock deployment is not safe: see the audit's warning`),
			},
		},
	})
}
