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

// afterStart marks the master unseeded unless it has a record (HSETNX). A master with no
// record loaded none (redisconf.LoadedNoSeedRecord): its files passed the start's rule but
// loaded nothing, and the ACL file it loaded may have the lock users on, so the rendered
// one is written and loaded first; then the mark (a seeder seeds a marked master only, so
// it cannot turn them on in between).
func (g *seedGate) afterStart(ctx context.Context, admin *redis.Client) error {
	if g == nil {
		return nil
	}
	had, err := admin.HExists(ctx, audit.FenceSeedKey, audit.FenceSeedStateField).Result()
	if err != nil {
		return fmt.Errorf("seed gate: read %s: %w", audit.FenceSeedKey, err)
	}
	if redisconf.LoadedNoSeedRecord(had) {
		if err := os.WriteFile(g.aclFile, []byte(g.rendered), 0o600); err != nil {
			return fmt.Errorf("seed gate: reset %s: %w", g.aclFile, err)
		}
		if err := admin.Do(ctx, "ACL", "LOAD").Err(); err != nil {
			return fmt.Errorf("seed gate: ACL LOAD of the rendered %s: %w", g.aclFile, err)
		}
	}
	if err := admin.HSetNX(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedUnseeded).Err(); err != nil {
		return fmt.Errorf("seed gate: mark %s unseeded: %w", audit.FenceSeedKey, err)
	}
	return nil
}
