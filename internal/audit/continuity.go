package audit

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Dataset continuity: a master's lock keys and fence registers are what it granted, only
// while its dataset is its own since it started. Replication (REPLICAOF another server,
// then REPLICAOF NO ONE), a restore (RESTORE, a DEBUG RELOAD), a flush or a swap of
// databases replaces what it holds while it keeps serving, with no hold: its locks can be
// granted again, its fences can go back. The server counts each of those commands since it
// started (INFO commandstats), and a master that was a replica keeps the replication id it
// had as one (master_replid2); a restart through its runtime, held, starts both afresh.
//
// CONFIG RESETSTAT (the admin) clears the counts: this shows what the admin did not hide.

// datasetCommands replace some or all of a master's dataset. REPLICAOF is not counted: the
// provider's update runs REPLICAOF NO ONE on every master (a no-op on a master), and one
// that did become a replica shows in master_replid2. SYNC and PSYNC are replicas of this
// master syncing from it (the audit flags connected replicas on its own). MOVE and MIGRATE
// take keys out of the dataset the lock users see (db 0): a lock key moved or migrated away
// is a lock forgotten while the master serves on.
var datasetCommands = []string{"flushall", "flushdb", "swapdb", "restore", "restore-asking", "debug", "move", "migrate"}

// readContinuity fills DatasetReplaced, or marks the check unchecked.
func (m *Master) readContinuity(ctx context.Context, c *redis.Client, t Target) {
	text, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (string, error) {
		return c.Info(ctx, "replication", "commandstats").Result()
	})
	if err != nil {
		m.uncheck("whether the master's dataset was replaced since it started (INFO replication, commandstats)", err)
		return
	}
	info := parseInfo(text)
	if _, ok := info["master_replid2"]; !ok {
		m.uncheck("whether the master's dataset was replaced since it started: INFO replication has no master_replid2", nil)
		return
	}
	m.DatasetReplaced = datasetReplaced(info)
	if id := info["master_replid"]; m.deploymentReplID != "" && id != m.deploymentReplID && strings.Trim(info["master_replid2"], "0") == "" {
		// A new replication id with no trace of replication left: a replica or a backup
		// (SYNC, redis-cli --rdb) attached, for which Redis makes a new id with its backlog,
		// or the backlog freed after repl-backlog-ttl, which also clears the id a REPLICAOF
		// undone leaves in master_replid2. The first is harmless, the second is not, and
		// they cannot be told apart here. (A trace left is a finding: datasetReplaced. The
		// local supervisor republishes the id after a harmless change within a second.)
		m.uncheck(fmt.Sprintf("whether the master's dataset is its own since its start: its replication id is %.8s, not %.8s as its runtime published at the start, with no trace of replication left (a replica or a backup that attached gives a master a new id, and so does its backlog freed, long after a REPLICAOF undone); restart the master through its runtime to vouch for it again",
			id, m.deploymentReplID), nil)
	}
	m.continuityRead = true
}

// datasetReplaced says why INFO says the dataset may have been replaced since the start.
func datasetReplaced(info map[string]string) []string {
	var why []string
	if id := info["master_replid2"]; strings.Trim(id, "0") != "" {
		why = append(why, fmt.Sprintf("it was a replica since it started (master_replid2 %.8s): REPLICAOF replaced its dataset with another server's", id))
	}
	for _, cmd := range datasetCommands {
		stats, ok := info["cmdstat_"+cmd]
		if !ok {
			continue
		}
		for _, kv := range strings.Split(stats, ",") {
			if n, ok := strings.CutPrefix(kv, "calls="); ok {
				if calls, _ := strconv.Atoi(n); calls > 0 {
					why = append(why, fmt.Sprintf("%s ran %d time(s)", strings.ToUpper(cmd), calls))
				}
			}
		}
	}
	return why
}
