package hold

// The records each runtime keeps, by the same names in the data dir (host) or beside the
// supervisor's state (local).
const (
	// HostCleanMarker is the host gate's clean-stop marker: "v4 <machine-id> <boot-id>
	// <boot clock ms> <AOF files digest> <token> <data dir>", the token being what the
	// stopped step put in the server's pidfile (a server started with the master's config
	// writes its pid over it). A v3 marker (an earlier version's, without the token) never
	// counts.
	HostCleanMarker = "redlock.clean-stop"
	// HostUnseededRecord is the host gate's record of a restore it found with seeding on
	// (AOF files other than the clean marker names): the next start marks the master
	// unseeded whatever its seed record says, and removes it.
	HostUnseededRecord = "redlock.unseeded"
	// HostHoldRecord is the host gate's pending hold: "<boot-id> <until, boot clock ms>".
	HostHoldRecord = "redlock.hold"
	// HostFloorRecord keeps the delays locks were granted under:
	// "<boot-id> <until ms> <delay ms> <run delay ms>".
	HostFloorRecord = "redlock.floor"
)

// Runtime is a set of the implementations a scenario applies to.
type Runtime int

const (
	Host  Runtime = 1 << iota // the host gate script under systemd
	Local                     // the kit's supervisor
	Both  = Host | Local
)

// Marker is the clean-stop marker found at the start.
type Marker string

const (
	NoMarker           Marker = ""
	MarkerHere         Marker = "written on this machine, data dir and boot"
	MarkerOtherBoot    Marker = "written in an earlier boot"
	MarkerOtherMachine Marker = "written on another machine (a disk image or snapshot)"
	MarkerOtherDir     Marker = "written for another data dir (a copied dir)"
	MarkerNoIdentity   Marker = "without the machine, dir and boot that wrote it"
	MarkerAOFGone      Marker = "written here, but the AOF it vouched for is gone"
	MarkerAOFReplaced  Marker = "written here, but the AOF was replaced since (a restored backup)"
	// MarkerRolledBack: the data dir, with this marker, moved aside (inodes and mtimes kept,
	// as a volume snapshot restores them); a copy of it started again; then the dir moved
	// back: the marker and its files are as they were, but a start came after them.
	MarkerRolledBack Marker = "written here, then the data dir rolled back to it after a later clean run"
)

// HoldRecord is the record of an unclean stop found at the start.
type HoldRecord string

const (
	NoHold         HoldRecord = ""
	HoldThisBoot   HoldRecord = "an unclean stop in this boot, HoldLeftMS still to wait"
	HoldOtherBoot  HoldRecord = "an unclean stop before a reboot"
	HoldUnreadable HoldRecord = "unreadable"
	// HoldNotANumber: an until of 20 digits (past 64-bit arithmetic).
	HoldNotANumber HoldRecord = "an until that is not a number the runtime can compute with (20 digits)"
	// HoldFarAhead: an until ten years ahead, beyond now + the largest delay ever configured.
	HoldFarAhead HoldRecord = "an until ten years ahead (beyond now + the largest delay ever configured)"
)

// Floor is the record of the delays earlier runs granted locks under, as found.
type Floor string

const (
	FloorAsWritten Floor = ""
	// FloorUnreadable: not numbers (a hand edit, a torn copy).
	FloorUnreadable Floor = "unreadable"
	// FloorFarAhead: a floor ten years ahead (beyond now + the largest delay ever configured).
	FloorFarAhead Floor = "ten years ahead"
	// FloorWeekAhead: a floor a week ahead (within the largest delay allowed, beyond the
	// largest delay ever configured).
	FloorWeekAhead Floor = "a week ahead"
	// FloorOverflow: a last-alive moment of -(2^63-1) and a floor and restart time of 2^63-1:
	// past 64-bit arithmetic (the difference wraps).
	FloorOverflow Floor = "values past 64-bit arithmetic"
	// FloorNegative: a negative last-alive moment and floor.
	FloorNegative Floor = "negative"
)

// Exit is how the last run ended, right before the start; ExitNone: the records are as
// given, nothing ran since.
type Exit string

const (
	ExitNone Exit = ""
	// ExitDurableStop: the runtime stopped the server (SHUTDOWN) with the AOF on and
	// appendfsync always; it exited 0 after "ready to exit".
	ExitDurableStop Exit = "stopped by the runtime, AOF on with appendfsync always"
	// ExitStopAOFOff: the runtime stopped it, but the admin had turned the AOF off.
	ExitStopAOFOff Exit = "stopped by the runtime after CONFIG SET appendonly no"
	// ExitAOFOffAfterStopCheck: the runtime's stop read the AOF on with appendfsync always;
	// before its SHUTDOWN, the admin turned the AOF off and wrote (the write pause had run
	// out): exit 0, and the acknowledged write is not on disk.
	ExitAOFOffAfterStopCheck Exit = "the AOF turned off and a write acknowledged after the stop read the settings, before its SHUTDOWN"
	// ExitAdminShutdownAOFOff: the admin turned the AOF off, wrote, and ran SHUTDOWN: exit 0.
	ExitAdminShutdownAOFOff Exit = "CONFIG SET appendonly no, a SET, then SHUTDOWN by the admin: exit 0"
	// ExitKilled: SIGKILL (OOM killer, kill -9).
	ExitKilled Exit = "killed (SIGKILL)"
	// ExitOrphanKilledDuringStop: the supervisor was killed, its server hung, and was
	// killed while a stop waited for it to shut down.
	ExitOrphanKilledDuringStop Exit = "an unsupervised server killed while a stop waited for its shutdown"
	// ExitReplaced: while it served, the master replicated another server (REPLICAOF, then
	// REPLICAOF NO ONE): the lock keys it held are gone, and it serves on.
	ExitReplaced Exit = "its dataset replaced while it served (REPLICAOF another server, then NO ONE)"
	// ExitFlushed: while it served, its keyspace was emptied (FLUSHALL by the admin).
	ExitFlushed Exit = "its keyspace flushed while it served (FLUSHALL)"
)

// Address is what the runtime's records say of the master's address, beyond its data dir.
type Address string

const (
	AddressAsWritten Address = ""
	// AddressOtherDirCrashed: after this data dir's last run, a master of another data dir
	// served on the address, was killed, and was stopped while held (its hold had
	// HoldLeftMS to go when the start came).
	AddressOtherDirCrashed Address = "another data dir's master served on the address since, and crashed"
	// AddressRecordUnreadable: the address's record is not one the runtime wrote.
	AddressRecordUnreadable Address = "the address's record is unreadable"
	// AddressRecordsBegan: the records of the addresses began restart_delay - HoldLeftMS ago,
	// and none names this address (a first start soon after a reboot).
	AddressRecordsBegan Address = "the address records began less than restart_delay ago"
)

// Outcome is what the start must do.
type Outcome string

const (
	StartNow Outcome = "start now"
	// HoldRecorded: hold until the recorded time (HoldLeftMS from now).
	HoldRecorded Outcome = "hold until the recorded time"
	// HoldFromNow: hold restart_delay (after the floor) from the start.
	HoldFromNow Outcome = "hold restart_delay from now"
	// HoldFromExit: hold restart_delay from the exit of the last run.
	HoldFromExit Outcome = "hold restart_delay from the exit"
	// HoldFromGone: wait while a server serves on the address or data dir, then hold
	// restart_delay from when it stopped.
	HoldFromGone Outcome = "hold restart_delay from when the unnamed server stopped"
	// Refuse: do not start (a record cannot be written or removed), saying why.
	Refuse Outcome = "refuse to start"
)

// Scenario is one case of the policy: the records and the machine when a master starts,
// and what the start must do. Issue is the defect it covers (0: held from the first
// version): 1 the 32-bit clock, 2 a marker from elsewhere, 3 records that cannot be written,
// 4 an unsupervised server killed during a stop, 5 a server no record names, 6 an exit that
// is not durable, 7 a lowered delay (the floor); found later: 8 a server no record names
// that serves during a hold and stops before it ends, 9 the AOF turned off after the host's
// stop step read the settings, 10 a stop while a server no record names is waited for, 11
// an AOF replaced under a clean marker, 12 a server no record names that answers nothing,
// 13 values read from disk not validated or bounded, or timed by the wall clock; 14 values
// read from disk past 64-bit arithmetic, negative, or beyond the largest delay configured;
// 15 a record trusted without proof that it still describes the server: a server started
// with the master's config after the clean stop, another data dir's master on the address,
// a data dir emptied, a dataset replaced while the master serves.
type Scenario struct {
	Name     string
	Issue    int
	Runtimes Runtime

	Ran        bool // a master ran in the data dir before (its AOF is there)
	Marker     Marker
	Hold       HoldRecord
	HoldLeftMS int64 // HoldThisBoot: how much of the recorded hold is left (<= 0: over)
	// UptimeMS is the host's CLOCK_BOOTTIME at the start (0: any).
	UptimeMS int64
	// RecordsStuck: the records cannot be removed or replaced (EIO, EPERM, read-only).
	RecordsStuck bool
	// ServerOnAddress: a server no record names serves on the master's address; it is
	// killed during the start.
	ServerOnAddress bool
	// ServerDuringHold: a server no record names starts on the master's address while the
	// start is held, and is killed before the hold ends.
	ServerDuringHold bool
	// ServerPaused: the server no record names (ServerOnAddress) is stopped (SIGSTOP): it
	// holds the address and answers nothing, and may serve again once continued.
	ServerPaused bool
	// StopWhileWaiting: the runtime is stopped while it waits for a server no record names
	// (ServerOnAddress); that server serves on, stops, and then the master starts again.
	StopWhileWaiting bool
	// LastRunDelayMS: the last run ran under this delay, larger than the one configured
	// now (0: the same).
	LastRunDelayMS int64
	// DelayOnDisk: the restart delay as written by hand in the runtime's settings file
	// (host: RESTART_DELAY_MS in master.conf; local: restart_delay_ms in supervisor.json),
	// replacing the rendered one ("": as rendered; "''": empty).
	DelayOnDisk string
	// Floor: the record of the delays earlier runs granted under, as found (host:
	// redlock.floor; local: the state it is part of).
	Floor Floor
	// WallClockStepMS: the wall clock stepped by this much (negative: back) after the hold
	// record was written, before the start.
	WallClockStepMS int64
	// StartedByHand: after the records were made, a server was started by hand with the
	// master's config file (and --appendonly no), took a write and was killed.
	StartedByHand bool
	// Emptied: the data dir was emptied (every file removed) after the last run.
	Emptied bool
	Address Address
	Exit    Exit

	Want Outcome
}

// Scenarios is the table. Delays are the adapters' own (a scenario never depends on how
// long a step takes, and is at least 2 s); HoldLeftMS and UptimeMS are exact. A hold
// left longer than the delay is a record out of bounds (HoldFarAhead).
var Scenarios = []Scenario{
	{Name: "clean stop starts at once", Runtimes: Both, Ran: true, Marker: MarkerHere, Want: StartNow},
	{Name: "durable stop by the runtime starts at once", Runtimes: Both, Ran: true, Exit: ExitDurableStop, Want: StartNow},
	{Name: "first start on a new host holds", Runtimes: Host, Want: HoldFromNow},
	{Name: "unclean stop of this boot holds until the recorded time", Runtimes: Both, Ran: true, Hold: HoldThisBoot, HoldLeftMS: 1_500, Want: HoldRecorded},
	{Name: "power loss during a hold holds until the recorded time", Runtimes: Both, Ran: true, Marker: MarkerHere, Hold: HoldThisBoot, HoldLeftMS: 900, Want: HoldRecorded},
	{Name: "a hold already over starts after clearing it", Runtimes: Host, Ran: true, Hold: HoldThisBoot, HoldLeftMS: -5_000, Want: HoldRecorded},
	{Name: "unclean stop before a reboot holds from now", Runtimes: Host, Ran: true, Hold: HoldOtherBoot, Want: HoldFromNow},
	{Name: "reboot or power loss with no record holds from now", Runtimes: Both, Ran: true, Want: HoldFromNow},
	{Name: "unreadable hold record holds from now", Runtimes: Host, Ran: true, Hold: HoldUnreadable, Want: HoldFromNow},
	{Name: "killed server holds from its exit", Runtimes: Both, Ran: true, Exit: ExitKilled, Want: HoldFromExit},

	{Name: "uptime past 2^31 ms: holds until the recorded time and opens", Issue: 1, Runtimes: Host, Ran: true,
		Hold: HoldThisBoot, HoldLeftMS: 1_800, UptimeMS: 2_200_000_000, Want: HoldRecorded},
	{Name: "uptime past 2^32 ms: holds until the recorded time and opens", Issue: 1, Runtimes: Host, Ran: true,
		Hold: HoldThisBoot, HoldLeftMS: 1_800, UptimeMS: 4_294_967_300 + 1_234_560, Want: HoldRecorded},
	{Name: "clean marker from another machine (image, snapshot) holds", Issue: 2, Runtimes: Both, Ran: true, Marker: MarkerOtherMachine, Want: HoldFromNow},
	{Name: "clean marker from another data dir holds", Issue: 2, Runtimes: Both, Ran: true, Marker: MarkerOtherDir, Want: HoldFromNow},
	{Name: "clean marker from an earlier boot holds", Issue: 2, Runtimes: Both, Ran: true, Marker: MarkerOtherBoot, Want: HoldFromNow},
	{Name: "clean marker whose AOF is gone holds", Issue: 2, Runtimes: Both, Ran: true, Marker: MarkerAOFGone, Want: HoldFromNow},
	{Name: "clean marker whose AOF was replaced since holds", Issue: 11, Runtimes: Both, Ran: true, Marker: MarkerAOFReplaced, Want: HoldFromNow},
	{Name: "clean marker without identity holds", Issue: 2, Runtimes: Both, Ran: true, Marker: MarkerNoIdentity, Want: HoldFromNow},
	{Name: "records that cannot be replaced keep the master down after a kill", Issue: 3, Runtimes: Both, Ran: true,
		Hold: HoldThisBoot, HoldLeftMS: -60_000, RecordsStuck: true, Exit: ExitKilled, Want: Refuse},
	{Name: "a clean marker that cannot be removed keeps the master down", Issue: 3, Runtimes: Both, Ran: true,
		Marker: MarkerHere, RecordsStuck: true, Want: Refuse},
	{Name: "unsupervised server killed while a stop waits holds from its exit", Issue: 4, Runtimes: Local, Ran: true,
		Exit: ExitOrphanKilledDuringStop, Want: HoldFromExit},
	{Name: "a server no record names is waited out, then held for", Issue: 5, Runtimes: Both, Ran: true,
		Marker: MarkerHere, ServerOnAddress: true, Want: HoldFromGone},
	{Name: "a server run during the hold and stopped before it ends is held for", Issue: 8, Runtimes: Both, Ran: true,
		Hold: HoldThisBoot, HoldLeftMS: 1_500, ServerDuringHold: true, Want: HoldFromGone},
	{Name: "a paused server no record names is waited out, then held for", Issue: 12, Runtimes: Both, Ran: true,
		Marker: MarkerHere, ServerOnAddress: true, ServerPaused: true, Want: HoldFromGone},
	{Name: "stopped while waiting for a server no record names, the next start holds from then", Issue: 10, Runtimes: Both, Ran: true,
		Marker: MarkerHere, ServerOnAddress: true, StopWhileWaiting: true, Want: HoldFromNow},
	{Name: "SHUTDOWN with the AOF off holds from the exit", Issue: 6, Runtimes: Both, Ran: true, Exit: ExitAdminShutdownAOFOff, Want: HoldFromExit},
	{Name: "a stop with the AOF off holds from the exit", Issue: 6, Runtimes: Both, Ran: true, Exit: ExitStopAOFOff, Want: HoldFromExit},
	{Name: "the AOF turned off between the stop's check and its SHUTDOWN holds from the exit", Issue: 9, Runtimes: Host, Ran: true,
		Exit: ExitAOFOffAfterStopCheck, Want: HoldFromExit},
	{Name: "a lowered delay holds for the delay the last run granted under", Issue: 7, Runtimes: Both, Ran: true,
		LastRunDelayMS: 3_600_000, Exit: ExitKilled, Want: HoldFromExit},
	{Name: "a restart delay on disk that is not a whole number refuses, naming the file", Issue: 13, Runtimes: Both, Ran: true,
		DelayOnDisk: "30s", Exit: ExitKilled, Want: Refuse},
	{Name: "an empty restart delay on disk refuses, naming the file", Issue: 13, Runtimes: Both, Ran: true,
		DelayOnDisk: "''", Exit: ExitKilled, Want: Refuse},
	{Name: "a hold record whose until has 20 digits holds from now", Issue: 13, Runtimes: Host, Ran: true,
		Hold: HoldNotANumber, Want: HoldFromNow},
	{Name: "a hold record ten years ahead holds from now", Issue: 13, Runtimes: Host, Ran: true,
		Hold: HoldFarAhead, Want: HoldFromNow},
	// Local: the floor is part of the state, the one hold record: unreadable, it refuses.
	{Name: "an unreadable floor after a lowered delay refuses, naming the file", Issue: 13, Runtimes: Both, Ran: true,
		LastRunDelayMS: 3_600_000, Floor: FloorUnreadable, Exit: ExitKilled, Want: Refuse},
	{Name: "a floor ten years ahead refuses, naming the file", Issue: 13, Runtimes: Both, Ran: true,
		Floor: FloorFarAhead, Exit: ExitKilled, Want: Refuse},
	{Name: "a floor a week ahead, beyond the largest delay ever configured, refuses, naming the file", Issue: 14, Runtimes: Both, Ran: true,
		Floor: FloorWeekAhead, Exit: ExitKilled, Want: Refuse},
	{Name: "a floor past 64-bit arithmetic refuses, naming the file", Issue: 14, Runtimes: Both, Ran: true,
		Floor: FloorOverflow, Exit: ExitKilled, Want: Refuse},
	{Name: "a negative floor refuses, naming the file", Issue: 14, Runtimes: Both, Ran: true,
		Floor: FloorNegative, Exit: ExitKilled, Want: Refuse},
	{Name: "a server started by hand with the master's config after its clean stop holds from now", Issue: 15, Runtimes: Both, Ran: true,
		Marker: MarkerHere, StartedByHand: true, Want: HoldFromNow},
	{Name: "a data dir rolled back to a snapshot of an earlier clean stop holds from now", Issue: 15, Runtimes: Local, Ran: true,
		Marker: MarkerRolledBack, Want: HoldFromNow},
	{Name: "a data dir emptied after its master's clean stop holds from that master's exit", Issue: 15, Runtimes: Local, Ran: true,
		Exit: ExitDurableStop, Emptied: true, Want: HoldFromExit},
	{Name: "a first start on an address where another data dir's master crashed holds until that master's hold ends", Issue: 15, Runtimes: Local,
		Address: AddressOtherDirCrashed, HoldLeftMS: 1_500, Want: HoldRecorded},
	{Name: "a clean stop does not vouch for the address once another data dir's master crashed there", Issue: 15, Runtimes: Local, Ran: true,
		Marker: MarkerHere, Address: AddressOtherDirCrashed, HoldLeftMS: 1_500, Want: HoldRecorded},
	{Name: "a first start on an address no master served on since the records began starts at once", Issue: 15, Runtimes: Local, Want: StartNow},
	{Name: "a first start within restart_delay of when the address records began holds until then", Issue: 15, Runtimes: Local,
		Address: AddressRecordsBegan, HoldLeftMS: 1_500, Want: HoldRecorded},
	{Name: "an unreadable address record holds from now", Issue: 15, Runtimes: Local, Ran: true,
		Marker: MarkerHere, Address: AddressRecordUnreadable, Want: HoldFromNow},
	{Name: "a dataset replaced while the master serves holds from the exit", Issue: 15, Runtimes: Both, Ran: true,
		Exit: ExitReplaced, Want: HoldFromExit},
	{Name: "a keyspace flushed while the master serves holds from the exit", Issue: 15, Runtimes: Both, Ran: true,
		Exit: ExitFlushed, Want: HoldFromExit},
	{Name: "a wall-clock step forward after the hold was recorded does not shorten it", Issue: 13, Runtimes: Local, Ran: true,
		Hold: HoldThisBoot, HoldLeftMS: 3_000, WallClockStepMS: 2_000, Want: HoldRecorded},
	{Name: "a hold recorded while the wall clock ran ahead does not lengthen it", Issue: 13, Runtimes: Local, Ran: true,
		Hold: HoldThisBoot, HoldLeftMS: 3_000, WallClockStepMS: -20_000, Want: HoldRecorded},
}

// For reports whether the scenario applies to rt.
func (s Scenario) For(rt Runtime) bool { return s.Runtimes&rt != 0 }
