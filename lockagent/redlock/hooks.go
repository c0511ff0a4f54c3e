package redlock

import "time"

// Op names one kind of round the client runs against the masters.
type Op string

// The rounds. An acquisition is an OpAcquire round, followed by an OpFence round only when
// the fence proposed in the acquire round was not below the register on a majority (see
// the package doc, Fencing tokens); a failed or cancelled acquisition is followed by an
// OpCleanup round (release on every master).
const (
	OpAcquire Op = "acquire"
	OpFence   Op = "fence"
	OpExtend  Op = "extend"
	OpRelease Op = "release"
	OpCleanup Op = "cleanup"
)

// MasterEvent is one master's answer (or failure) in one round.
type MasterEvent struct {
	Op      Op
	Key     string
	Master  int    // index in the masters given to New
	Addr    string // address when known
	Latency time.Duration
	Vote    bool  // the master confirmed (granted, extended, released, fenced)
	Err     error // nil when the master answered (a refusal is Vote=false, Err=nil)
}

// OperationEvent is the outcome of one public call (TryAcquire, Acquire, Extend,
// Release) or of one automatic renewal.
type OperationEvent struct {
	Op       Op // OpAcquire for TryAcquire/Acquire
	Key      string
	Attempts int           // acquisition attempts (1 for TryAcquire)
	Votes    int           // masters that confirmed in the last round
	Elapsed  time.Duration // whole call
	Validity time.Duration // remaining validity on success
	Fence    uint64
	Err      error // nil on success
}

// Hooks receive events for metrics and tracing. Methods are called synchronously from
// the client's goroutines, possibly concurrently: keep them fast and safe for concurrent
// use, and do not call the Client from them. Replies that arrive after an operation
// returned (stragglers) are still reported, before Client.Close returns, from the
// goroutine that talks to that master: a slow hook delays that master's next pipeline.
type Hooks interface {
	MasterReply(MasterEvent)
	Operation(OperationEvent)
}

// HookFuncs adapts plain functions to Hooks; nil fields are skipped.
type HookFuncs struct {
	OnMasterReply func(MasterEvent)
	OnOperation   func(OperationEvent)
}

// MasterReply implements Hooks.
func (h HookFuncs) MasterReply(e MasterEvent) {
	if h.OnMasterReply != nil {
		h.OnMasterReply(e)
	}
}

// Operation implements Hooks.
func (h HookFuncs) Operation(e OperationEvent) {
	if h.OnOperation != nil {
		h.OnOperation(e)
	}
}

type nopHooks struct{}

func (nopHooks) MasterReply(MasterEvent)  {}
func (nopHooks) Operation(OperationEvent) {}
