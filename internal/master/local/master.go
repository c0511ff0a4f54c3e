package local

import (
	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// Files this runtime keeps in a master's data dir, beside the supervisor's.
const (
	RecordFileName    = "redlock-master.json"
	RedisConfFileName = "redis.conf"
	redisLogFileName  = "redis.log"
)

// Status values Refresh and Update report.
const (
	StatusRunning = supervisor.StatusRunning
	StatusHolding = supervisor.StatusHolding // crashed or found unclean: kept down for the restart delay
	// StatusUnsupervised: redis-server serves but its supervisor is gone, so a crash would not
	// be held back. Replacing the master (Destroy, then Start) supervises it again.
	StatusUnsupervised = "unsupervised"
	// StatusDestroying: a Destroy ended before the master's locks had expired; its data is gone
	// and the next Destroy (or Start in the dir) finishes the wait.
	StatusDestroying = "destroying"
	StatusUnknown    = "unknown" // the supervisor's state cannot be read
)

// Master is one master as this runtime runs it: the Spec, and how the configuration that
// asked for it wrote what the Spec holds parsed, so that Load rebuilds that configuration.
type Master struct {
	// Spec is the master. Spec.Port is the port it listens on; 0 makes Start pick one (the
	// previous port of the data dir when free, else any free port).
	Spec master.Spec
	// ZeroPort: the configuration asked for any free port with port = 0, which the record
	// keeps as 0 (not the port picked), as the configuration does.
	ZeroPort bool
	// Written is the timing settings as written ("1m", not "1m0s"); empty ones are written
	// from the Spec.
	Written Written
	// KeepDataOnDestroy keeps the data dir (and so the AOF) when Destroy stops the master.
	KeepDataOnDestroy bool
	// RepairManaged, when set, is the Managed the last apply left: Update sets the running
	// master back to it (users from scratch, users it does not define removed, the settings).
	// Nil: Update changes only what differs between its two Masters.
	RepairManaged Managed
}

// Written is the timing settings as the configuration wrote them.
type Written struct {
	MaxLockTTL       string
	ClockDriftMargin string
	RestartDelay     string
}

// Processes are the pids of a master (0: none known).
type Processes struct {
	Supervisor int
	Redis      int
}

// Warning is something the user should know that did not stop the operation.
type Warning struct {
	Summary string
	Detail  string
}

// Error is a failure not tied to one setting: what failed, and what to do about it.
type Error struct {
	Summary string
	Detail  string
}

func (e *Error) Error() string { return e.Summary + ": " + e.Detail }

func fieldError(field, summary, detail string) error {
	return &master.FieldError{Field: field, Summary: summary, Detail: detail}
}
