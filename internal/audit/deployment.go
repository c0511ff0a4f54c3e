package audit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// The restart delay is read from the deployment, not trusted from the caller: the runtime
// that holds a crashed master down (the kit's local supervisor, or the gate on a host)
// publishes it on the master, in a hash the admin can read. The caller's value (agent.json's
// restart_delay) is only a cross-check.
const (
	// DeploymentKey is the hash a runtime publishes on every master it runs.
	DeploymentKey = redisconf.KitKeyPrefix + "deployment"
	// DeploymentRestartDelayField is the restart delay, integer milliseconds.
	DeploymentRestartDelayField = "restart_delay_ms"
	// DeploymentRuntimeField names the runtime that enforces it.
	DeploymentRuntimeField = "runtime"
	// DeploymentRunIDField is the run_id (INFO server) of the server the runtime started:
	// the record vouches for that run only.
	DeploymentRunIDField = "run_id"
	// DeploymentConfigDriftField says how the server's config file on disk differs from the
	// one the runtime rendered ("": it does not); the next start loads the file on disk.
	DeploymentConfigDriftField = "config_drift"
	// DeploymentReplIDField is the server's master_replid (INFO replication) when the
	// runtime started it. A master that never replicated keeps it for its whole run; one
	// that replicated another server (REPLICAOF, even undone) has another one, long after
	// repl-backlog-ttl has cleared master_replid2.
	DeploymentReplIDField = "replid"
	// DeploymentHeartbeatField is the server's own TIME, in whole ms, when the runtime last
	// vouched for it: the local supervisor rewrites it every DeploymentHeartbeatInterval
	// while it runs the master. The host gate has no process left running to keep one (its
	// heartbeat is systemd's own supervision: the unit restarts the gate), and writes none.
	DeploymentHeartbeatField = "heartbeat_ms"
	// Runtimes that hold a crashed master down.
	RuntimeLocalSupervisor = "local-supervisor"
	RuntimeHostGate        = "host-gate"
)

// DeploymentHeartbeatInterval is how often the local supervisor rewrites
// DeploymentHeartbeatField; a heartbeat older than DeploymentHeartbeatMissed of them (plus
// the round trip that read it) says the runtime is gone (SIGKILLed): nothing holds the
// master down after its next crash.
const (
	DeploymentHeartbeatInterval = time.Second
	DeploymentHeartbeatMissed   = 3
)

// Deployment is what a runtime publishes under DeploymentKey.
type Deployment struct {
	RestartDelay time.Duration
	Runtime      string
	// RunID is the run_id of the server the runtime started ("": read it through the
	// connection PublishDeployment writes on, which must then be that server's).
	RunID string
	// ReplID is its master_replid at the start ("": read it through that connection).
	ReplID string
}

// PublishDeployment writes d under DeploymentKey through c (the admin connection): what a
// runtime does after every start of the master.
func PublishDeployment(ctx context.Context, c redis.Cmdable, d Deployment) error {
	if d.RunID == "" {
		info, err := c.InfoMap(ctx, "server").Result()
		if err != nil {
			return fmt.Errorf("INFO server (the run_id the record vouches for): %w", err)
		}
		if d.RunID = info["Server"]["run_id"]; d.RunID == "" {
			return fmt.Errorf("INFO server has no run_id: the record could not name the server it vouches for")
		}
	}
	if d.ReplID == "" {
		id, err := ReplID(ctx, c)
		if err != nil {
			return err
		}
		d.ReplID = id
	}
	return c.HSet(ctx, DeploymentKey, DeploymentRestartDelayField, strconv.FormatInt(d.RestartDelay.Milliseconds(), 10),
		DeploymentRuntimeField, d.Runtime, DeploymentRunIDField, d.RunID, DeploymentReplIDField, d.ReplID).Err()
}

// ReplID is the server's master_replid (INFO replication).
func ReplID(ctx context.Context, c redis.Cmdable) (string, error) {
	info, err := c.InfoMap(ctx, "replication").Result()
	if err != nil {
		return "", fmt.Errorf("INFO replication (the replication id the record vouches for): %w", err)
	}
	id := info["Replication"]["master_replid"]
	if id == "" {
		return "", fmt.Errorf("INFO replication has no master_replid: the record could not name the dataset it vouches for")
	}
	return id, nil
}

// readDeployment reads what the master's runtime published. A missing key or field is a
// finding (Master.DeploymentError); a question the server did not answer is unchecked.
func (m *Master) readDeployment(ctx context.Context, c *redis.Client, t Target) {
	fields, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (map[string]string, error) {
		return c.HGetAll(ctx, DeploymentKey).Result()
	})
	switch {
	case err != nil && isWrongType(err):
		m.DeploymentError = fmt.Sprintf("%s holds something other than a hash", DeploymentKey)
		return
	case err != nil:
		m.uncheck(fmt.Sprintf("the restart delay the master's runtime publishes (%s) could not be read", DeploymentKey), err)
		return
	case len(fields) == 0:
		m.DeploymentError = fmt.Sprintf("%s is missing: no runtime publishes a restart delay for it", DeploymentKey)
		return
	}
	m.Runtime = fields[DeploymentRuntimeField]
	ms, err := strconv.ParseInt(fields[DeploymentRestartDelayField], 10, 64)
	if err != nil || ms < 0 {
		m.DeploymentError = fmt.Sprintf("%s field %s is %q, not a number of milliseconds", DeploymentKey, DeploymentRestartDelayField, fields[DeploymentRestartDelayField])
		return
	}
	m.PublishedRestartDelay, m.deploymentRead = time.Duration(ms)*time.Millisecond, true
	// The record vouches for the run of the server its runtime started: a server started
	// by hand from the same data (its runtime stopped or killed) has another run_id, and
	// nothing holds it down after its next crash.
	switch runID := fields[DeploymentRunIDField]; {
	case runID == "":
		m.DeploymentError = fmt.Sprintf("%s has no %s: it names no server run, so it may be left over from a server its runtime no longer runs (restart the master under this version's runtime)", DeploymentKey, DeploymentRunIDField)
		return
	case m.RunID != "" && runID != m.RunID:
		m.DeploymentError = fmt.Sprintf("%s was written for the server run %s, but this server is run %s: it was started outside its runtime (by hand, or its runtime died), and nothing holds it down after a crash", DeploymentKey, runID, m.RunID)
		return
	case m.RunID == "":
		m.uncheck(fmt.Sprintf("whether %s was written for this server (its run_id was not read)", DeploymentKey), nil)
	}
	// The replication id the runtime saw at the start; readContinuity compares it with now.
	if m.deploymentReplID = fields[DeploymentReplIDField]; m.deploymentReplID == "" {
		m.DeploymentError = fmt.Sprintf("%s has no %s: it does not say which dataset it vouches for (restart the master under this version's runtime)", DeploymentKey, DeploymentReplIDField)
		return
	}
	if drift := fields[DeploymentConfigDriftField]; drift != "" {
		m.DeploymentError = fmt.Sprintf("the config on disk is not what the runtime rendered: %s; the server runs on what it loaded, but its next start (after a crash too) loads the file", drift)
	}
	if m.Runtime != RuntimeLocalSupervisor && m.Runtime != RuntimeHostGate {
		m.DeploymentError = fmt.Sprintf("%s field %s is %q, not a runtime that holds a crashed master down (%s or %s)",
			DeploymentKey, DeploymentRuntimeField, m.Runtime, RuntimeLocalSupervisor, RuntimeHostGate)
	}
	if m.DeploymentError != "" {
		return
	}
	// A record the supervisor wrote (it always writes config_drift) must carry a recent
	// heartbeat; so must any record that carries one.
	_, bySupervisor := fields[DeploymentConfigDriftField]
	if hb, ok := fields[DeploymentHeartbeatField]; ok || bySupervisor && m.Runtime == RuntimeLocalSupervisor {
		m.checkHeartbeat(ctx, c, t, hb)
	}
}

func isWrongType(err error) bool {
	return err != nil && len(err.Error()) >= 9 && err.Error()[:9] == "WRONGTYPE"
}

// checkHeartbeat requires the runtime's heartbeat recent on the server's own clock: at most
// DeploymentHeartbeatMissed intervals plus the round trip of the TIME that reads now. It
// reports whether the record may still vouch (false: a finding or unchecked).
func (m *Master) checkHeartbeat(ctx context.Context, c *redis.Client, t Target, field string) bool {
	beat, err := strconv.ParseInt(field, 10, 64)
	if err != nil || beat < 0 {
		m.DeploymentError = fmt.Sprintf("%s field %s is %q, not a time in milliseconds", DeploymentKey, DeploymentHeartbeatField, field)
		return false
	}
	sent := time.Now()
	now, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (time.Time, error) { return c.Time(ctx).Result() })
	if err != nil {
		m.uncheck(fmt.Sprintf("whether the runtime still vouches for the master (%s: TIME)", DeploymentHeartbeatField), err)
		return false
	}
	rtt := time.Since(sent)
	bound := DeploymentHeartbeatMissed*DeploymentHeartbeatInterval + rtt
	age := time.Duration(now.UnixMilli()-beat) * time.Millisecond
	if age > bound || -age > bound {
		m.DeploymentError = fmt.Sprintf("its runtime last vouched for it %s ago (%s %d, the server's TIME %d), more than %d heartbeats of %s: the runtime is gone (killed?), and nothing holds the master down after its next crash. Fix: restart the master under its runtime",
			age.Round(time.Millisecond), DeploymentHeartbeatField, beat, now.UnixMilli(), DeploymentHeartbeatMissed, DeploymentHeartbeatInterval)
		return false
	}
	return true
}
