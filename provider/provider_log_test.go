package provider

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// TF_LOG=DEBUG shows what the provider did, with structured fields and without the
// passwords. terraform-plugin-testing writes the in-process provider's log to
// TF_LOG_PATH_MASK (%s: the test's name).
func TestAccProviderLogsWithTFLog(t *testing.T) {
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
