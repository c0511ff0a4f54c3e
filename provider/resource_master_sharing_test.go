package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// Two masters must never share a data dir. A dir another master's supervisor runs is
// refused at plan, naming that master; the master that owns it is untouched.
func TestAccMaster_dataDirOfAnotherMasterRefusedAtPlan(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	first := masterConfig(m, "")
	second := first + fmt.Sprintf(`
resource "redlock_master" "other" {
  name         = "m2"
  data_dir     = %q
  max_lock_ttl = %q
}
`, m.dir, testTTL)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{
			{Config: first, Check: m.capture()},
			{
				Config:      second,
				PlanOnly:    true,
				ExpectError: wrappedRegexp(`data_dir [^\s]+ is run by the supervisor \(pid [0-9]+\) of master "m1": two masters cannot share a data dir`),
			},
			// Nothing changed for the owner: an empty plan, same pids.
			{Config: first, PlanOnly: true},
		},
	})
}

// Two new masters of one configuration with the same data_dir: refused at plan (the
// provider process that plans both remembers the first), before either touches the disk.
func TestAccMaster_twoMastersShareADataDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "shared")
	t.Cleanup(func() { stopDataDir(t, dir) })
	config := ""
	for _, name := range []string{"a", "b"} {
		config += fmt.Sprintf(`
resource "redlock_master" %q {
  name         = "m-%s"
  data_dir     = %q
  max_lock_ttl = %q
}
`, name, name, dir, testTTL)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{{
			// Refused at plan: both resources are planned by the same provider process.
			Config:      config,
			PlanOnly:    true,
			ExpectError: wrappedRegexp(`data_dir [^\s]+ is also the data_dir of master "m-[ab]" in this configuration`),
		}},
	})
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the refused plan created %s", dir)
	}
}
