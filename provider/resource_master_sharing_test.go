package provider

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/redlock-kit/redlock-kit/provider/supervisor"
)

// Two masters must never share a data dir. A dir another master's supervisor runs is
// refused at plan, naming that master; the master that owns it is untouched.
func TestAccMaster_dataDirOfAnotherMasterRefusedAtPlan(t *testing.T) {
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

// Two new masters of one configuration with the same data_dir: neither runs at plan, so
// the plan cannot tell (each resource is planned on its own). At apply one is created and
// the other fails naming it, without touching the dir; the next plan refuses the second.
func TestAccMaster_twoMastersShareADataDir(t *testing.T) {
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
		Steps: []resource.TestStep{
			{
				Config: config,
				// The loser either lost the claim while both were created, or was planned
				// again at apply after the winner was up.
				ExpectError: wrappedRegexp(`data_dir [^\s]+ (is also the data_dir of master|is run by the supervisor \(pid [0-9]+\) of master) "m-[ab]"`),
			},
			{
				PreConfig: func() {
					live, err := supervisor.Inspect(dir)
					if err != nil || !live.SupervisorAlive || !live.RedisAlive || live.Status != supervisor.StatusRunning {
						t.Fatalf("the master that won the data dir does not run: %+v, %v", live, err)
					}
				},
				Config:      config,
				PlanOnly:    true,
				ExpectError: wrappedRegexp(`data_dir [^\s]+ is run by the supervisor \(pid [0-9]+\) of master "m-[ab]"`),
			},
		},
	})
}
