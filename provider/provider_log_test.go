package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// TF_LOG=DEBUG shows what the provider did, with structured fields and without the
// passwords. terraform-plugin-testing writes the in-process provider's log to
// TF_LOG_PATH_MASK (%s: the test's name).
func TestAccProviderLogsWithTFLog(t *testing.T) {
	// Not parallel: t.Setenv (TF_LOG) sets the whole process's environment.
	dir := t.TempDir()
	t.Setenv("TF_LOG", "DEBUG")
	t.Setenv("TF_LOG_PATH_MASK", filepath.Join(dir, "%s.log"))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{{
			Config: `data "redlock_host_config" "m" {
  name         = "m1"
  address      = "10.20.0.11"
  max_lock_ttl = "90s"
` + hostConfigPasswords + `}`,
			Check: resource.TestCheckResourceAttr("data.redlock_host_config.m", "max_lock_ttl_ms", "90000"),
		}},
	})
	logs, _ := filepath.Glob(filepath.Join(dir, "*"))
	var all strings.Builder
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	got := all.String()
	for _, want := range []string{"redlock_host_config read: rendering the host's files", "redlock_host_config read: rendered", `name=m1`, `address=10.20.0.11:6379`, `data_dir=/var/lib/redis`, `max_lock_ttl=90s`} {
		if !strings.Contains(got, want) {
			t.Errorf("TF_LOG=DEBUG log (%d files in %s) has no %q", len(logs), dir, want)
		}
	}
	for _, secret := range []string{"admin-password-0123456789", "lock-password-0123456789"} {
		if strings.Contains(got, secret) {
			t.Errorf("the log contains a password (%q)", secret)
		}
	}
	if t.Failed() && len(got) < 20000 {
		t.Logf("log:\n%s", got)
	}
}

// redlock_master logs its create, read, update and delete with the master's name, data_dir,
// address and pids (never a password); and a duration respelled in the configuration ("2000ms"
// then "2s", one value for timetypes.GoDuration) is an in-place update that leaves the master
// running as it was.
func TestAccMaster_logsAndDurationSpelling(t *testing.T) {
	// Not parallel: t.Setenv (TF_LOG) sets the whole process's environment.
	m := newTestMaster(t)
	dir := t.TempDir()
	t.Setenv("TF_LOG", "DEBUG")
	t.Setenv("TF_LOG_PATH_MASK", filepath.Join(dir, "%s.log"))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: masterConfig(m, `max_lock_ttl = "2000ms"`),
				Check: resource.ComposeAggregateTestCheckFunc(m.capture(),
					resource.TestCheckResourceAttr(testAddr, "max_lock_ttl", "2000ms"),
					resource.TestCheckResourceAttr(testAddr, "max_lock_ttl_ms", "2000"),
					resource.TestCheckResourceAttr(testAddr, "restart_delay", "3s")),
			},
			{
				Config: masterConfig(m, `max_lock_ttl = "2s"`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(testAddr, tfjsonpath.New("max_lock_ttl_ms"), knownvalue.Int64Exact(2000)),
					plancheck.ExpectKnownValue(testAddr, tfjsonpath.New("restart_delay"), knownvalue.StringExact("3s")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(testAddr, "max_lock_ttl", "2s"),
					resource.TestCheckResourceAttrWith(testAddr, "pid", func(v string) error {
						if v != m.firstPID {
							return fmt.Errorf("pid %s, want %s: respelling max_lock_ttl restarted the master", v, m.firstPID)
						}
						return nil
					})),
			},
		},
	})
	logs, _ := filepath.Glob(filepath.Join(dir, "*"))
	var all strings.Builder
	for _, f := range logs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all.Write(b)
	}
	got := all.String()
	for _, want := range []string{"redlock_master create: master running", "redlock_master read", "redlock_master update: done",
		"redlock_master delete: done", "name=m1", "data_dir=" + m.dir, "pid=" + m.firstPID, "status=running"} {
		if !strings.Contains(got, want) {
			t.Errorf("TF_LOG=DEBUG log (%d files in %s) has no %q", len(logs), dir, want)
		}
	}
	if m.adminPassword == "" || strings.Contains(got, m.adminPassword) || strings.Contains(got, m.lockPass) {
		t.Errorf("the log contains a password (or none was captured)")
	}
}
