package provider

import (
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/redlock-kit/redlock-kit/internal/localmasters"
	"github.com/redlock-kit/redlock-kit/internal/master/local"
)

// replacementCase changes one attribute that forces a replacement (ForceNew) of a running
// master with an explicit port: before and after are the resource's extra arguments, prefix
// is configuration beside the master (both steps), check what the new master must show.
type replacementCase struct {
	name          string
	prefix        string
	before, after func(m *testMaster, port int) string
	check         func(m *testMaster, port int) resource.TestCheckFunc
}

// TestAccMaster_replaceEachForceNewAttribute: every attribute whose change replaces the
// master (data_dir, port, bind, server_binary, tls) plans as a replacement of a running
// master with an explicit port, and applies as destroy-then-create: the old processes are
// gone, the new master serves, the state describes it, and the destroy honoured the
// master's locks (a lock granted just before the apply has expired before the new master
// answers: the destroy waited for it, as a data dir removed with its locks requires).
func TestAccMaster_replaceEachForceNewAttribute(t *testing.T) {
	t.Parallel()
	redisPath, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	portArg := func(port int) string { return fmt.Sprintf("  port = %d\n", port) }
	cases := []replacementCase{
		{name: "data_dir",
			before: func(m *testMaster, port int) string { return portArg(port) },
			after:  func(m *testMaster, port int) string { m.dir += "-new"; return portArg(port) },
			check: func(m *testMaster, port int) resource.TestCheckFunc {
				return resource.TestCheckResourceAttrPtr(testAddr, "data_dir", &m.dir)
			}},
		{name: "port",
			before: func(m *testMaster, port int) string { return portArg(port) },
			after:  func(m *testMaster, port int) string { return portArg(closedPort(t)) },
			check: func(m *testMaster, port int) resource.TestCheckFunc {
				return resource.TestCheckResourceAttrWith(testAddr, "port", func(v string) error {
					if v == fmt.Sprint(port) {
						return fmt.Errorf("port still %s", v)
					}
					return nil
				})
			}},
		{name: "bind",
			before: func(m *testMaster, port int) string { return portArg(port) },
			after: func(m *testMaster, port int) string {
				claim, err := localmasters.ClaimLoopback()
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = claim.Release() })
				return portArg(port) + fmt.Sprintf("  bind = %q\n", claim.Host)
			},
			check: func(m *testMaster, port int) resource.TestCheckFunc {
				return resource.TestCheckResourceAttrWith(testAddr, "bind", func(v string) error {
					if v == testBind {
						return fmt.Errorf("bind still %s", v)
					}
					return nil
				})
			}},
		{name: "server_binary",
			before: func(m *testMaster, port int) string { return portArg(port) + "  server_binary = \"redis-server\"\n" },
			after: func(m *testMaster, port int) string {
				return portArg(port) + fmt.Sprintf("  server_binary = %q\n", redisPath)
			},
			check: func(m *testMaster, port int) resource.TestCheckFunc {
				return resource.TestCheckResourceAttr(testAddr, "server_binary", redisPath)
			}},
		{name: "tls",
			prefix: fmt.Sprintf(`
resource "redlock_ca" "ca" {}

resource "redlock_server_certificate" "m" {
  ca_cert_pem        = redlock_ca.ca.cert_pem
  ca_private_key_pem = redlock_ca.ca.private_key_pem
  ip_addresses       = [%q]
}
`, testBind),
			before: func(m *testMaster, port int) string { return portArg(port) },
			after: func(m *testMaster, port int) string {
				return portArg(port) + `  tls             = true
  tls_cert_pem    = redlock_server_certificate.m.cert_pem
  tls_key_pem     = redlock_server_certificate.m.private_key_pem
  tls_ca_cert_pem = redlock_ca.ca.cert_pem
`
			},
			check: func(m *testMaster, port int) resource.TestCheckFunc {
				return resource.ComposeAggregateTestCheckFunc(resource.TestCheckResourceAttr(testAddr, "tls", "true"),
					m.checkPlainTextRefused())
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			testReplacement(t, tc)
		})
	}
}

func testReplacement(t *testing.T, tc replacementCase) {
	m := newTestMaster(t)
	oldDir := m.dir
	t.Cleanup(func() { stopDataDir(t, oldDir) })
	port := closedPort(t)
	before := tc.prefix + masterConfig(m, tc.before(m, port))
	extra := tc.after(m, port) // may move m.dir (the data_dir case)
	after := tc.prefix + masterConfig(m, extra)
	var oldPID, oldSupervisor int
	var lockExpires time.Time
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{
			{Config: before, Check: m.capture()},
			{
				PreConfig: func() {
					oldPID, oldSupervisor = m.pid, m.supervisorPID
					_, lockExpires = m.grantLock(t, 2*time.Second)
				},
				Config: after,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					tc.check(m, port),
					func(*terraform.State) error {
						for _, pid := range []int{oldPID, oldSupervisor} {
							if pid != m.pid && pid != m.supervisorPID && local.ProcessAlive(pid) &&
								(local.CmdlineHas(pid, oldDir) || cwdIs(pid, oldDir)) {
								return fmt.Errorf("pid %d of the replaced master still runs", pid)
							}
						}
						if m.pid == oldPID || m.supervisorPID == oldSupervisor {
							return fmt.Errorf("pids %d/%d: want a new redis-server and supervisor, had %d/%d",
								m.pid, m.supervisorPID, oldPID, oldSupervisor)
						}
						if now := time.Now(); now.Before(lockExpires) {
							return fmt.Errorf("the new master serves at %s, before the old master's lock expired (%s)",
								now.Format(time.RFC3339Nano), lockExpires.Format(time.RFC3339Nano))
						}
						return m.checkServes(t)
					},
				),
			},
		},
	})
}

// checkServes proves the master grants a lock to its lock user.
func (m *testMaster) checkServes(t *testing.T) error {
	c := m.lockClient()
	defer c.Close()
	key := fmt.Sprintf("serves-%d", time.Now().UnixNano())
	if ok, err := c.SetNX(ctxT(t), key, "token", time.Second).Result(); err != nil || !ok {
		return fmt.Errorf("the master at %s does not grant a lock to its lock user: %v %v", m.addr, ok, err)
	}
	return nil
}
