package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

const credentialsFileAddr = "redlock_credentials.c"

// credentialsFileConfig: a managed redlock_credentials keeps its passwords in file, the
// ephemeral one reads them back, and a master takes them write-only, versioned by the set.
func credentialsFileConfig(m *testMaster, file string) string {
	return fmt.Sprintf(`
resource "redlock_credentials" "c" {
  file = %q
}

ephemeral "redlock_credentials" "c" {
  file    = redlock_credentials.c.file
  version = redlock_credentials.c.version
}

resource "redlock_master" "m" {
  name                = "m1"
  data_dir            = %q
  max_lock_ttl        = %q
  admin_password_wo   = ephemeral.redlock_credentials.c.admin_password
  lock_password_wo    = ephemeral.redlock_credentials.c.lock_password
  password_wo_version = redlock_credentials.c.version
}
`, file, m.dir, testTTL)
}

// TestAccCredentials_file: with file, the passwords are in that file (0600) and nowhere in
// the state, which holds their hashes; a master fed through the ephemeral resource runs with
// them; the next plan is empty; a lost file is a new set, which reaches the master (its
// version changed); destroy removes the file.
func TestAccCredentials_file(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	work := t.TempDir()
	file := filepath.Join(t.TempDir(), "secrets", "credentials.json")
	var first credentialsFile
	readFile := func(into *credentialsFile) resource.TestCheckFunc {
		return func(*terraform.State) error {
			c, err := readCredentialsFile(file)
			if err != nil {
				return err
			}
			*into = c
			return nil
		}
	}
	checkFileSet := func(c *credentialsFile) resource.TestCheckFunc {
		return resource.ComposeAggregateTestCheckFunc(
			func(s *terraform.State) error {
				st, err := os.Stat(file)
				if err != nil {
					return err
				}
				if st.Mode().Perm() != 0o600 {
					return fmt.Errorf("%s has mode %v, want 0600", file, st.Mode().Perm())
				}
				admin, lock := c.hashes()
				return resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(credentialsFileAddr, "admin_password_sha256", admin),
					resource.TestCheckResourceAttr(credentialsFileAddr, "lock_password_sha256", lock),
					resource.TestCheckResourceAttr(credentialsFileAddr, "version", fmt.Sprint(c.Version)),
					resource.TestCheckNoResourceAttr(credentialsFileAddr, "admin_password"),
					resource.TestCheckNoResourceAttr(credentialsFileAddr, "lock_password"),
				)(s)
			},
			func(s *terraform.State) error { return m.checkAuth(c.AdminPassword, c.LockPassword)(s) },
			checkNotInState(work, func() string { return c.AdminPassword }, func() string { return c.LockPassword }),
		)
	}
	var second credentialsFile
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		TerraformVersionChecks:   writeOnlyTerraform,
		WorkingDir:               work,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			m.checkGone(false),
			func(*terraform.State) error {
				if _, err := os.Stat(file); !os.IsNotExist(err) {
					return fmt.Errorf("destroy left %s behind (stat: %v)", file, err)
				}
				return nil
			},
		),
		Steps: []resource.TestStep{
			{
				Config: credentialsFileConfig(m, file),
				Check:  resource.ComposeAggregateTestCheckFunc(m.capture(), readFile(&first), checkFileSet(&first)),
			},
			{
				Config: credentialsFileConfig(m, file),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: checkFileSet(&first),
			},
			{
				// The file is lost: refresh drops the set, the apply makes a new one and the
				// master, whose password_wo_version follows it, takes the new passwords.
				PreConfig: func() {
					if err := os.Remove(file); err != nil {
						t.Fatal(err)
					}
				},
				Config: credentialsFileConfig(m, file),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(credentialsFileAddr, plancheck.ResourceActionCreate),
						plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate),
					},
				},
				Check: resource.ComposeAggregateTestCheckFunc(readFile(&second), checkFileSet(&second),
					func(s *terraform.State) error {
						if second.AdminPassword == first.AdminPassword {
							return fmt.Errorf("a lost file gave the same passwords again")
						}
						return m.checkAuth(second.AdminPassword, second.LockPassword, first.LockPassword)(s)
					}),
			},
		},
	})
}

// TestAccCredentials_inState is the negative control of the test above: without file the
// passwords are in the state (checkNotInState finds them), and so are their hashes.
func TestAccCredentials_inState(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	var admin, lock string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		WorkingDir:               work,
		Steps: []resource.TestStep{{
			Config: `resource "redlock_credentials" "c" {}`,
			Check: resource.ComposeAggregateTestCheckFunc(
				func(s *terraform.State) error {
					a := s.RootModule().Resources[credentialsFileAddr].Primary.Attributes
					admin, lock = a["admin_password"], a["lock_password"]
					if a["admin_password_sha256"] != redisconf.HashPassword(admin) || a["lock_password_sha256"] != redisconf.HashPassword(lock) {
						return fmt.Errorf("the hashes are not the SHA-256 of the passwords")
					}
					return nil
				},
				func(s *terraform.State) error {
					err := checkNotInState(work, func() string { return admin }, func() string { return lock })(s)
					if err == nil {
						return fmt.Errorf("the passwords of a redlock_credentials without file were not found in the state: the check cannot fail")
					}
					return nil
				},
			),
		}},
	})
}

// TestAccCredentials_fileRefusals: a relative path, an existing file, and an ephemeral
// resource whose file holds another version, each refused naming the fix.
func TestAccCredentials_fileRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	existing := filepath.Join(dir, "taken.json")
	if err := os.WriteFile(existing, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	versioned := filepath.Join(dir, "v.json")
	if err := writeCredentialsFile(versioned, credentialsFile{Version: 7, LockUser: "redlock",
		AdminPassword: woAdmin1, LockPassword: woLock1}); err != nil {
		t.Fatal(err)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		TerraformVersionChecks:   writeOnlyTerraform,
		Steps: []resource.TestStep{
			{Config: `resource "redlock_credentials" "c" { file = "secrets/c.json" }`, PlanOnly: true,
				ExpectError: regexp.MustCompile(`(?s)is relative:\s+give\s+an\s+absolute\s+path`)},
			{Config: fmt.Sprintf(`resource "redlock_credentials" "c" { file = %q }`, existing),
				ExpectError: regexp.MustCompile(`(?s)already exists:\s+it holds other\s+passwords`)},
			{Config: fmt.Sprintf(`
ephemeral "redlock_credentials" "c" {
  file    = %q
  version = 8
}
resource "terraform_data" "x" {
  lifecycle {
    precondition {
      condition     = ephemeral.redlock_credentials.c.lock_user == "redlock"
      error_message = "unreachable: opening fails first"
    }
  }
}
`, versioned), ExpectError: regexp.MustCompile(`(?s)holds version 7 of\s+the\s+passwords, and\s+version = 8`)},
		},
	})
	if _, err := os.Stat(existing); err != nil {
		t.Fatalf("the refused create touched %s: %v", existing, err)
	}
}
