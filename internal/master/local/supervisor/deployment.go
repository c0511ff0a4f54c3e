package supervisor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

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

// replState is what INFO replication says of the server's dataset: its role and its two
// replication ids.
type replState struct{ Role, ID, ID2 string }

// readRepl reads INFO replication.
func readRepl(ctx context.Context, client *redis.Client) (replState, error) {
	info, err := client.InfoMap(ctx, "replication").Result()
	if err != nil {
		return replState{}, fmt.Errorf("INFO replication (the dataset the record vouches for): %w", err)
	}
	r := info["Replication"]
	st := replState{Role: r["role"], ID: r["master_replid"], ID2: r["master_replid2"]}
	if st.ID == "" || st.Role == "" {
		return st, fmt.Errorf("INFO replication has no role or master_replid: the record could not name the dataset it vouches for")
	}
	return st, nil
}

// replacedSince says why a server whose replication state was base (at its start, or at
// the last change found harmless) no longer serves its own dataset, or "". Redis gives a
// master a new replication id without any replication too: when a replica or a backup
// (redis-cli --rdb, any SYNC) first attaches, and when the backlog is freed after
// repl-backlog-ttl; both clear master_replid2. What replication leaves is the role while it
// lasts, and, once REPLICAOF NO ONE ended it, the id it had as a replica in master_replid2.
func replacedSince(base, now replState) string {
	switch {
	case now.Role != "master":
		return fmt.Sprintf("it is a replica (role %s) of another server, whose dataset replaces its own", now.Role)
	case strings.Trim(now.ID2, "0") != "" && now.ID2 != base.ID2:
		return fmt.Sprintf("it was a replica since its start (master_replid2 %.8s, kept after REPLICAOF NO ONE): another server's dataset replaced its own", now.ID2)
	}
	return ""
}

// publishDeployment writes the deployment record (hold.DeploymentKey) as the admin: the
// restart delay the hold uses, in whole milliseconds rounded up, this runtime's name, the
// run_id of the server it runs and its master_replid (both read through the same
// connection), and the filesystem type of its data dir. base is the server's replication
// state published before in this run (nil: this is the start); a server whose dataset was
// replaced since (replacedSince) is not vouched for again (re-vouched). It returns the
// replication state published.
func publishDeployment(c Config, delay time.Duration, drift string, base *replState) (replState, error) {
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
		return replState{}, fmt.Errorf("INFO server (the run_id %s vouches for): %w", hold.DeploymentKey, err)
	}
	repl, err := readRepl(ctx, client)
	if err != nil {
		return replState{}, err
	}
	if base != nil {
		if why := replacedSince(*base, repl); why != "" {
			return replState{}, &replacedError{why}
		}
	}
	now, err := client.Time(ctx).Result()
	if err != nil {
		return replState{}, fmt.Errorf("TIME (the heartbeat of %s): %w", hold.DeploymentKey, err)
	}
	fs, err := hold.DataFS(c.DataDir)
	if err != nil {
		return replState{}, err
	}
	fields := []any{hold.FieldRestartDelayMS, strconv.FormatInt(int64(ms), 10),
		hold.FieldRuntime, hold.RuntimeLocal, hold.FieldRunID, runID, hold.FieldReplID, repl.ID, hold.FieldConfigDrift, drift,
		hold.FieldDataFS, fs, hold.FieldHeartbeatMS, now.UnixMilli()}
	if base == nil {
		err = client.HSet(ctx, hold.DeploymentKey, fields...).Err()
	} else {
		// Rewritten, never recreated: a record gone since the start went with the keyspace.
		var n int
		if n, err = republishScript.Run(ctx, client, []string{hold.DeploymentKey}, fields...).Int(); err == nil && n == 0 {
			return replState{}, &replacedError{recordGone}
		}
	}
	if err != nil {
		return replState{}, fmt.Errorf("HSET %s (the restart delay a validator reads): %w", hold.DeploymentKey, err)
	}
	return repl, nil
}

// replacedError says why the server's dataset is no longer the one the record vouched for
// at the start: it is not republished, and the server is treated as one that lost its data.
type replacedError struct{ why string }

func (e *replacedError) Error() string {
	return e.why + ": its dataset is not the one the hold covers; " + hold.DeploymentKey + " is not republished for it"
}

// recordGone is why a server whose deployment record is gone since its start is replaced.
var recordGone = fmt.Sprintf("its %s is gone (FLUSHALL, FLUSHDB or a DEL since its start): the lock keys it held may be gone too",
	hold.DeploymentKey)

// republishScript rewrites the record's fields only while the record exists.
var republishScript = redis.NewScript(`if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1`)

// heartbeatScript stamps the record with the server's own TIME, only while the record
// exists (a deleted or replaced record is not recreated by a heartbeat).
var heartbeatScript = redis.NewScript(`if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], ARGV[1], t[1] * 1000 + math.floor(t[2] / 1000))
return 1`)

// heartbeat rewrites the record's heartbeat (hold.FieldHeartbeatMS), every
// audit.DeploymentHeartbeatInterval while the supervisor runs the master: a validator
// reading an old one knows the supervisor is gone. It also reads the server's replication
// state: replaced says why its dataset is no longer the one it served since base
// (replacedSince, or the record gone with a flushed keyspace), "" when it is; now is the
// state read.
func heartbeat(c Config, base replState) (replaced string, now replState, err error) {
	client := adminClient(c)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	if now, err = readRepl(ctx, client); err != nil {
		return "", now, err
	}
	if why := replacedSince(base, now); why != "" {
		return why, now, nil
	}
	stamped, err := heartbeatScript.Run(ctx, client, []string{hold.DeploymentKey}, hold.FieldHeartbeatMS).Int()
	if err != nil {
		return "", now, fmt.Errorf("the heartbeat of %s: %w", hold.DeploymentKey, err)
	}
	if stamped == 0 {
		// The record is written at the start and only ever rewritten: gone, the keyspace it
		// lived in was emptied (FLUSHALL, FLUSHDB) or the key deleted, and the lock keys with it.
		return recordGone, now, nil
	}
	return "", now, nil
}
