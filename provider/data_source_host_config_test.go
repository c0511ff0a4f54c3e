package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

const hostConfigPasswords = `
  admin_password = "admin-password-0123456789"
  lock_password  = "lock-password-0123456789"
`

func TestAccHostConfigDataSource(t *testing.T) {
	t.Parallel()
	const ds = "data.redlock_host_config.m"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: `data "redlock_host_config" "m" {
  name         = "m1"
  address      = "10.20.0.11"
  max_lock_ttl = "1m"
  server       = "valkey-server"
  hooks = { on_crash = ["/usr/bin/logger", "redlock master down"] }
` + hostConfigPasswords + `}`,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(ds, "endpoint", "10.20.0.11:6379"),
					resource.TestCheckResourceAttr(ds, "max_lock_ttl", "1m"),
					resource.TestCheckResourceAttr(ds, "clock_drift_margin", "1s"),
					resource.TestCheckResourceAttr(ds, "restart_delay", "1m1s"),
					resource.TestCheckResourceAttr(ds, "restart_delay_ms", "61000"),
					resource.TestCheckResourceAttr(ds, "max_lock_ttl_ms", "60000"),
					resource.TestCheckResourceAttr(ds, "unit", "valkey-server.service"),
					resource.TestCheckResourceAttr(ds, "data_dir", "/var/lib/valkey"),
					resource.TestCheckResourceAttr(ds, "lock_user", "redlock"),
					resource.TestCheckResourceAttr(ds, "commands.0.1", "setup"),
					resource.TestCheckResourceAttr(ds, "file_permissions./etc/redlock/users.acl", "0600"),
					resource.TestCheckNoResourceAttr(ds, "file_permissions./etc/redlock/admin-password"),
					resource.TestMatchResourceAttr(ds, "user_data", regexp.MustCompile(`^#cloud-config\n(.|\n)*packages:\n\s+- valkey-server`)),
					resource.TestMatchResourceAttr(ds, "files./etc/redlock/valkey-server.conf", regexp.MustCompile(`appendfsync always\n`)),
					resource.TestMatchResourceAttr(ds, "files./etc/systemd/system/valkey-server.service.d/redlock.conf",
						regexp.MustCompile(`ExecStartPre=\+/usr/local/lib/redlock/redlock-master gate`)),
					resource.TestMatchResourceAttr(ds, "files./etc/redlock/master.conf",
						regexp.MustCompile(`hook_on_crash\(\) \{ '/usr/bin/logger' 'redlock master down'; \}`)),
					resource.TestCheckResourceAttr(ds, "monitor_user", "redlock-monitor"),
					resource.TestCheckNoResourceAttr(ds, "files./etc/redlock/redis-exporter.env"),
				),
			},
			{
				// The exporters log in as the monitoring user, from a root-only file.
				Config: `data "redlock_host_config" "m" {
  name             = "m1"
  address          = "10.20.0.11"
  monitor_password = "monitor-password-0123456789"
  exporters        = true
` + hostConfigPasswords + `}`,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(ds, "monitor_user", "redlock-monitor"),
					resource.TestCheckResourceAttr(ds, "file_permissions./etc/redlock/redis-exporter.env", "0600"),
					// The exporter's password is the host's own (setup adds it): none rendered.
					resource.TestMatchResourceAttr(ds, "files./etc/redlock/redis-exporter.env",
						regexp.MustCompile(`^REDIS_ADDR="redis://10.20.0.11:6379"\nREDIS_USER="redlock-monitor"\nARGS="[^"]*"\n$`)),
					// On hosts every user is in the ACL file, as a password hash
					// (sha256 of monitor-password-0123456789); redis.conf names none.
					resource.TestMatchResourceAttr(ds, "files./etc/redlock/users.acl",
						regexp.MustCompile(`user redlock-monitor reset on #898b8af1057c83d6cdcf6b5f518ff05b6e2ac6c4962d05ce80873a35092ff0ee resetkeys resetchannels -@all \+ping \+info `)),
					resource.TestCheckResourceAttrWith(ds, "files./etc/redlock/redis-server.conf", func(conf string) error {
						if strings.Contains(conf, "monitor-password-0123456789") || strings.Contains(conf, "user redlock-monitor") {
							return fmt.Errorf("redis-server.conf names the monitoring user or holds its password:\n%s", conf)
						}
						return nil
					}),
					resource.TestMatchResourceAttr(ds, "user_data", regexp.MustCompile(`- prometheus-redis-exporter\n\s+- prometheus-node-exporter\n`)),
				),
			},
			{
				Config: `data "redlock_host_config" "m" {
  name      = "m1"
  address   = "10.20.0.11"
  exporters = true
` + hostConfigPasswords + `}`,
				ExpectError: regexp.MustCompile(`monitor_password`),
			},
		},
	})
}

func TestAccHostConfigDataSource_refusedAtPlan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, body, want string }{
		{"restart delay shorter than the TTL", `max_lock_ttl = "30s"` + "\n" + `restart_delay = "10s"`, `restart_delay = 10s is less than`},
		{"address not an IP", `address = "db1.example.com"`, `address = "db1.example.com" is not an IP address`},
		{"unknown server", `server = "keydb"`, `value must be one of`},
		{"admin and lock passwords equal", `lock_password_override = true`, `lock_password must differ`},
		{"drift margin below the minimum", `max_lock_ttl = "100s"` + "\n" + `clock_drift_margin = "500ms"`, `clock_drift_margin = 500ms is less than`},
		{"seed_fences without lock_users", `seed_fences = true`, `seed_fences = true renders the lock users off`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			passwords := hostConfigPasswords
			if strings.Contains(body, "lock_password_override") {
				body = ""
				passwords = "\n  admin_password = \"same-password-0123456789\"\n  lock_password = \"same-password-0123456789\"\n"
			}
			if !strings.Contains(body, "address") {
				body += "\naddress = \"10.20.0.11\""
			}
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviderFactories,
				Steps: []resource.TestStep{{
					Config:      "data \"redlock_host_config\" \"m\" {\n  name = \"m1\"\n" + body + passwords + "}",
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(regexp.QuoteMeta(tc.want)),
				}},
			})
		})
	}
}
