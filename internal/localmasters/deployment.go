package localmasters

import (
	"context"
	"fmt"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

// KitRestartDelay is the restart delay PublishDeployment claims by default: above a 10s max
// lock TTL plus its drift margin, as the kit's tests configure it.
const KitRestartDelay = 11 * time.Second

// PublishDeployment writes on every master what the kit's runtime publishes at each start
// (hold.DeploymentKey: the restart delay it enforces, and which runtime it is), so that the
// audit finds a kit-like deployment. The harness itself does not hold crashed masters down:
// tests that need the hold use the kit's supervisor.
// The record names the run_id of the server it was written on; Restart writes it again.
func (c *Cluster) PublishDeployment(delay time.Duration) error {
	for _, m := range c.Masters {
		if err := m.publishDeployment(delay); err != nil {
			return err
		}
	}
	return nil
}

func (m *Master) publishDeployment(delay time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fs, err := hold.DataFS(m.DataDir)
	if err != nil {
		return err
	}
	if err := audit.PublishDeployment(ctx, m.Admin(), audit.Deployment{RestartDelay: delay, Runtime: hold.RuntimeLocal, DataFS: fs}); err != nil {
		return fmt.Errorf("publish the restart delay on %s: %w", m.Addr, err)
	}
	m.mu.Lock()
	m.published = delay
	m.mu.Unlock()
	return nil
}
