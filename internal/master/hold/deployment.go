package hold

import "github.com/redlock-kit/redlock-kit/internal/redisconf"

// The deployment record: after every start of a master, the runtime that enforces its
// restart hold writes, as the admin, the hash DeploymentKey with the delay the hold actually
// uses (after any floor) and its own name, so that a validator (internal/audit) can read what
// is enforced rather than what was configured. These are the record's only names: the
// runtimes that write it, the audit that reads it and the host script (given them in
// master.conf) all use them.
const (
	// DeploymentKey is the hash a runtime publishes on every master it runs.
	DeploymentKey = redisconf.KitKeyPrefix + "deployment"
	// FieldRestartDelayMS is the restart delay, a decimal integer of milliseconds. The same
	// name is the setting's key in supervisor.json and, upper-cased (ShellName), its
	// variable in master.conf and (with REDLOCK_) in a hook's environment.
	FieldRestartDelayMS = "restart_delay_ms"
	// FieldRuntime names the runtime that enforces the hold (RuntimeLocal, RuntimeHost).
	FieldRuntime = "runtime"
	// FieldRunID is the run_id (INFO server) of the server the runtime started: the record
	// vouches for that run only.
	FieldRunID = "run_id"
	// FieldConfigDrift says how the server's config file on disk differs from the one the
	// runtime rendered ("": it does not); the next start loads the file on disk.
	FieldConfigDrift = "config_drift"
	// FieldReplID is the server's master_replid (INFO replication) when the runtime started
	// it. A master that never replicated keeps it for its whole run; one that replicated
	// another server (REPLICAOF, even undone) has another one, long after repl-backlog-ttl
	// has cleared master_replid2.
	FieldReplID = "replid"
	// FieldHeartbeatMS is the server's own TIME, in whole ms, when the local supervisor last
	// vouched for it (rewritten every DeploymentHeartbeatInterval while it runs the master).
	// The host gate has no process left running to keep one (its heartbeat is systemd's own
	// supervision: the unit restarts the gate), and writes none.
	FieldHeartbeatMS = "heartbeat_ms"
	// FieldDataFS is the type of the filesystem the server's data dir is on when the
	// runtime started it (storage.go: DataFS; a volatile one keeps nothing through a reboot).
	FieldDataFS = "data_fs"
)

// The runtimes that enforce a hold (FieldRuntime).
const (
	RuntimeLocal = "local-supervisor" // the kit's supervisor (redlock_master)
	RuntimeHost  = "host-gate"        // the host's systemd unit and its gate script
)
