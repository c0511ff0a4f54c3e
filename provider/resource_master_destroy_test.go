package provider

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// A destroyed master takes its locks' memory with it: destroy must not return before
// every lock it granted has expired (so a replacement at the same address cannot grant
// one again), and fence registers, which never expire, must not hold it up.
func TestAccMaster_destroyOutlivesItsLocks(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	var lockExpires time.Time
	holdLock := func(*terraform.State) error {
		c := m.lockClient()
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.admin().Set(ctx, "job:fence", "7", 0).Err(); err != nil {
			return err
		}
		if err := c.SetNX(ctx, "job", "token", 2500*time.Millisecond).Err(); err != nil {
			return err
		}
		lockExpires = time.Now().Add(2500 * time.Millisecond)
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			m.checkGone(false),
			func(*terraform.State) error {
				if now := time.Now(); now.Before(lockExpires) {
					return fmt.Errorf("destroy returned %v before the master's lock expired", lockExpires.Sub(now))
				}
				return nil
			},
		),
		Steps: []resource.TestStep{{
			Config: masterConfig(m, ""),
			Check:  resource.ComposeAggregateTestCheckFunc(m.capture(), holdLock),
		}},
	})
}
