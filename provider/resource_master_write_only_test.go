package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/redlock-kit/redlock-kit/internal/master/local"
	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// Write-only arguments need Terraform >= 1.11 (ephemeral resources >= 1.10): these tests
// fail, not skip, on an older terraform, so that a run never passes without them.
var writeOnlyTerraform = []tfversion.TerraformVersionCheck{tfversion.RequireAbove(tfversion.Version1_11_0)}

// writeOnlyTerraformBinary is what make deps builds when the terraform it uses is older
// than 1.11 (scripts/deps.sh), relative to the repository root.
const writeOnlyTerraformBinary = "bin/terraform-1.11.4"

// useWriteOnlyTerraform points the test process at a terraform >= 1.11 (TestMain, once: the
// tests run in parallel, and the environment is the process's): TF_ACC_TERRAFORM_PATH when
// set, else the terraform on PATH when it is new enough, else the one make deps built (which
// every test of the process then runs). When there is none, the write-only tests' version
// check fails them with the version it found.
func useWriteOnlyTerraform() error {
	if os.Getenv("TF_ACC_TERRAFORM_PATH") != "" {
		return nil
	}
	if v, err := terraformVersion("terraform"); err == nil && !v.LessThan(tfversion.Version1_11_0) {
		return nil
	}
	if p, err := filepath.Abs(filepath.Join("..", writeOnlyTerraformBinary)); err == nil {
		if _, err := os.Stat(p); err == nil {
			return os.Setenv("TF_ACC_TERRAFORM_PATH", p)
		}
	}
	return nil
}

// terraformVersion runs `bin version -json`.
func terraformVersion(bin string) (*version.Version, error) {
	out, err := exec.Command(bin, "version", "-json").Output()
	if err != nil {
		return nil, err
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, err
	}
	return version.NewVersion(v.Version)
}

// Passwords the write-only tests give literally, so that the state files can be searched
// for them. Each is unique in the test's files.
const (
	woAdmin1 = "wo-admin-first-0123456789abcdef"
	woLock1  = "wo-lock-first-0123456789abcdef"
	woAdmin2 = "wo-admin-second-0123456789abcdef"
	woLock2  = "wo-lock-second-0123456789abcdef"
)

func writeOnlyConfig(m *testMaster, admin, lock string, version int) string {
	return masterConfig(m, fmt.Sprintf(`
  admin_password_wo   = %q
  lock_password_wo    = %q
  password_wo_version = %d
`, admin, lock, version))
}

// stateFiles are the terraform.tfstate* files (state and backups) under the test's working
// dir. Finding none is an error: the search must have something to search.
func stateFiles(workDir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(workDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".terraform" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), "terraform.tfstate") {
			files = append(files, p)
		}
		return nil
	})
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no terraform.tfstate under %s", workDir)
	}
	return files, err
}

// secretsInState reports which of secrets some state file under workDir holds.
func secretsInState(workDir string, secrets ...string) (found []string, err error) {
	files, err := stateFiles(workDir)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, s := range secrets {
			if s == "" {
				return nil, errors.New("searching the state for an empty secret")
			}
			if bytes.Contains(raw, []byte(s)) {
				found = append(found, fmt.Sprintf("%s in %s", s, filepath.Base(f)))
			}
		}
	}
	return found, nil
}

// checkNotInState fails when a state file (state or backup) holds one of the secrets.
func checkNotInState(workDir string, secrets ...func() string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		var values []string
		for _, s := range secrets {
			values = append(values, s())
		}
		found, err := secretsInState(workDir, values...)
		if err != nil {
			return err
		}
		if len(found) > 0 {
			return fmt.Errorf("secrets in the state: %v", found)
		}
		return nil
	}
}

func literal(s string) func() string { return func() string { return s } }

// withPasswords makes the test's clients use these passwords (the state has none).
func (m *testMaster) withPasswords(admin, lock string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		m.adminPassword, m.lockUser, m.lockPass = admin, "redlock", lock
		return nil
	}
}

// checkAuth proves the live master takes these passwords (PING as admin, a lock as the lock
// user) and refuses others with WRONGPASS.
func (m *testMaster) checkAuth(admin, lock string, refused ...string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		m.adminPassword, m.lockUser, m.lockPass = admin, "redlock", lock
		c := m.admin()
		defer c.Close()
		if err := c.Ping(context.Background()).Err(); err != nil {
			return fmt.Errorf("admin PING with the write-only admin password: %w", err)
		}
		if err := m.checkLockUser()(s); err != nil {
			return err
		}
		for _, pw := range refused {
			old := *m
			old.adminPassword = pw
			c := old.admin()
			err := c.Ping(context.Background()).Err()
			c.Close()
			if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
				return fmt.Errorf("admin PING with a password the master should no longer take: %v, want WRONGPASS", err)
			}
		}
		return nil
	}
}

// TestAccMaster_writeOnlyPasswords: the passwords given write-only never reach the state
// (nor its backup, after destroy either); refresh, drift repair and destroy work from the
// master's own files; a new password_wo_version changes both in place; a new write-only
// value without a new version changes nothing.
func TestAccMaster_writeOnlyPasswords(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	work := t.TempDir()
	all := []func() string{literal(woAdmin1), literal(woLock1), literal(woAdmin2), literal(woLock2)}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		TerraformVersionChecks:   writeOnlyTerraform,
		WorkingDir:               work,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			m.checkGone(false),
			checkNotInState(work, all...),
		),
		Steps: []resource.TestStep{
			{
				Config: writeOnlyConfig(m, woAdmin1, woLock1, 1),
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					resource.TestCheckNoResourceAttr(testAddr, "admin_password"),
					resource.TestCheckNoResourceAttr(testAddr, "lock_password"),
					resource.TestCheckNoResourceAttr(testAddr, "admin_password_wo"),
					resource.TestCheckNoResourceAttr(testAddr, "lock_password_wo"),
					resource.TestCheckResourceAttr(testAddr, "password_wo_version", "1"),
					m.checkAuth(woAdmin1, woLock1),
					checkNotInState(work, all...),
					m.checkSecretFileModes(woAdmin1, woLock1),
				),
			},
			{
				// Refresh reaches the master with the admin password from its data dir.
				RefreshState: true,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					resource.TestCheckResourceAttr(testAddr, "appendfsync", "always"),
					resource.TestMatchResourceAttr(testAddr, "run_id", regexp.MustCompile(`^[0-9a-f]{40}$`)),
					checkNotInState(work, all...),
				),
			},
			{
				// Drift made behind Terraform's back is seen and repaired in place.
				PreConfig: func() {
					c := m.admin()
					defer c.Close()
					if err := c.ConfigSet(context.Background(), "appendfsync", "everysec").Err(); err != nil {
						t.Fatalf("CONFIG SET appendfsync everysec: %v", err)
					}
				},
				Config: writeOnlyConfig(m, woAdmin1, woLock1, 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					m.withPasswords(woAdmin1, woLock1),
					m.expectConfig("appendfsync", "always"),
					m.checkAuth(woAdmin1, woLock1),
					checkNotInState(work, all...),
				),
			},
			{
				// New write-only values, same version: Terraform cannot see the change, and
				// the master keeps its passwords.
				Config: writeOnlyConfig(m, woAdmin2, woLock2, 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					m.checkAuth(woAdmin1, woLock1, woAdmin2),
				),
			},
			{
				// Rotation: a new version applies the current write-only values in place.
				Config: writeOnlyConfig(m, woAdmin2, woLock2, 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrWith(testAddr, "pid", func(v string) error {
						if v != m.firstPID {
							return fmt.Errorf("pid changed from %s to %s: the rotation restarted the master", m.firstPID, v)
						}
						return nil
					}),
					resource.TestCheckResourceAttr(testAddr, "password_wo_version", "2"),
					resource.TestCheckNoResourceAttr(testAddr, "admin_password"),
					resource.TestCheckNoResourceAttr(testAddr, "lock_password"),
					m.checkAuth(woAdmin2, woLock2, woAdmin1),
					m.checkLockPasswordRefused(woLock1),
					m.checkSupervisorSeesMaster(),
					m.checkSecretFileModes(woAdmin2, woLock2),
					checkNotInState(work, all...),
				),
			},
		},
	})
}

// checkLockPasswordRefused: the lock user no longer takes an old password.
func (m *testMaster) checkLockPasswordRefused(old string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		o := *m
		o.lockPass = old
		c := o.lockClient()
		defer c.Close()
		err := c.Ping(context.Background()).Err()
		if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			return fmt.Errorf("lock user PING with the old lock password: %v, want WRONGPASS", err)
		}
		return nil
	}
}

// checkSecretFileModes walks the master's data dir: every file holding one of the
// passwords is 0600 (the dir itself 0700), and the files the provider needs them from
// (redis.conf, supervisor.json, redlock-master.json) do hold them.
func (m *testMaster) checkSecretFileModes(secrets ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		holders, err := filesWithSecrets(m.dir, secrets...)
		if err != nil {
			return err
		}
		want := map[string]bool{local.RedisConfFileName: false, supervisor.ConfigFileName: false, local.RecordFileName: false}
		for p, mode := range holders {
			if mode != 0o600 {
				return fmt.Errorf("%s holds a password with mode %o, want 600", p, mode)
			}
			if _, ok := want[filepath.Base(p)]; ok {
				want[filepath.Base(p)] = true
			}
		}
		for name, seen := range want {
			if !seen {
				return fmt.Errorf("%s holds none of the passwords: the master's files do not keep them", name)
			}
		}
		if fi, err := os.Stat(m.dir); err != nil || fi.Mode().Perm() != 0o700 {
			return fmt.Errorf("data dir %s: %v, mode want 700", m.dir, err)
		}
		return nil
	}
}

// TestAccMaster_writeOnlyFromState moves passwords out of the state: a master created with
// admin_password and lock_password (in the state: the search finds them, so it can find)
// switches to the write-only arguments with the same values; the update removes them from
// the state and the master keeps working. Its backup still has them: the README says so.
func TestAccMaster_writeOnlyFromState(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	work := t.TempDir()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		TerraformVersionChecks:   writeOnlyTerraform,
		WorkingDir:               work,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{
			{
				Config: masterConfig(m, fmt.Sprintf("  admin_password = %q\n  lock_password = %q\n", woAdmin1, woLock1)),
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "admin_password", woAdmin1),
					func(*terraform.State) error {
						found, err := secretsInState(work, woAdmin1, woLock1)
						if err != nil || len(found) != 2 {
							return fmt.Errorf("the search finds %v (err %v) in a state that holds both passwords", found, err)
						}
						return nil
					},
				),
			},
			{
				Config: writeOnlyConfig(m, woAdmin1, woLock1, 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckNoResourceAttr(testAddr, "admin_password"),
					resource.TestCheckNoResourceAttr(testAddr, "lock_password"),
					m.checkAuth(woAdmin1, woLock1),
					func(*terraform.State) error {
						raw, err := os.ReadFile(filepath.Join(work, mustOne(stateFilesNamed(work, "terraform.tfstate"))))
						if err != nil {
							return err
						}
						if bytes.Contains(raw, []byte(woAdmin1)) || bytes.Contains(raw, []byte(woLock1)) {
							return fmt.Errorf("terraform.tfstate still holds a password after the switch to write-only")
						}
						return nil
					},
				),
			},
		},
	})
}

// stateFilesNamed returns the paths, relative to workDir, of the files called name.
func stateFilesNamed(workDir, name string) []string {
	files, _ := stateFiles(workDir)
	var out []string
	for _, f := range files {
		if filepath.Base(f) == name {
			rel, _ := filepath.Rel(workDir, f)
			out = append(out, rel)
		}
	}
	return out
}

func mustOne(s []string) string {
	if len(s) != 1 {
		return fmt.Sprintf("(%d state files)", len(s))
	}
	return s[0]
}

// TestAccMaster_writeOnlyEphemeralCredentials: ephemeral redlock_credentials feed the
// write-only arguments; the master runs with them, they are in no state file, and the next
// apply (which opens the ephemeral resource again, with new values) changes nothing.
func TestAccMaster_writeOnlyEphemeralCredentials(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	work := t.TempDir()
	var admin, lock string
	config := fmt.Sprintf(`
ephemeral "redlock_credentials" "c" {}

resource "redlock_master" "m" {
  name                = "m1"
  data_dir            = %q
  max_lock_ttl        = %q
  admin_password_wo   = ephemeral.redlock_credentials.c.admin_password
  lock_password_wo    = ephemeral.redlock_credentials.c.lock_password
  password_wo_version = 1
}
`, m.dir, testTTL)
	// readSecrets takes the passwords the master got from its own files: nothing else has them.
	readSecrets := func(*terraform.State) error {
		c, err := supervisor.LoadConfig(m.dir)
		if err != nil {
			return err
		}
		a, l := local.PreviousSecrets(m.dir, "redlock")
		if c.AdminPassword != a || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(a) ||
			!regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(l) || a == l {
			return fmt.Errorf("the master's files do not hold two generated 64-hex passwords")
		}
		if admin != "" && (a != admin || l != lock) {
			return fmt.Errorf("the passwords changed on an apply without a new password_wo_version")
		}
		admin, lock = a, l
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		TerraformVersionChecks:   writeOnlyTerraform,
		WorkingDir:               work,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			m.checkGone(false),
			checkNotInState(work, func() string { return admin }, func() string { return lock }),
		),
		Steps: []resource.TestStep{
			{
				Config: config,
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					readSecrets,
					func(s *terraform.State) error { return m.checkAuth(admin, lock)(s) },
					checkNotInState(work, func() string { return admin }, func() string { return lock }),
					resource.TestCheckNoResourceAttr(testAddr, "admin_password"),
					resource.TestCheckNoResourceAttr(testAddr, "lock_password"),
				),
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					readSecrets,
					func(s *terraform.State) error { return m.checkAuth(admin, lock)(s) },
				),
			},
		},
	})
}

// TestAccMaster_writeOnlyRefusals: plan-time errors that name the fields and the fix.
func TestAccMaster_writeOnlyRefusals(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	step := func(extra, want string) resource.TestStep {
		return resource.TestStep{Config: masterConfig(m, extra), PlanOnly: true, ExpectError: regexp.MustCompile(want)}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		TerraformVersionChecks:   writeOnlyTerraform,
		Steps: []resource.TestStep{
			step(fmt.Sprintf("admin_password = %q\nadmin_password_wo = %q\npassword_wo_version = 1", woAdmin1, woAdmin2),
				`admin_password and admin_password_wo are both set`),
			step(fmt.Sprintf("lock_password = %q\nlock_password_wo = %q\npassword_wo_version = 1", woLock1, woLock2),
				`lock_password and lock_password_wo are both set`),
			step(fmt.Sprintf("admin_password_wo = %q", woAdmin1), `need\s+password_wo_version`),
			step("password_wo_version = 3", `none is set`),
			step(fmt.Sprintf("admin_password_wo = %q\nlock_password_wo = %q\npassword_wo_version = 1", woAdmin1, woAdmin1),
				`lock_password_wo must differ from admin_password_wo`),
			step(`lock_password_wo = "short"
password_wo_version = 1`, `(?s)lock_password_wo.*at least 16`),
			step(fmt.Sprintf("lock_password_wo = %q\npassword_wo_version = 1\nlock_users = { billing = { key_prefix = \"billing:\", password = %q } }", woLock1, woLock2),
				`lock_password_wo cannot be used with lock_users`),
			step(fmt.Sprintf("monitor_password = %q\nmonitor_password_wo = %q\npassword_wo_version = 1", woMonitor1, woMonitor2),
				`monitor_password\s+and\s+monitor_password_wo\s+are\s+both\s+set`),
			step(fmt.Sprintf("monitor_password_wo = %q", woMonitor1), `monitor_password_wo\s+and\s+lock_user_passwords_wo\s+need\s+password_wo_version`),
			step(`tls_key_pem_wo = "k"`, `tls_key_pem_wo\s+is\s+set\s+but\s+tls\s+is\s+false`),
			step(`tls = true
tls_cert_pem = "c"
tls_key_pem = "k"
tls_key_pem_wo = "k"
tls_ca_cert_pem = "a"`, `tls_key_pem\s+and\s+tls_key_pem_wo\s+are\s+both\s+set`),
		},
	})
}

// TestAccCredentialsEphemeral: the ephemeral resource opens with two distinct generated
// passwords and the default lock user, and leaves nothing in the state.
func TestAccCredentialsEphemeral(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.RequireAbove(tfversion.Version1_10_0)},
		WorkingDir:               work,
		Steps: []resource.TestStep{{
			Config: `
ephemeral "redlock_credentials" "c" {
  lock_user = "billing"
}

locals {
  ok = (length(ephemeral.redlock_credentials.c.admin_password) == 64 &&
    length(ephemeral.redlock_credentials.c.lock_password) == 64 &&
    ephemeral.redlock_credentials.c.admin_password != ephemeral.redlock_credentials.c.lock_password &&
  ephemeral.redlock_credentials.c.lock_user == "billing")
}

resource "terraform_data" "check" {
  lifecycle {
    precondition {
      condition     = local.ok
      error_message = "ephemeral redlock_credentials: want two distinct 64-hex passwords and lock_user billing"
    }
  }
}
`,
			Check: func(*terraform.State) error {
				files, err := stateFiles(work)
				if err != nil {
					return err
				}
				for _, f := range files {
					raw, err := os.ReadFile(f)
					if err != nil {
						return err
					}
					var st struct {
						Resources []struct{ Mode, Type string }
					}
					if err := json.Unmarshal(raw, &st); err != nil {
						return fmt.Errorf("%s: %w", f, err)
					}
					for _, r := range st.Resources {
						if r.Type == "redlock_credentials" || r.Mode == "ephemeral" {
							return fmt.Errorf("%s holds %s %s: an ephemeral resource reached the state", f, r.Mode, r.Type)
						}
					}
					if len(st.Resources) != 1 {
						return fmt.Errorf("%s holds %d resources, want terraform_data.check only", f, len(st.Resources))
					}
				}
				return nil
			},
		}},
	})
}

// filesWithSecrets walks dir and returns the permission bits of every regular file that
// holds one of secrets.
func filesWithSecrets(dir string, secrets ...string) (map[string]os.FileMode, error) {
	out := map[string]os.FileMode{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if bytes.Contains(raw, []byte(s)) {
				fi, err := d.Info()
				if err != nil {
					return err
				}
				out[p] = fi.Mode().Perm()
			}
		}
		return nil
	})
	return out, err
}
