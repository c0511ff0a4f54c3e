package audit

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// ConnIdentities exposes the record of the run_ids the audit's admin connections reach.
type ConnIdentities = connIdentities

// OnConnect is the hook the audit sets on its admin client.
func (ci *connIdentities) OnConnect(ctx context.Context, cn *redis.Conn) error {
	return ci.onConnect(ctx, cn)
}

// MergeConnIdentities adds what ci saw to m, as the audit does at the end of a master's.
func MergeConnIdentities(m *Master, ci *ConnIdentities) { m.mergeConnIdentities(ci) }
