package provider

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/redis/go-redis/v9"
)

// TestAccMaster_lockUserAllowEval: lock_users.*.allow_eval gives that user EVAL inside its
// prefix on a redlock_master and leaves the other users without it; turning it off is an
// in-place change, and a second plan is empty (the default, false, is stable).
func TestAccMaster_lockUserAllowEval(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	const billingPw, ordersPw = "billing-secret-0123456789", "orders-secret-0123456789"
	users := func(eval string) string {
		return fmt.Sprintf(`  admin_password = "admin-secret-0123456789"
  lock_users = {
    billing = { key_prefix = "billing:", password = %q%s }
    orders  = { key_prefix = "orders:", password = %q }
  }`, billingPw, eval, ordersPw)
	}
	canEval := func(user, password, key string, want bool) resource.TestCheckFunc {
		return func(*terraform.State) error {
			c := redis.NewClient(&redis.Options{Addr: m.addr, Username: user, Password: password, MaxRetries: -1, DisableIdentity: true})
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err := c.Eval(ctx, "return redis.call('set', KEYS[1], 'v')", []string{key}).Err()
			if (err == nil) != want {
				return fmt.Errorf("EVAL by %s on %s: %v, want allowed = %v", user, key, err, want)
			}
			return nil
		}
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: masterConfig(m, users(", allow_eval = true")),
				Check: resource.ComposeAggregateTestCheckFunc(m.capture(),
					resource.TestCheckResourceAttr(testAddr, "lock_users.orders.allow_eval", "false"),
					canEval("billing", billingPw, "billing:x", true),
					canEval("billing", billingPw, "orders:x", false),
					canEval("orders", ordersPw, "orders:x", false),
				),
			},
			{
				Config: masterConfig(m, users("")),
				Check:  resource.ComposeAggregateTestCheckFunc(m.capture(), canEval("billing", billingPw, "billing:x", false)),
			},
		},
	})
}
