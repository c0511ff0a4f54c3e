package supervisor

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/audit"
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
// restart delay the hold uses, in whole milliseconds rounded up, this runtime's name, the
// run_id of the server it runs and its master_replid (both read through the same
// connection), and the filesystem type of its data dir. startReplID is the replid published at this run's start ("": this is the
// start); a server whose replid changed since replicated another server (REPLICAOF, even
// undone): its dataset is no longer the one the hold covers, and the record is not
// republished for it (re-vouched). It returns the replid published.
func publishDeployment(c Config, delay time.Duration, drift, startReplID string) (string, error) {
	client := adminClient(c)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), functionLoadTimeout)
	defer cancel()
	ms := (delay + time.Millisecond - 1) / time.Millisecond
	info, err := client.InfoMap(ctx, "server").Result()
	runID := info["Server"]["run_id"]
	if err == nil && runID == "" {
		err = fmt.Errorf("INFO server has no run_id")
	}
	if err != nil {
		return "", fmt.Errorf("INFO server (the run_id %s vouches for): %w", hold.DeploymentKey, err)
	}
	replID, err := audit.ReplID(ctx, client)
	if err != nil {
		return "", err
	}
	if startReplID != "" && replID != startReplID {
		return "", fmt.Errorf("the server's replication id is %s, not %s as at its start: it replicated another server since "+
			"(REPLICAOF), its dataset is not the one the hold covers; %s is not republished for it (restart the master)",
			replID, startReplID, hold.DeploymentKey)
	}
	now, err := client.Time(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("TIME (the heartbeat of %s): %w", hold.DeploymentKey, err)
	}
	fs, err := hold.DataFS(c.DataDir)
	if err != nil {
		return "", err
	}
	err = client.HSet(ctx, hold.DeploymentKey, hold.FieldRestartDelayMS, strconv.FormatInt(int64(ms), 10),
		hold.FieldRuntime, hold.RuntimeLocal, hold.FieldRunID, runID, hold.FieldReplID, replID, hold.FieldConfigDrift, drift,
		hold.FieldDataFS, fs, hold.FieldHeartbeatMS, now.UnixMilli()).Err()
	if err != nil {
		return "", fmt.Errorf("HSET %s (the restart delay a validator reads): %w", hold.DeploymentKey, err)
	}
	return replID, nil
}

// heartbeatScript stamps the record with the server's own TIME, only while the record
// exists (a deleted or replaced record is not recreated by a heartbeat).
var heartbeatScript = redis.NewScript(`if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], ARGV[1], t[1] * 1000 + math.floor(t[2] / 1000))
return 1`)

// heartbeat rewrites the record's heartbeat (hold.FieldHeartbeatMS), every
// audit.DeploymentHeartbeatInterval while the supervisor runs the master: a validator
// reading an old one knows the supervisor is gone. It also reads the server's replication
// id: replaced says why the dataset is no longer the one the server started with (its
// replid is not startReplID: it replicated another server, REPLICAOF, even undone), ""
// when it is, or when startReplID is not known yet.
func heartbeat(c Config, startReplID string) (replaced string, err error) {
	client := adminClient(c)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if startReplID != "" {
		replID, err := audit.ReplID(ctx, client)
		if err != nil {
			return "", err
		}
		if replID != startReplID {
			return fmt.Sprintf("its replication id is %s, not %s as at its start: it replicated another server (REPLICAOF), "+
				"which replaced its dataset while it served", replID, startReplID), nil
		}
	}
	if err := heartbeatScript.Run(ctx, client, []string{hold.DeploymentKey}, hold.FieldHeartbeatMS).Err(); err != nil {
		return "", fmt.Errorf("the heartbeat of %s: %w", hold.DeploymentKey, err)
	}
	return "", nil
}
