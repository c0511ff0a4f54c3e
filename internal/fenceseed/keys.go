package fenceseed

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

// dataKeys is how many keys c's master holds besides its runtime's deployment record
// (hold.DeploymentKey): the runtime publishes that record at every start, so a master that
// started empty holds it and nothing else, and must still count as empty.
func dataKeys(ctx context.Context, c redis.Cmdable) (int64, error) {
	n, err := c.DBSize(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("DBSIZE: %w", err)
	}
	record, err := c.Exists(ctx, hold.DeploymentKey).Result()
	if err != nil {
		return 0, fmt.Errorf("EXISTS %s: %w", hold.DeploymentKey, err)
	}
	return n - record, nil
}
