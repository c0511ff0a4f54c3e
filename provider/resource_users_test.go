package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/fenceseed"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

const (
	usersResourceName = "redlock_users.tenants"
	billingPassword1  = "billing-first-password-0123456789"
	billingPassword2  = "billing-second-password-0123456789"
	ordersPassword    = "orders-password-0123456789abcdef"
)

// usersConfig is a redlock_users over the harness cluster with the admin password in the
// state; users is the HCL of the users map's entries.
func usersConfig(c *redistest.Cluster, users string) string {
	return fmt.Sprintf(`
resource "redlock_users" "tenants" {
  endpoints      = [%s]
  admin_password = %q
  users = {
%s
  }
}
`, `"`+strings.Join(c.Addrs(), `", "`)+`"`, redistest.AdminPassword, users)
}

func billingUser(password string) string {
	return fmt.Sprintf(`    billing = { key_prefix = "billing:", password_sha256 = sha256(%q) }`, password)
}

func ordersUser() string {
	return fmt.Sprintf(`    orders = { key_prefix = "orders:", password_sha256 = sha256(%q) }`, ordersPassword)
}

func usersCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// lockAs logs in on m as user and sets a key: nil when the user may lock key.
func lockAs(t *testing.T, m *redistest.Master, user, password, key string) error {
	c := m.ClientAs(user, password)
	defer c.Close()
	return c.Set(usersCtx(t), key, "v", time.Second).Err()
}

// canLockEverywhere checks that user/password locks key on every master (want true) or on
// none (want false).
func canLockEverywhere(t *testing.T, c *redistest.Cluster, user, password, key string, want bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, m := range c.Masters {
			err := lockAs(t, m, user, password, key)
			if want && err != nil {
				return fmt.Errorf("%s on %s: %v", user, m.Addr, err)
			}
			if !want && err == nil {
				return fmt.Errorf("%s with password %.14s... locks %s on %s", user, password, key, m.Addr)
			}
		}
		return nil
	}
}

func adminDo(t *testing.T, m *redistest.Master, args ...any) {
	t.Helper()
	if err := m.Admin().Do(usersCtx(t), args...).Err(); err != nil {
		t.Fatalf("%v on %s: %v", args, m.Addr, err)
	}
}

func usersGoneEverywhere(t *testing.T, c *redistest.Cluster, names ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, m := range c.Masters {
			for _, n := range names {
				if err := m.Admin().Do(usersCtx(t), "ACL", "GETUSER", n).Err(); err != redis.Nil {
					return fmt.Errorf("user %s still on %s after destroy (%v)", n, m.Addr, err)
				}
			}
		}
		return nil
	}
}

// TestAccUsers_addRotateRemove: a tenant added, its password rotated with an overlap (a
// client logged in with the old password keeps working, and new logins with either work),
// the old password retired by the next apply, then a tenant removed; every master follows,
// and a restart keeps what the last apply set.
func TestAccUsers_addRotateRemove(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{Masters: 3, ACLFile: true})
	var holder *redis.Client
	t.Cleanup(func() {
		if holder != nil {
			holder.Close()
		}
	})
	holderWorks := func(*terraform.State) error {
		return holder.PExpire(usersCtx(t), "billing:held", time.Minute).Err()
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             usersGoneEverywhere(t, c, "billing", "orders"),
		Steps: []resource.TestStep{
			{
				Config: usersConfig(c, billingUser(billingPassword1)),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(usersResourceName, "users.billing.password_sha256", redisconf.HashPassword(billingPassword1)),
					resource.TestCheckResourceAttr(usersResourceName, "users.billing.password_hashes.#", "1"),
					resource.TestCheckResourceAttr(usersResourceName, "users.billing.acl.%", "3"),
					canLockEverywhere(t, c, "billing", billingPassword1, "billing:lock", true),
					canLockEverywhere(t, c, "billing", billingPassword1, "orders:lock", false),
				),
			},
			{
				// Rotation: a holder logged in with the old password before the apply.
				PreConfig: func() {
					holder = c.Masters[0].ClientAs("billing", billingPassword1)
					if err := holder.Set(usersCtx(t), "billing:held", "v", time.Minute).Err(); err != nil {
						t.Fatal(err)
					}
				},
				Config: usersConfig(c, billingUser(billingPassword2)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(usersResourceName, plancheck.ResourceActionUpdate),
				}},
				ExpectNonEmptyPlan: true, // the next apply retires the old password
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(usersResourceName, "users.billing.password_hashes.#", "2"),
					resource.TestCheckResourceAttr(usersResourceName, "users.billing.password_hashes.0", redisconf.HashPassword(billingPassword2)),
					resource.TestCheckResourceAttr(usersResourceName, "users.billing.password_hashes.1", redisconf.HashPassword(billingPassword1)),
					canLockEverywhere(t, c, "billing", billingPassword1, "billing:lock", true),
					canLockEverywhere(t, c, "billing", billingPassword2, "billing:lock", true),
					holderWorks,
				),
			},
			{
				// The next apply retires the old password.
				Config: usersConfig(c, billingUser(billingPassword2)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(usersResourceName, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(usersResourceName, "users.billing.password_hashes.#", "1"),
					canLockEverywhere(t, c, "billing", billingPassword1, "billing:lock", false),
					canLockEverywhere(t, c, "billing", billingPassword2, "billing:lock", true),
					holderWorks,
				),
			},
			{
				// Nothing left to do: the plan is empty.
				Config: usersConfig(c, billingUser(billingPassword2)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
			{
				// Add orders, remove billing.
				Config: usersConfig(c, ordersUser()),
				Check: resource.ComposeAggregateTestCheckFunc(
					canLockEverywhere(t, c, "orders", ordersPassword, "orders:lock", true),
					canLockEverywhere(t, c, "billing", billingPassword2, "billing:lock", false),
				),
			},
			{
				// A crash and restart of every master keeps the users (the ACL file).
				PreConfig: func() {
					for _, m := range c.Masters {
						if err := m.Kill(); err != nil {
							t.Fatal(err)
						}
						if err := m.Restart(); err != nil {
							t.Fatal(err)
						}
					}
				},
				Config: usersConfig(c, ordersUser()),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				Check: canLockEverywhere(t, c, "orders", ordersPassword, "orders:lock", true),
			},
		},
	})
}

// TestAccUsers_drift: a user changed by hand on one master and deleted on another shows in
// refresh and is planned back; the plan is empty again afterwards.
func TestAccUsers_drift(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{Masters: 3, ACLFile: true})
	config := usersConfig(c, billingUser(billingPassword1))
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             usersGoneEverywhere(t, c, "billing"),
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig: func() {
					adminDo(t, c.Masters[1], "ACL", "SETUSER", "billing", "+eval", "~*")
					adminDo(t, c.Masters[2], "ACL", "DELUSER", "billing")
				},
				RefreshState:       true,
				ExpectNonEmptyPlan: true, // the drift is planned back
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestMatchResourceAttr(usersResourceName, "users.billing.acl."+c.Masters[1].Addr, regexp.MustCompile(`\+eval`)),
					resource.TestCheckResourceAttr(usersResourceName, "users.billing.acl."+c.Masters[2].Addr, aclAbsent),
				),
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(usersResourceName, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					canLockEverywhere(t, c, "billing", billingPassword1, "billing:lock", true),
					canLockEverywhere(t, c, "billing", billingPassword1, "other:lock", false),
					func(*terraform.State) error {
						if err := c.Masters[1].ClientAs("billing", billingPassword1).Eval(usersCtx(t), "return 1", nil).Err(); err == nil {
							return fmt.Errorf("billing can still EVAL on %s after the apply", c.Masters[1].Addr)
						}
						return nil
					},
				),
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
		},
	})
}

// TestAccUsers_downMaster: an apply with a master down fails naming it and changes the
// others; the next apply, with it back, converges it. A rotation that failed on one master
// keeps the overlap for the apply that repeats it.
func TestAccUsers_downMaster(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{Masters: 3, ACLFile: true})
	down := c.Masters[2]
	kill := func() {
		if err := down.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	restart := func() {
		if err := down.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	named := regexp.MustCompile(`Master ` + regexp.QuoteMeta(down.Addr) + ` was not changed`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             usersGoneEverywhere(t, c, "billing"),
		Steps: []resource.TestStep{
			{PreConfig: kill, Config: usersConfig(c, billingUser(billingPassword1)), ExpectError: named},
			{
				PreConfig: restart,
				Config:    usersConfig(c, billingUser(billingPassword1)),
				Check:     canLockEverywhere(t, c, "billing", billingPassword1, "billing:lock", true),
			},
			{PreConfig: kill, Config: usersConfig(c, billingUser(billingPassword2)), ExpectError: named},
			{
				PreConfig:          restart,
				Config:             usersConfig(c, billingUser(billingPassword2)),
				ExpectNonEmptyPlan: true, // the next apply retires the old password
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(usersResourceName, "users.billing.password_hashes.#", "2"),
					canLockEverywhere(t, c, "billing", billingPassword1, "billing:lock", true),
					canLockEverywhere(t, c, "billing", billingPassword2, "billing:lock", true),
				),
			},
		},
	})
}

// TestAccUsers_writeOnly: admin and user passwords given write-only never reach the
// state (only the user's hash does); the plan, which reads the masters itself, finds drift.
func TestAccUsers_writeOnly(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{Masters: 3, ACLFile: true})
	config := func(users string) string {
		return fmt.Sprintf(`
resource "redlock_users" "tenants" {
  endpoints         = [%s]
  admin_password_wo = %q
  users = {
%s
  }
}
`, `"`+strings.Join(c.Addrs(), `", "`)+`"`, redistest.AdminPassword, users)
	}
	billing := fmt.Sprintf(`    billing = { key_prefix = "billing:", password_wo = %q }`, billingPassword1)
	noSecret := func(s *terraform.State) error {
		for _, secret := range []string{redistest.AdminPassword, billingPassword1} {
			if strings.Contains(s.String(), secret) {
				return fmt.Errorf("the state holds a write-only password:\n%s", s.String())
			}
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_11_0)},
		CheckDestroy:             usersGoneEverywhere(t, c, "billing"),
		Steps: []resource.TestStep{
			{
				Config: config(billing),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(usersResourceName, "users.billing.password_sha256", redisconf.HashPassword(billingPassword1)),
					resource.TestCheckNoResourceAttr(usersResourceName, "users.billing.password_wo"),
					canLockEverywhere(t, c, "billing", billingPassword1, "billing:lock", true),
					noSecret,
				),
			},
			{
				Config: config(billing),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
			{
				PreConfig: func() { adminDo(t, c.Masters[0], "ACL", "SETUSER", "billing", "+eval") },
				Config:    config(billing),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(usersResourceName, plancheck.ResourceActionUpdate),
				}},
				Check: func(*terraform.State) error {
					if err := c.Masters[0].ClientAs("billing", billingPassword1).Eval(usersCtx(t), "return 1", nil).Err(); err == nil {
						return fmt.Errorf("billing can still EVAL on %s after the apply", c.Masters[0].Addr)
					}
					return nil
				},
			},
			{
				// Destroy has no write-only values: users = {} removes them first.
				Config: config(""),
				Check:  canLockEverywhere(t, c, "billing", billingPassword1, "billing:lock", false),
			},
		},
	})
}

// TestAccUsers_tls: the admin connection verifies the masters against the deployment's
// CA; plain text to a TLS-only master fails naming it (the control).
func TestAccUsers_tls(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{Masters: 3, ACLFile: true, TLS: true})
	config := func(tls string) string {
		return strings.Replace(usersConfig(c, billingUser(billingPassword1)), "  users = {", tls+"\n  users = {", 1)
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:      config(""),
				ExpectError: regexp.MustCompile(`Master ` + regexp.QuoteMeta(c.Masters[0].Addr) + ` was not changed`),
			},
			{
				Config: config(fmt.Sprintf("  tls = true\n  ca_cert_pem = %q", c.CACertPEM)),
				Check: func(*terraform.State) error {
					for _, m := range c.Masters {
						cl := redis.NewClient(&redis.Options{Addr: m.Addr, Username: "billing", Password: billingPassword1,
							TLSConfig: m.TLSConfig, DisableIdentity: true, MaxRetries: -1})
						err := cl.Set(usersCtx(t), "billing:lock", "v", time.Second).Err()
						cl.Close()
						if err != nil {
							return fmt.Errorf("billing over TLS on %s: %v", m.Addr, err)
						}
					}
					return nil
				},
			},
		},
	})
}

// TestAccUsers_allowEval: allow_eval gives the user EVAL inside its prefix (what redsync
// and other Redlock clients release with), in place; turning it off takes it back.
func TestAccUsers_allowEval(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{Masters: 3, ACLFile: true})
	withEval := fmt.Sprintf(`    billing = { key_prefix = "billing:", allow_eval = true, password_sha256 = sha256(%q) }`, billingPassword1)
	canEval := func(want bool) resource.TestCheckFunc {
		return func(*terraform.State) error {
			for _, m := range c.Masters {
				cl := m.ClientAs("billing", billingPassword1)
				err := cl.Eval(usersCtx(t), "return redis.call('set', KEYS[1], 'v')", []string{"billing:x"}).Err()
				outside := cl.Eval(usersCtx(t), "return redis.call('get', KEYS[1])", []string{"orders:x"}).Err()
				cl.Close()
				if (err == nil) != want {
					return fmt.Errorf("EVAL by billing on %s: %v, want allowed = %v", m.Addr, err, want)
				}
				if outside == nil {
					return fmt.Errorf("billing's script reached orders:x on %s", m.Addr)
				}
			}
			return nil
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{
			{Config: usersConfig(c, withEval), Check: canEval(true)},
			{
				Config: usersConfig(c, billingUser(billingPassword1)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(usersResourceName, plancheck.ResourceActionUpdate),
				}},
				Check: canEval(false),
			},
		},
	})
}

// TestAccUsers_adminRotation: a new admin_password is applied with an overlap: the apply
// logs in with the previous one, both are then accepted, the next apply retires the
// previous; rotating back restores the harness's password for the destroy.
func TestAccUsers_adminRotation(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{Masters: 3, ACLFile: true})
	const next = "next-admin-password-0123456789"
	config := func(admin string) string {
		return strings.Replace(usersConfig(c, billingUser(billingPassword1)), fmt.Sprintf("%q", redistest.AdminPassword), fmt.Sprintf("%q", admin), 1)
	}
	adminLogsIn := func(password string, want bool) resource.TestCheckFunc {
		return func(*terraform.State) error {
			for _, m := range c.Masters {
				cl := m.ClientAs("default", password)
				err := cl.ConfigGet(usersCtx(t), "appendfsync").Err()
				cl.Close()
				if (err == nil) != want {
					return fmt.Errorf("admin password %.10s... on %s: %v, want accepted = %v", password, m.Addr, err, want)
				}
			}
			return nil
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             usersGoneEverywhere(t, c, "billing"),
		Steps: []resource.TestStep{
			{
				Config: config(redistest.AdminPassword),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(usersResourceName, "admin_password_hashes.#", "1"),
					adminLogsIn(next, false),
				),
			},
			{
				Config:             config(next),
				ExpectNonEmptyPlan: true, // the next apply retires the previous admin password
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(usersResourceName, "admin_password_hashes.#", "2"),
					adminLogsIn(next, true), adminLogsIn(redistest.AdminPassword, true),
				),
			},
			{
				Config: config(next),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(usersResourceName, "admin_password_hashes.#", "1"),
					adminLogsIn(next, true), adminLogsIn(redistest.AdminPassword, false),
					canLockEverywhere(t, c, "billing", billingPassword1, "billing:lock", true),
				),
			},
			{Config: config(redistest.AdminPassword), ExpectNonEmptyPlan: true},
			{Config: config(redistest.AdminPassword), Check: adminLogsIn(next, false)},
		},
	})
}

// TestAccUsers_sharedPasswordRefused: a user with another user's or the admin's password is
// refused at plan, naming it.
func TestAccUsers_sharedPasswordRefused(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{Masters: 1, ACLFile: true})
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: usersConfig(c, billingUser(billingPassword1)+"\n"+
					fmt.Sprintf(`    orders = { key_prefix = "orders:", password_sha256 = sha256(%q) }`, billingPassword1)),
				ExpectError: regexp.MustCompile(`users\["orders"\] has the same password as users\["billing"\]`),
			},
			{
				Config:      usersConfig(c, fmt.Sprintf(`    billing = { key_prefix = "billing:", password_sha256 = sha256(%q) }`, redistest.AdminPassword)),
				ExpectError: regexp.MustCompile(`users\["billing"\] has the same password as the admin`),
			},
		},
	})
}

// TestAccUsers_seedsReplacedMaster: a master that came back empty (lock users off, marked
// unseeded, as a new host starts) is planned as drift; the apply seeds its fence
// registers from the other masters (largest + margin) before it turns its users on. With
// no majority of seeded masters to seed from, the apply fails naming it and leaves its
// users off.
func TestAccUsers_seedsReplacedMaster(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{Masters: 3, ACLFile: true})
	replaced, other := c.Masters[2], c.Masters[1]
	config := usersConfig(c, billingUser(billingPassword1))
	replace := func() {
		ctx := usersCtx(t)
		for _, m := range c.Masters[:2] {
			if err := m.Admin().Set(ctx, "billing:job:fence", 77, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		replaceWithEmptyMaster(t, replaced)
	}
	seeded := func(*terraform.State) error {
		ctx := usersCtx(t)
		got, err := replaced.Admin().Get(ctx, "billing:job:fence").Int64()
		if want := int64(77 + fenceseed.Margin); err != nil || got != want {
			return fmt.Errorf("register on %s = %d (%v), want %d", replaced.Addr, got, err, want)
		}
		if s, err := audit.ReadFenceSeed(ctx, replaced.Admin()); err != nil || s.State != audit.FenceSeedSeeded {
			return fmt.Errorf("record on %s: %+v (%v), want seeded", replaced.Addr, s, err)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             usersGoneEverywhere(t, c, "billing"),
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig:          replace,
				RefreshState:       true,
				ExpectNonEmptyPlan: true, // its users are off: planned back on
				Check:              resource.TestMatchResourceAttr(usersResourceName, "users.billing.acl."+replaced.Addr, regexp.MustCompile(`^`+aclUnseeded+`: off `)),
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(usersResourceName, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(seeded, canLockEverywhere(t, c, "billing", billingPassword1, "billing:lock", true)),
			},
			{
				// Replaced again while another master is down: one seeded master is no majority of the others.
				PreConfig: func() {
					replace()
					if err := other.Kill(); err != nil {
						t.Fatal(err)
					}
				},
				Config:      config,
				ExpectError: regexp.MustCompile(`Master ` + regexp.QuoteMeta(replaced.Addr) + ` was not changed(.|\n)*must be seeded(.|\n)*from 2 of the other(.|\n)*masters`),
			},
			{
				PreConfig: func() {
					if err := lockAs(t, replaced, "billing", billingPassword1, "billing:lock"); err == nil {
						t.Fatalf("billing can lock on %s, which could not be seeded", replaced.Addr)
					}
					if err := other.Restart(); err != nil {
						t.Fatal(err)
					}
				},
				Config: config,
				Check:  resource.ComposeAggregateTestCheckFunc(seeded, canLockEverywhere(t, c, "billing", billingPassword1, "billing:lock", true)),
			},
		},
	})
}

// replaceWithEmptyMaster brings m back as a new host does: no data, the lock users off in
// its ACL file, marked unseeded.
func replaceWithEmptyMaster(t *testing.T, m *redistest.Master) {
	t.Helper()
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(m.DataDir, "appendonlydir")); err != nil {
		t.Fatal(err)
	}
	rendered, err := redisconf.Config{AdminPassword: redistest.AdminPassword, LockUsersOff: true,
		LockUsers: []redisconf.LockUser{{Name: "billing", Password: billingPassword1, KeyPrefix: "billing:"}}}.RenderACL()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.DataDir, "users.acl"), []byte(rendered), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := fenceseed.MarkUnseeded(usersCtx(t), m.Admin()); err != nil {
		t.Fatal(err)
	}
}

// TestAccUsers_everyMasterReplaced: redlock_users' create seeds masters that are all
// unseeded (a new deployment). Every master replaced before the next apply (an update:
// its users were let in) is refused, naming the fix, with every user left off: seeding
// them from each other would restart the fences at 1. Replacing redlock_users (a create)
// is the way to say it is a new cluster: it seeds them.
func TestAccUsers_everyMasterReplaced(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{Masters: 3, ACLFile: true})
	config := usersConfig(c, billingUser(billingPassword1))
	allSeeded := func(*terraform.State) error {
		for _, m := range c.Masters {
			if s, err := audit.ReadFenceSeed(usersCtx(t), m.Admin()); err != nil || s.State != audit.FenceSeedSeeded {
				return fmt.Errorf("record on %s: %+v (%v), want seeded", m.Addr, s, err)
			}
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             usersGoneEverywhere(t, c, "billing"),
		Steps: []resource.TestStep{
			{
				PreConfig: func() { // new hosts: every master marked unseeded
					for _, m := range c.Masters {
						if err := fenceseed.MarkUnseeded(usersCtx(t), m.Admin()); err != nil {
							t.Fatal(err)
						}
					}
				},
				Config: config,
				Check:  resource.ComposeAggregateTestCheckFunc(allSeeded, canLockEverywhere(t, c, "billing", billingPassword1, "billing:lock", true)),
			},
			{
				PreConfig: func() {
					for _, m := range c.Masters {
						if err := m.Admin().Set(usersCtx(t), "billing:job:fence", 20, 0).Err(); err != nil {
							t.Fatal(err)
						}
					}
					for _, m := range c.Masters {
						replaceWithEmptyMaster(t, m)
					}
				},
				Config:      config,
				ExpectError: regexp.MustCompile(`every master lost its fence registers(.|\n)*-replace=`),
			},
			{
				PreConfig: func() {
					for _, m := range c.Masters {
						if err := lockAs(t, m, "billing", billingPassword1, "billing:lock"); err == nil {
							t.Fatalf("billing can lock on %s after the refusal", m.Addr)
						}
					}
				},
				Config: config,
				Taint:  []string{usersResourceName}, // terraform apply -replace: a new cluster, intended
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(usersResourceName, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(allSeeded, canLockEverywhere(t, c, "billing", billingPassword1, "billing:lock", true)),
			},
		},
	})
}
