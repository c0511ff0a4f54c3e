package provider

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/redlock-kit/redlock-kit/internal/master/local"
)

// TestAccMaster_recoveryWithExplicitPort: the documented recoveries of a master with an
// explicit port. The plan proposes the repair the docs promise (a replacement, or a create
// when nothing is left) and never refuses the master's own port; apply leaves one supervised
// master serving on that port; and a destroy with refresh (the test's last step) works on a
// master left broken, without -refresh=false.
func TestAccMaster_recoveryWithExplicitPort(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		breaks func(t *testing.T, m *testMaster)
		action plancheck.ResourceActionType
		// brokenForDestroy: leave the master broken this way for the destroy that ends the test.
		brokenForDestroy bool
	}{
		{name: "supervisor killed: unsupervised master replaced",
			breaks: func(t *testing.T, m *testMaster) { mustKill(t, m.supervisorPID) },
			action: plancheck.ResourceActionDestroyBeforeCreate, brokenForDestroy: true},
		{name: "data dir removed: master replaced",
			breaks: func(t *testing.T, m *testMaster) {
				if err := removeAll(m.dir); err != nil {
					t.Fatal(err)
				}
			},
			action: plancheck.ResourceActionDestroyBeforeCreate, brokenForDestroy: true},
		{name: "supervisor and master killed: master created again",
			breaks: func(t *testing.T, m *testMaster) {
				mustKill(t, m.supervisorPID)
				mustKill(t, m.pid)
			},
			action: plancheck.ResourceActionCreate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMaster(t)
			port := closedPort(t)
			config := masterConfig(m, fmt.Sprintf("  port = %d\n  timeouts = { delete = \"1m\" }\n", port))
			var oldPIDs []int
			breakIt := func() {
				oldPIDs = append(oldPIDs, m.pid, m.supervisorPID)
				t.Cleanup(func() { killStray(m, oldPIDs) })
				tc.breaks(t, m)
			}
			steps := []resource.TestStep{
				{Config: config, Check: m.capture()},
				{
					PreConfig: breakIt,
					Config:    config,
					ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(testAddr, tc.action),
					}},
					Check: resource.ComposeAggregateTestCheckFunc(
						m.capture(),
						resource.TestCheckResourceAttr(testAddr, "status", "running"),
						resource.TestCheckResourceAttr(testAddr, "port", fmt.Sprint(port)),
						resource.TestCheckResourceAttr(testAddr, "address", hostPort(testBind, int64(port))),
						func(*terraform.State) error {
							for _, pid := range oldPIDs {
								if pid != m.pid && pid != m.supervisorPID && local.ProcessAlive(pid) &&
									(local.CmdlineHas(pid, m.dir) || cwdIs(pid, m.dir) || cwdIs(pid, m.dir+" (deleted)")) {
									return fmt.Errorf("pid %d of the broken master still runs", pid)
								}
							}
							return m.checkServes(t)
						},
					),
				},
			}
			if tc.brokenForDestroy {
				// Broken again, and left so: the test's destroy (with refresh) must stop it.
				steps = append(steps, resource.TestStep{
					PreConfig:          breakIt,
					RefreshState:       true,
					ExpectNonEmptyPlan: true,
					RefreshPlanChecks: resource.RefreshPlanChecks{PostRefresh: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(testAddr, tc.action),
					}},
				})
			}
			resource.ParallelTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviderFactories,
				CheckDestroy: resource.ComposeAggregateTestCheckFunc(m.checkGone(false), func(*terraform.State) error {
					for _, pid := range oldPIDs {
						if local.ProcessAlive(pid) && (local.CmdlineHas(pid, m.dir) || cwdIs(pid, m.dir) || cwdIs(pid, m.dir+" (deleted)")) {
							return fmt.Errorf("pid %d of the broken master still runs after destroy", pid)
						}
					}
					return nil
				}),
				Steps: steps,
			})
		})
	}
}

// killStray SIGKILLs what a failed test left of a broken master (its data dir may be gone,
// so stopDataDir cannot find it).
func killStray(m *testMaster, pids []int) {
	for _, pid := range pids {
		if local.ProcessAlive(pid) && (local.CmdlineHas(pid, m.dir) || cwdIs(pid, m.dir) || cwdIs(pid, m.dir+" (deleted)")) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
