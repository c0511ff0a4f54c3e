package supervisor

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

// effectiveDelay is the hold a crash at this moment would get: the configured delay, or
// more while the floor (locks granted under a larger delay) still reaches further.
func effectiveDelay(st State, configured time.Duration) time.Duration {
	if st.LastAlive.IsZero() {
		return configured
	}
	return max(configured, st.HoldFloor.Sub(st.LastAlive))
}

// publishDeployment writes the deployment record (hold.DeploymentKey) as the admin: the
// restart delay the hold uses, in whole milliseconds rounded up, and this runtime's name.
func publishDeployment(c Config, delay time.Duration) error {
	client := adminClient(c)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), functionLoadTimeout)
	defer cancel()
	ms := (delay + time.Millisecond - 1) / time.Millisecond
	err := client.HSet(ctx, hold.DeploymentKey, hold.FieldRestartDelayMS, strconv.FormatInt(int64(ms), 10),
		hold.FieldRuntime, hold.RuntimeLocal).Err()
	if err != nil {
		return fmt.Errorf("HSET %s (the restart delay a validator reads): %w", hold.DeploymentKey, err)
	}
	return nil
}
