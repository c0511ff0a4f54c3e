package hold

import "github.com/redlock-kit/redlock-kit/internal/audit"

// The deployment record: after every start of a master, the runtime that enforces its
// restart hold writes, as the admin, the hash DeploymentKey with the delay the hold actually
// uses (after any floor) and its own name, so that a validator can read what is enforced
// rather than what was configured. The names are the audit's, which reads the record: one
// definition for writer and reader.
const (
	DeploymentKey = audit.DeploymentKey
	// FieldRestartDelayMS is a decimal integer of milliseconds.
	FieldRestartDelayMS = audit.DeploymentRestartDelayField
	FieldRuntime        = audit.DeploymentRuntimeField
	// FieldRunID is the run_id of the server the runtime started: the record vouches for
	// that run only.
	FieldRunID = audit.DeploymentRunIDField
	// FieldReplID is the server's master_replid at the start: a master that replicated
	// another server since has another one.
	FieldReplID = audit.DeploymentReplIDField
	// FieldHeartbeatMS is the server's TIME (ms) when the local supervisor last vouched.
	FieldHeartbeatMS = audit.DeploymentHeartbeatField
	// FieldConfigDrift says how the config file on disk differs from the one the runtime
	// rendered ("": it does not).
	FieldConfigDrift = audit.DeploymentConfigDriftField
)

// The runtimes that enforce a hold (FieldRuntime).
const (
	RuntimeLocal = audit.RuntimeLocalSupervisor // the kit's supervisor (redlock_master)
	RuntimeHost  = audit.RuntimeHostGate        // the host's systemd unit and its gate script
)
