package provider

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/redis/go-redis/v9"
)

// expectMonitorUser checks the live master: password logs in as the monitoring user, which
// reads INFO and may not read a key; a password in refused does not log in at all.
func (m *testMaster) expectMonitorUser(t *testing.T, password string, refused ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := ctxT(t)
		as := func(pw string) *redis.Client {
			return redis.NewClient(&redis.Options{Addr: m.addr, Username: "redlock-monitor", Password: pw, MaxRetries: -1,
				DialTimeout: time.Second, ReadTimeout: time.Second, DisableIdentity: true, TLSConfig: m.tls})
		}
		c := as(password)
		defer c.Close()
		if err := c.Info(ctx, "persistence").Err(); err != nil {
			return fmt.Errorf("monitoring user: INFO: %v", err)
		}
		if err := c.Get(ctx, "any-key").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			return fmt.Errorf("monitoring user: GET: %v, want NOPERM", err)
		}
		for _, pw := range refused {
			old := as(pw)
			err := old.Ping(ctx).Err()
			old.Close()
			if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
				return fmt.Errorf("monitoring user with a password no longer set: %v, want WRONGPASS", err)
			}
		}
		return nil
	}
}

// TestAccMaster_monitorUser: monitor_password adds the monitoring user; changing it changes
// the live user in place (the old password stops working, the master is not restarted).
func TestAccMaster_monitorUser(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	const first, second = "monitor-password-0123456789", "monitor-password-9876543210"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{
			{
				Config: masterConfig(m, fmt.Sprintf("  monitor_password = %q\n", first)),
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "monitor_user", "redlock-monitor"),
					m.expectMonitorUser(t, first),
				),
			},
			{
				Config: masterConfig(m, fmt.Sprintf("  monitor_password = %q\n", second)),
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttrPtr(testAddr, "pid", &m.firstPID),
					m.expectMonitorUser(t, second, first),
				),
			},
		},
	})
}
