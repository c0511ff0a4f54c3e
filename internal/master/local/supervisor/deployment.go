package supervisor

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

// heldFromNow is the hold a crash from now until the next health-check tick would at least
// get: the configured delay, or while the floor (locks granted under a larger delay) still
// reaches further, what is left of it, in whole seconds rounded down. The supervisor
// republishes it at every tick where it changed: the record never claims more than a crash
// would be held, changes at most once a second while a floor lapses, and says the
// configured delay as soon as the floor has lapsed.
func heldFromNow(st State, configured time.Duration, now time.Time) time.Duration {
	left := st.HoldFloor.Sub(now.Add(pingInterval)).Truncate(time.Second)
	return max(configured, left)
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
