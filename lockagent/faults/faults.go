// Package faults breaks a local redlock-kit master on purpose, for fault tests of your own:
// the crash that terraform-provider-redlock's `crash <data_dir>` mode makes, from Go, with no
// Terraform, provider binary or mirror to find.
//
// It works on masters of the redlock-cluster module (redlock_master, the kit's supervisor):
// the module's data_dirs output names them. Linux only (it proves pids through /proc and
// signals them through a pidfd).
package faults

import (
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// Crashed is what CrashMaster killed, and what happens next.
type Crashed struct {
	// RedisPID is the redis-server it killed; SupervisorPID the supervisor that now holds the
	// master down and restarts it.
	RedisPID      int
	SupervisorPID int
	// RestartDelay is how long the supervisor holds the master down, counted from when it
	// was last seen alive (0 when its configuration could not be read).
	RestartDelay time.Duration
}

// CrashMaster crashes the master whose data dir is dataDir: SIGKILL to its redis-server, as a
// crash would, with no chance to fsync or write its clean-stop marker. Its supervisor then
// holds it down for its restart delay and restarts it, as after any crash.
//
// The pid is read from the supervisor's state at the call and proven by /proc to be that data
// dir's redis-server before it is signalled (never a pid from an older `terraform output`: a
// supervised restart changes it). It returns an error, and signals nothing, when no
// supervisor runs for dataDir (nothing would restart the master), when the master is already
// held down, or when the pid cannot be proven.
func CrashMaster(dataDir string) (Crashed, error) {
	live, err := supervisor.Crash(dataDir)
	if err != nil {
		return Crashed{}, err
	}
	c := Crashed{RedisPID: live.RedisPID, SupervisorPID: live.SupervisorPID}
	if cfg, err := supervisor.LoadConfig(dataDir); err == nil {
		c.RestartDelay = cfg.RestartDelay
	}
	return c, nil
}
