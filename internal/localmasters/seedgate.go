package localmasters

import (
	"context"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// seedGate is the host gate's fence seeding rule (redisconf.ACLAtStartFor, the table
// redisconf.SeedScenarios) at every start of a master of a cluster started with
// Options.SeedFences: a data dir with no AOF gets the rendered ACL file (lock users off),
// and the started master marks itself unseeded where it has no record, as a host rendered
// with seed_fences does (its gate and functions steps).
type seedGate struct {
	aclFile  string // the ACL file the server loads
	rendered string // the file as rendered: lock users off
}

// beforeStart remakes the ACL file from the rendered one when the rule says so.
func (g *seedGate) beforeStart(dataDir string) error {
	if g == nil || redisconf.ACLAtStartFor(true, dataDir) == redisconf.KeepACLFile {
		return nil
	}
	if err := os.WriteFile(g.aclFile, []byte(g.rendered), 0o600); err != nil {
		return fmt.Errorf("seed gate: reset %s: %w", g.aclFile, err)
	}
	return nil
}

// afterStart marks the master unseeded unless it has a record (HSETNX).
func (g *seedGate) afterStart(ctx context.Context, admin *redis.Client) error {
	if g == nil {
		return nil
	}
	if err := admin.HSetNX(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedUnseeded).Err(); err != nil {
		return fmt.Errorf("seed gate: mark %s unseeded: %w", audit.FenceSeedKey, err)
	}
	return nil
}
