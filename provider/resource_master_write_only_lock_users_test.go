package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/redis/go-redis/v9"
)

// Tenant passwords the write-only tests give literally (unique in the test's files).
const (
	woBilling1 = "wo-billing-first-0123456789abcdef"
	woBilling2 = "wo-billing-second-0123456789abcdef"
	woAds1     = "wo-ads-first-0123456789abcdef"
	woOps1     = "wo-ops-first-0123456789abcdef"
)

// writeOnlyLockUsersConfig is a master whose tenants' passwords (and the admin's) are
// write-only; passwords maps each tenant, named "<name>" with prefix "<name>:", to its password.
func writeOnlyLockUsersConfig(m *testMaster, passwords map[string]string, version int) string {
	var users, wo strings.Builder
	for _, name := range sortedKeys(passwords) {
		fmt.Fprintf(&users, "    %s = { key_prefix = %q }\n", name, name+":")
		fmt.Fprintf(&wo, "    %s = %q\n", name, passwords[name])
	}
	return masterConfig(m, fmt.Sprintf(`
  admin_password_wo   = %q
  password_wo_version = %d
  lock_users = {
%s  }
  lock_user_passwords_wo = {
%s  }
`, woAdmin1, version, users.String(), wo.String()))
}

// checkTenantAuth: AUTH as each tenant with its password succeeds; with each password in
// refused (tenant -> password) it fails with WRONGPASS.
func (m *testMaster) checkTenantAuth(accepted, refused map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		c := redis.NewClient(&redis.Options{Addr: m.addr, MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second,
			DisableIdentity: true, TLSConfig: m.tls})
		defer c.Close()
		ctx := context.Background()
		for _, name := range sortedKeys(accepted) {
			if err := c.Do(ctx, "AUTH", name, accepted[name]).Err(); err != nil {
				return fmt.Errorf("AUTH %s with its write-only password: %v", name, err)
			}
		}
		for _, name := range sortedKeys(refused) {
			err := c.Do(ctx, "AUTH", name, refused[name]).Err()
			if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
				return fmt.Errorf("AUTH %s with a password it should not take: %v, want WRONGPASS", name, err)
			}
		}
		return nil
	}
}

// TestAccMaster_writeOnlyLockUsers: the tenants' passwords given in lock_user_passwords_wo
// never reach the state (nor its backup, after destroy either); refresh works from the data
// dir; a tenant added later gets its password at once while the others keep theirs until
// password_wo_version changes, which rotates them in place.
func TestAccMaster_writeOnlyLockUsers(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	work := t.TempDir()
	all := []func() string{literal(woAdmin1), literal(woBilling1), literal(woBilling2), literal(woAds1), literal(woOps1)}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		TerraformVersionChecks:   writeOnlyTerraform,
		WorkingDir:               work,
		CheckDestroy:             resource.ComposeAggregateTestCheckFunc(m.checkGone(false), checkNotInState(work, all...)),
		Steps: []resource.TestStep{
			{
				Config: writeOnlyLockUsersConfig(m, map[string]string{"billing": woBilling1, "ads": woAds1}, 1),
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "lock_users.billing.key_prefix", "billing:"),
					resource.TestCheckNoResourceAttr(testAddr, "lock_users.billing.password"),
					resource.TestCheckNoResourceAttr(testAddr, "lock_user_passwords_wo.%"),
					m.checkTenantAuth(map[string]string{"billing": woBilling1, "ads": woAds1}, map[string]string{"billing": woAds1}),
					checkNotInState(work, all...),
					m.checkSecretFileModes(woAdmin1, woBilling1, woAds1),
				),
			},
			{
				RefreshState: true,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					checkNotInState(work, all...),
				),
			},
			{
				// A new tenant gets its password; billing's new value waits for a new version.
				Config: writeOnlyLockUsersConfig(m, map[string]string{"billing": woBilling2, "ads": woAds1, "ops": woOps1}, 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrPtr(testAddr, "pid", &m.firstPID),
					m.checkTenantAuth(map[string]string{"billing": woBilling1, "ads": woAds1, "ops": woOps1},
						map[string]string{"billing": woBilling2}),
					checkNotInState(work, all...),
				),
			},
			{
				// A new version rotates billing in place.
				Config: writeOnlyLockUsersConfig(m, map[string]string{"billing": woBilling2, "ads": woAds1, "ops": woOps1}, 2),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttrPtr(testAddr, "pid", &m.firstPID),
					m.checkTenantAuth(map[string]string{"billing": woBilling2, "ads": woAds1, "ops": woOps1},
						map[string]string{"billing": woBilling1}),
					checkNotInState(work, all...),
				),
			},
		},
	})
}

// TestAccMaster_plainLockUsersInState is the negative control: tenants' passwords given in
// lock_users are in the state, and the same search finds them.
func TestAccMaster_plainLockUsersInState(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	work := t.TempDir()
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		TerraformVersionChecks:   writeOnlyTerraform,
		WorkingDir:               work,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{{
			Config: masterConfig(m, fmt.Sprintf("  lock_users = { billing = { key_prefix = \"billing:\", password = %q } }\n", woBilling1)),
			Check: resource.ComposeAggregateTestCheckFunc(
				m.capture(),
				m.checkTenantAuth(map[string]string{"billing": woBilling1}, nil),
				func(*terraform.State) error {
					found, err := secretsInState(work, woBilling1)
					if err != nil || len(found) != 1 {
						return fmt.Errorf("the search finds %v (err %v) in a state that holds the tenant's password", found, err)
					}
					return nil
				},
			),
		}},
	})
}

// TestAccMaster_writeOnlyLockUsersRefusals: plan-time errors naming the field and the fix.
func TestAccMaster_writeOnlyLockUsersRefusals(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	step := func(extra, want string) resource.TestStep {
		return resource.TestStep{Config: masterConfig(m, extra), PlanOnly: true,
			ExpectError: regexp.MustCompile(strings.ReplaceAll(want, " ", `\s+`))}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		TerraformVersionChecks:   writeOnlyTerraform,
		Steps: []resource.TestStep{
			step(`lock_users = { billing = { key_prefix = "billing:" } }`, `lock_users\["billing"\] has no password`),
			step(fmt.Sprintf(`lock_users = { billing = { key_prefix = "billing:", password = %q } }
lock_user_passwords_wo = { billing = %q }
password_wo_version = 1`, woBilling1, woBilling2), `lock_users\["billing"\].password and lock_user_passwords_wo\["billing"\] are both set`),
			step(fmt.Sprintf(`lock_users = { billing = { key_prefix = "billing:" } }
lock_user_passwords_wo = { billing = %q, ops = %q }
password_wo_version = 1`, woBilling1, woOps1), `lock_user_passwords_wo\["ops"\] is set but lock_users has no "ops"`),
			step(fmt.Sprintf(`lock_users = { billing = { key_prefix = "billing:" } }
lock_user_passwords_wo = { billing = %q }`, woBilling1), `need password_wo_version`),
		},
	})
}
