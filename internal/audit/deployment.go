package audit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

// The restart delay is read from the deployment, not trusted from the caller: the runtime
// that holds a crashed master down (the kit's local supervisor, or the gate on a host)
// publishes it on the master, in a hash the admin can read (hold.DeploymentKey; the record's
// names are hold's, one definition for its writers and this reader). The caller's value
// (agent.json's restart_delay) is only a cross-check.

// Deployment is what a runtime publishes under hold.DeploymentKey.

// DeploymentHeartbeatInterval is how often the local supervisor rewrites
// hold.FieldHeartbeatMS; a heartbeat older than DeploymentHeartbeatMissed of them (plus the
// round trip that read it) says the runtime is gone (SIGKILLed): nothing holds the master
// down after its next crash.
const (
	DeploymentHeartbeatInterval = time.Second
	DeploymentHeartbeatMissed   = 3
)

type Deployment struct {
	RestartDelay time.Duration
	Runtime      string
	// RunID is the run_id of the server the runtime started ("": read it through the
	// connection PublishDeployment writes on, which must then be that server's).
	RunID string
	// ReplID is its master_replid at the start ("": read it through that connection).
	ReplID string
	// DataFS is the type of the filesystem its data dir is on (hold.DataFS; "": not written).
	DataFS string
}

// PublishDeployment writes d under hold.DeploymentKey through c (the admin connection): what a
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
	fields := []any{hold.FieldRestartDelayMS, strconv.FormatInt(d.RestartDelay.Milliseconds(), 10),
		hold.FieldRuntime, d.Runtime, hold.FieldRunID, d.RunID, hold.FieldReplID, d.ReplID}
	if d.DataFS != "" {
		fields = append(fields, hold.FieldDataFS, d.DataFS)
	}
	return c.HSet(ctx, hold.DeploymentKey, fields...).Err()
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
		return c.HGetAll(ctx, hold.DeploymentKey).Result()
	})
	switch {
	case err != nil && isWrongType(err):
		m.DeploymentError = fmt.Sprintf("%s holds something other than a hash", hold.DeploymentKey)
		return
	case err != nil:
		m.uncheck(fmt.Sprintf("the restart delay the master's runtime publishes (%s) could not be read", hold.DeploymentKey), err)
		return
	case len(fields) == 0:
		m.DeploymentError = fmt.Sprintf("%s is missing: no runtime publishes a restart delay for it", hold.DeploymentKey)
		return
	}
	m.Runtime = fields[hold.FieldRuntime]
	ms, err := strconv.ParseInt(fields[hold.FieldRestartDelayMS], 10, 64)
	if err != nil || ms < 0 {
		m.DeploymentError = fmt.Sprintf("%s field %s is %q, not a number of milliseconds", hold.DeploymentKey, hold.FieldRestartDelayMS, fields[hold.FieldRestartDelayMS])
		return
	}
	m.PublishedRestartDelay, m.deploymentRead = time.Duration(ms)*time.Millisecond, true
	// The record vouches for the run of the server its runtime started: a server started
	// by hand from the same data (its runtime stopped or killed) has another run_id, and
	// nothing holds it down after its next crash.
	switch runID := fields[hold.FieldRunID]; {
	case runID == "":
		m.DeploymentError = fmt.Sprintf("%s has no %s: it names no server run, so it may be left over from a server its runtime no longer runs (restart the master under this version's runtime)", hold.DeploymentKey, hold.FieldRunID)
		return
	case m.RunID != "" && runID != m.RunID:
		m.DeploymentError = fmt.Sprintf("%s was written for the server run %s, but this server is run %s: it was started outside its runtime (by hand, or its runtime died), and nothing holds it down after a crash", hold.DeploymentKey, runID, m.RunID)
		return
	case m.RunID == "":
		m.uncheck(fmt.Sprintf("whether %s was written for this server (its run_id was not read)", hold.DeploymentKey), nil)
	}
	// The replication id the runtime saw at the start; readContinuity compares it with now.
	if m.deploymentReplID = fields[hold.FieldReplID]; m.deploymentReplID == "" {
		m.DeploymentError = fmt.Sprintf("%s has no %s: it does not say which dataset it vouches for (restart the master under this version's runtime)", hold.DeploymentKey, hold.FieldReplID)
		return
	}
	if fs, ok := fields[hold.FieldDataFS]; ok && fs == "" {
		m.uncheck(fmt.Sprintf("what storage the data dir is on: %s has an empty %s (its runtime could not tell)", hold.DeploymentKey, hold.FieldDataFS), nil)
	} else {
		m.DataFS = fs
	}
	drift, compared := fields[hold.FieldConfigDrift]
	m.ConfigUncompared = !compared && m.Runtime == hold.RuntimeHost // a supervisor always writes it
	if drift != "" {
		m.DeploymentError = fmt.Sprintf("the config on disk is not what the runtime rendered: %s; the server runs on what it loaded, but its next start (after a crash too) loads the file", drift)
	}
	if m.Runtime != hold.RuntimeLocal && m.Runtime != hold.RuntimeHost {
		m.DeploymentError = fmt.Sprintf("%s field %s is %q, not a runtime that holds a crashed master down (%s or %s)",
			hold.DeploymentKey, hold.FieldRuntime, m.Runtime, hold.RuntimeLocal, hold.RuntimeHost)
	}
	if m.DeploymentError != "" {
		return
	}
	// A record the supervisor wrote (it always writes config_drift) must carry a recent
	// heartbeat; so must any record that carries one.
	_, bySupervisor := fields[hold.FieldConfigDrift]
	if hb, ok := fields[hold.FieldHeartbeatMS]; ok || bySupervisor && m.Runtime == hold.RuntimeLocal {
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
		m.DeploymentError = fmt.Sprintf("%s field %s is %q, not a time in milliseconds", hold.DeploymentKey, hold.FieldHeartbeatMS, field)
		return false
	}
	sent := time.Now()
	now, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (time.Time, error) { return c.Time(ctx).Result() })
	if err != nil {
		m.uncheck(fmt.Sprintf("whether the runtime still vouches for the master (%s: TIME)", hold.FieldHeartbeatMS), err)
		return false
	}
	rtt := time.Since(sent)
	bound := DeploymentHeartbeatMissed*DeploymentHeartbeatInterval + rtt
	age := time.Duration(now.UnixMilli()-beat) * time.Millisecond
	if age > bound || -age > bound {
		m.DeploymentError = fmt.Sprintf("its runtime last vouched for it %s ago (%s %d, the server's TIME %d), more than %d heartbeats of %s: the runtime is gone (killed?), and nothing holds the master down after its next crash. Fix: restart the master under its runtime",
			age.Round(time.Millisecond), hold.FieldHeartbeatMS, beat, now.UnixMilli(), DeploymentHeartbeatMissed, DeploymentHeartbeatInterval)
		return false
	}
	return true
}
