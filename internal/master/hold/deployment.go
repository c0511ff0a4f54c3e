package hold

// The deployment record: after every start of a master, the runtime that enforces its
// restart hold writes, as the admin, the hash DeploymentKey with the delay the hold actually
// uses (after any floor) and its own name, so that a validator can read what is enforced
// rather than what was configured.
const (
	DeploymentKey = "redlock-kit:deployment"
	// FieldRestartDelayMS is a decimal integer of milliseconds.
	FieldRestartDelayMS = "restart_delay_ms"
	FieldRuntime        = "runtime"
)

// The runtimes that enforce a hold (FieldRuntime).
const (
	RuntimeLocal = "local-supervisor" // the kit's supervisor (redlock_master)
	RuntimeHost  = "host-gate"        // the host's systemd unit and its gate script
)
