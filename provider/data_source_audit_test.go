package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// auditConfig is a redlock_audit block against the harness cluster; extra goes inside it.
func auditConfig(c *redistest.Cluster, extra string) string {
	return fmt.Sprintf(`
data "redlock_audit" "cluster" {
  endpoints     = [%s]
  password      = %q
  lock_username = %q
  lock_password = %q
  max_lock_ttl  = "10s"
  restart_delay = "11s"
%s
}
`, `"`+strings.Join(c.Addrs(), `", "`)+`"`, redistest.AdminPassword, redistest.LockUser, redistest.LockPassword, extra)
}

func TestAccAuditDataSource(t *testing.T) {
	t.Parallel()
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	broken := c.Masters[1]
	const ds = "data.redlock_audit.cluster"
	breakFsync := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := broken.Admin().ConfigSet(ctx, "appendfsync", "everysec").Err(); err != nil {
			t.Fatalf("CONFIG SET appendfsync everysec: %v", err)
		}
	}
	problem := regexp.MustCompile(regexp.QuoteMeta(broken.Addr) + `.*appendfsync everysec`)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: auditConfig(c, ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(ds, "safe", "true"),
					resource.TestCheckResourceAttr(ds, "quorum", "2"),
					resource.TestCheckResourceAttr(ds, "reachable", "3"),
					resource.TestCheckResourceAttr(ds, "problems.#", "0"),
					resource.TestCheckResourceAttr(ds, "masters.#", "3"),
					resource.TestCheckResourceAttr(ds, "masters.1.endpoint", broken.Addr),
					resource.TestCheckResourceAttr(ds, "masters.1.reachable", "true"),
					resource.TestCheckResourceAttr(ds, "masters.1.role", "master"),
					resource.TestCheckResourceAttr(ds, "masters.1.connected_replicas", "0"),
					resource.TestCheckResourceAttr(ds, "masters.1.aof_enabled", "true"),
					resource.TestCheckResourceAttr(ds, "masters.1.appendfsync", "always"),
					resource.TestCheckResourceAttr(ds, "masters.1.no_appendfsync_on_rewrite", "no"),
					resource.TestCheckResourceAttr(ds, "masters.1.maxmemory_policy", "noeviction"),
					resource.TestCheckResourceAttr(ds, "masters.1.aof_last_write_status", "ok"),
					resource.TestMatchResourceAttr(ds, "masters.1.run_id", regexp.MustCompile(`^[0-9a-f]{40}$`)),
					resource.TestCheckResourceAttr(ds, "masters.1.busy_reply_threshold_ms", "100"),
					resource.TestCheckResourceAttr(ds, "masters.1.function_library", "current"),
					resource.TestCheckResourceAttr(ds, "masters.1.function_library_version", redlock.FunctionLibrary().Version),
					resource.TestCheckResourceAttr(ds, "warnings.#", "0"),
					resource.TestCheckResourceAttr(ds, "masters.1.published_restart_delay_ms", "11000"),
					resource.TestCheckResourceAttr(ds, "masters.1.anonymous", "refused"),
					resource.TestCheckResourceAttr(ds, "independence", "one machine: for trying the kit, not independent"),
				),
			},
			{
				// A setting changed behind Terraform's back: the read still succeeds, and
				// says what is wrong where.
				PreConfig: breakFsync,
				Config:    auditConfig(c, ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(ds, "safe", "false"),
					resource.TestCheckResourceAttr(ds, "problems.#", "1"),
					resource.TestMatchResourceAttr(ds, "problems.0", problem),
					resource.TestCheckResourceAttr(ds, "masters.1.appendfsync", "everysec"),
					resource.TestCheckResourceAttr(ds, "masters.0.appendfsync", "always"),
				),
			},
			{
				// The way modules use it: a postcondition fails the run with the problems.
				Config: auditConfig(c, `
  lifecycle {
    postcondition {
      condition     = self.safe
      error_message = "Redlock deployment is unsafe: ${join(" ", self.problems)}"
    }
  }`),
				ExpectError: regexp.MustCompile(`(?s)Redlock deployment is unsafe:.*` + regexp.QuoteMeta(broken.Addr) + `.*appendfsync`),
			},
		},
	})
}

// A crashed master waiting out its restart delay is a minority down: the deployment stays
// safe (a module's postcondition must not block every plan meanwhile) and the warning
// names it.
func TestAccAuditDataSourceMinorityDown(t *testing.T) {
	t.Parallel()
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	down := c.Masters[2]
	const ds = "data.redlock_audit.cluster"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{{
			PreConfig: func() {
				if err := down.Kill(); err != nil {
					t.Fatal(err)
				}
			},
			Config: auditConfig(c, `
  lifecycle {
    postcondition {
      condition     = self.safe
      error_message = "unsafe: ${join(" ", self.problems)}"
    }
  }`),
			Check: resource.ComposeAggregateTestCheckFunc(
				resource.TestCheckResourceAttr(ds, "safe", "true"),
				resource.TestCheckResourceAttr(ds, "reachable", "2"),
				resource.TestCheckResourceAttr(ds, "problems.#", "0"),
				resource.TestCheckResourceAttr(ds, "warnings.#", "1"),
				resource.TestMatchResourceAttr(ds, "warnings.0", regexp.MustCompile(regexp.QuoteMeta(down.Addr)+`.*unreachable`)),
			),
		}},
	})
}

func TestAccAuditDataSourceBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		config string
		want   string
	}{
		{"max_lock_ttl not a duration", `endpoints = ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]
  max_lock_ttl = "ten seconds"`, `(?s)Invalid Time Duration String Value.*max_lock_ttl = "ten seconds"`},
		{"max_lock_ttl zero", `endpoints = ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]
  max_lock_ttl = "0s"`, `(?s)max_lock_ttl.*greater than zero`},
		{"restart_delay not a duration", `endpoints = ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"]
  max_lock_ttl = "10s"
  restart_delay = "soon"`, `(?s)Invalid Time Duration String Value.*restart_delay = "soon"`},
		{"endpoint without port", `endpoints = ["127.0.0.1"]
  max_lock_ttl = "10s"`, `(?s)Invalid endpoint.*not host:port`},
		{"no endpoints", `endpoints = []
  max_lock_ttl = "10s"`, `(?s)endpoints.*at least 1`},
		{"max_lock_ttl missing", `endpoints = ["127.0.0.1:1"]`, `(?s)max_lock_ttl.*required`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviderFactories,
				Steps: []resource.TestStep{{
					Config:      fmt.Sprintf("data \"redlock_audit\" \"bad\" {\n  %s\n}\n", tc.config),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
		})
	}
}

// TestAccAuditDataSourceCatalogue runs the validation catalogue of unsafe deployments
// against the data source: every case leaves safe = false, and the clean deployment is
// safe (the negative control). lock_username is not set: the users' checks do not need it.
// Cases that validate applies after its first audit are applied before the read here.
func TestAccAuditDataSourceCatalogue(t *testing.T) {
	t.Parallel()
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	spare := redistest.StartKit(t, redistest.Options{Masters: 1})
	cfg := &agentconfig.Config{Endpoints: c.Addrs(), Username: redistest.LockUser, Password: redistest.LockPassword,
		AdminUsername: "default", AdminPassword: redistest.AdminPassword,
		MaxLockTTL:   agentconfig.Duration{Duration: 10 * time.Second},
		RestartDelay: agentconfig.Duration{Duration: redistest.KitRestartDelay}}
	const ds = "data.redlock_audit.cluster"
	read := func(t *testing.T, cfg *agentconfig.Config, safe string) {
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProviderFactories,
			Steps: []resource.TestStep{{
				Config: fmt.Sprintf(`
data "redlock_audit" "cluster" {
  endpoints     = [%s]
  username      = %q
  password      = %q
  max_lock_ttl  = %q
  restart_delay = %q
}
`, `"`+strings.Join(cfg.Endpoints, `", "`)+`"`, cfg.AdminUsername, cfg.AdminPassword, cfg.MaxLockTTL.String(), cfg.RestartDelay.String()),
				Check: resource.TestCheckResourceAttr(ds, "safe", safe),
			}},
		})
	}
	t.Run("clean deployment (negative control)", func(t *testing.T) { read(t, cfg, "true") })
	for _, uc := range validation.UnsafeCatalogue() {
		t.Run(uc.Name, func(t *testing.T) {
			if uc.NeedsTwoAudits {
				t.Skip("made and undone during a run: only validate, which audits twice, can see it")
			}
			env, err := validation.NewCaseEnv(cfg, spare.Masters[0].Addr, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer env.Close()
			undo, err := uc.Apply(t.Context(), env)
			if undo != nil {
				defer func() {
					if err := undo(context.WithoutCancel(t.Context())); err != nil {
						t.Errorf("undo: %v", err)
					}
				}()
			}
			if err != nil {
				t.Fatal(err)
			}
			read(t, env.Config, "false")
		})
	}
}
