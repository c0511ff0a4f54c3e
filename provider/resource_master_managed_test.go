package provider

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/redis/go-redis/v9"
)

// TestAccMaster_managedSettingsDrift: a user's rights, a user added, a lock user given a
// second password, save, protected-mode and maxclients changed on the server show in the
// plan as an update naming the setting (managed_settings["..."]), and apply sets them back;
// an admin password changed on the server (CONFIG SET requirepass) plans a replacement, after
// which the master answers with the admin password Terraform knows. The state holds no hash.
func TestAccMaster_managedSettingsDrift(t *testing.T) {
	m := newTestMaster(t)
	port := closedPort(t)
	// With a monitoring user too: a repair redefines every user the master has.
	config := masterConfig(m, fmt.Sprintf("  port = %d\n  monitor_password = \"monitor-password-0123456\"\n", port))
	var lockUserRules string
	settingPlanned := func(key string, want knownvalue.Check) resource.ConfigPlanChecks {
		return resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate),
			plancheck.ExpectKnownValue(testAddr, tfjsonpath.New(managedAttribute).AtMapKey(key), want),
		}}
	}
	step := func(pre func(), key string, want knownvalue.Check, check resource.TestCheckFunc) resource.TestStep {
		return resource.TestStep{PreConfig: pre, Config: config, ConfigPlanChecks: settingPlanned(key, want),
			Check: resource.ComposeAggregateTestCheckFunc(m.capture(), check, noHashInState)}
	}
	resource.ParallelTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{
			{Config: config, Check: resource.ComposeAggregateTestCheckFunc(m.capture(), noHashInState,
				resource.TestCheckResourceAttr(testAddr, managedAttribute+".save", ""),
				resource.TestCheckResourceAttr(testAddr, managedAttribute+".protected-mode", "yes"),
				resource.TestCheckResourceAttrWith(testAddr, managedAttribute+".user redlock", func(v string) error {
					lockUserRules = v
					if !strings.HasSuffix(v, "(passwords as configured)") || !strings.Contains(v, "-@all") {
						return fmt.Errorf("user redlock = %q, want its restricted rules with its configured password", v)
					}
					return nil
				}))},
			step(func() { m.adminDo(t, "ACL", "SETUSER", "redlock", "+@all") }, "user redlock",
				knownvalue.StringFunc(func(v string) error { return equal(v, lockUserRules) }),
				m.lockUserRefused(t, "CONFIG", "GET", "maxclients")),
			step(func() {
				m.adminDo(t, "ACL", "SETUSER", "intruder", "on", ">intruder-password-123", "~*", "&*", "+@all")
			},
				"user redlock", knownvalue.StringFunc(func(v string) error { return equal(v, lockUserRules) }),
				resource.ComposeAggregateTestCheckFunc(m.expectNoUser(t, "intruder"),
					resource.TestCheckNoResourceAttr(testAddr, managedAttribute+".user intruder"))),
			step(func() { m.adminDo(t, "ACL", "SETUSER", "redlock", ">a-second-password-0123") }, "user redlock",
				knownvalue.StringFunc(func(v string) error { return equal(v, lockUserRules) }),
				resource.ComposeAggregateTestCheckFunc(m.lockUserLogsIn(t, m.lockPassOf, true),
					m.lockUserLogsIn(t, func() string { return "a-second-password-0123" }, false))),
			step(func() { m.adminDo(t, "CONFIG", "SET", "save", "60 1") }, "save", knownvalue.StringExact(""),
				m.expectConfig("save", "")),
			step(func() { m.adminDo(t, "CONFIG", "SET", "protected-mode", "no") }, "protected-mode", knownvalue.StringExact("yes"),
				m.expectConfig("protected-mode", "yes")),
			step(func() { m.adminDo(t, "CONFIG", "SET", "maxclients", "50") }, "maxclients", knownvalue.StringExact("10000"),
				m.expectConfig("maxclients", "10000")),
			{
				PreConfig: func() { m.adminDo(t, "CONFIG", "SET", "requirepass", "changed-behind-terraform-0123") },
				Config:    config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(m.capture(),
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					resource.TestCheckResourceAttr(testAddr, "port", fmt.Sprint(port)),
					m.expectConfig("protected-mode", "yes"), // the admin password works again
					resource.TestCheckResourceAttrWith(testAddr, managedAttribute+".user default", func(v string) error {
						if !strings.HasSuffix(v, "(passwords as configured)") {
							return fmt.Errorf("user default = %q", v)
						}
						return nil
					})),
			},
		},
	})
}

func equal(got, want string) error {
	if got != want {
		return fmt.Errorf("got %q, want %q", got, want)
	}
	return nil
}

// noHashInState: managed_settings never carries a password hash.
func noHashInState(s *terraform.State) error {
	hash := regexp.MustCompile(`[0-9a-f]{64}`)
	for k, v := range s.RootModule().Resources[testAddr].Primary.Attributes {
		if strings.HasPrefix(k, managedAttribute) && hash.MatchString(v) {
			return fmt.Errorf("%s = %q holds a hash", k, v)
		}
	}
	return nil
}

func (m *testMaster) lockPassOf() string { return m.lockPass }

// lockUserRefused: the lock user may not run args (NOPERM).
func (m *testMaster) lockUserRefused(t *testing.T, args ...any) resource.TestCheckFunc {
	return func(*terraform.State) error {
		c := m.lockClient()
		defer c.Close()
		err := c.Do(ctxT(t), args...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			return fmt.Errorf("lock user ran %v: %v, want NOPERM", args, err)
		}
		return nil
	}
}

// lockUserLogsIn: the lock user logs in with password() (want) or is refused (!want).
func (m *testMaster) lockUserLogsIn(t *testing.T, password func() string, want bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		c := redis.NewClient(&redis.Options{Addr: m.addr, Username: m.lockUser, Password: password(), MaxRetries: -1,
			DisableIdentity: true, TLSConfig: m.tls})
		defer c.Close()
		err := c.Ping(ctxT(t)).Err()
		if (err == nil) != want {
			return fmt.Errorf("lock user login: %v, want success %v", err, want)
		}
		return nil
	}
}

// expectNoUser: the master has no ACL user name.
func (m *testMaster) expectNoUser(t *testing.T, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		c := m.admin()
		defer c.Close()
		users, err := c.Do(ctxT(t), "ACL", "USERS").StringSlice()
		if err != nil {
			return err
		}
		if slices.Contains(users, name) {
			return fmt.Errorf("user %s still on the master (%v)", name, users)
		}
		return nil
	}
}
