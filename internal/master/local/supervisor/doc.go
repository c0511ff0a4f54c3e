// Package supervisor keeps one Redis master running under the restart policy Redlock needs
// (see docs/guides/safety-model.md).
//
// One supervisor process runs per master. It is started detached (its own session) by the
// Terraform provider with Spawn, so it outlives `terraform apply`, and it runs redis-server as
// its child:
//
//   - A clean shutdown leaves an fsynced clean marker in the data dir and the supervisor
//     exits 0. Clean means durable: redis-server exited 0, its log shows the AOF fsynced at
//     shutdown and "ready to exit" for that pid, and the settings last read as the admin
//     had appendonly yes, appendfsync always. An exit 0 without that (the AOF turned off)
//     leaves no marker: the next start holds. The marker names the machine-id, boot id and
//     data dir that wrote it and counts nowhere else (a disk image, a snapshot, a copied
//     dir, a reboot), and only while the AOF is there.
//   - A crash (killed by a signal, non-zero exit) runs the OnCrash hook and holds the master
//     down until RestartDelay has passed since its exit, as the supervisor observed it: it
//     is redis-server's parent and reads the wait status, so the hold counts from the moment
//     the wait returned (never before the exit; and a master that was paused when it was
//     killed counts from the kill too), so every lock it granted has expired on the other
//     masters before it rejoins. Measured from outside, kill -9 to the first accepted
//     connection is at least RestartDelay. Then BeforeRestart, redis-server again, and
//     AfterRestart once it answers PING.
//   - A hold never ends before State.HoldFloor, the latest LastAlive + RestartDelay ever
//     recorded: lowering the delay (SIGHUP, or a new supervisor with a new config) does not
//     shorten the wait for locks granted under the old one.
//   - A data dir where a master ran (state with a LastAlive, or data) and that has no clean
//     marker when a supervisor starts (reboot, supervisor and master killed together, a
//     lost or deleted AOF) is held back the same way, with the same hooks, but no exit was
//     observed: the delay counts from the last moment the master was seen alive (the last
//     100ms tick at which /proc showed its process running: answering the PING or not, it
//     may have served clients until then; the restart delay's margin covers the tick). When the
//     previous supervisor died while its master ran, the moment the master died is
//     unknown, and the delay (the larger of the configured one and the one the master ran
//     under) counts from the new supervisor's start. Holds rebuilt from disk (a new
//     supervisor, HoldUntil) are timed by CLOCK_BOOTTIME and the boot id the state records
//     beside its wall-clock times (statejson.go): a wall-clock step does not move them.
//   - Values read from disk are checked: a restart delay that is not a whole number of
//     milliseconds in 1..hold.MaxRestartDelay (ExitConfig), or a state that cannot be read
//     or is out of bounds (an instant after now, a floor more than that delay after the
//     last-alive moment), keeps the master down, naming the file; the state is left as it
//     is, since it holds the delay earlier runs granted locks under.
//   - A redis-server still running from a supervisor that was killed is shut down cleanly by
//     the next supervisor (or by Stop), so it needs no hold, when its log proves the shutdown
//     durable; gone without that proof (killed meanwhile), it is held for.
//   - A server that no record names on the master's address or in its data dir (run by
//     hand, or started by a supervisor that died before recording it) is waited out (one in
//     the data dir is sent SIGTERM, then SIGKILL after the shutdown timeout), and the hold
//     counts from when it was found gone.
//   - A record that cannot be written before a start or a hold, or a clean marker that
//     cannot be removed, ends the supervisor with the master down (ExitFailed, last_error).
//   - After every start it writes, as the admin, the hash redlock-kit:deployment
//     (restart_delay_ms: what a crash would be held, republished as a floor lapses;
//     runtime local-supervisor; run_id: the server run it started; config_drift: how
//     redis.conf on disk differs from Config.ConfigSHA256, checked every second) for
//     validators.
//   - A paused master (SIGSTOP) is "not seen alive" (its LastAlive freezes) but is not a
//     crash: nothing happens until the process actually exits.
//   - The supervisor, redis-server and the hooks run with a minimal environment (PATH, HOME,
//     LANG, LC_ALL, TZ; the hooks also get their REDLOCK_* variables), never the one of the
//     terraform that started them.
//
// Every clean stop this package performs (a stop request to the supervisor, Stop of an
// orphan, an orphan found by a new supervisor) first rewrites the AOF from memory, with
// writes paused (CLIENT PAUSE WRITE, then BGREWRITEAOF). Lock releases are applied without
// being logged to the AOF, and a clean stop restarts without a delay: replaying the AOF alone
// would bring back every key released within the last TTL and block those lock names on this
// master until they expire. The rewrite is best effort and bounded (a few seconds): when it
// fails (server unresponsive, wrong password, rewrite error or too slow) the reason is logged
// and the stop goes on as without it. It is also skipped when the state records a stop
// already under way (the server may exit during the rewrite, and then nothing would prove
// a clean stop), and a SHUTDOWN sent to redis-server by hand does not rewrite. Safety does
// not depend on it.
//
// Everything lives in the master's data dir: supervisor.json (Config, written by the
// provider), supervisor.state (State, replaced atomically), supervisor.log, supervisor.lock
// (flock: one supervisor per data dir), clean-shutdown (the marker), metrics.prom (the
// master's crashes, holds and restarts in the Prometheus text format, for node_exporter's
// textfile collector; rewritten with the state, see MetricsFileName).
//
// The supervisor is the executable that called Spawn, re-executed with the arguments
// "supervise <data dir>": its main (and the TestMain of any test binary that spawns one) must
// call Main when os.Args[1] == "supervise":
//
//	if len(os.Args) > 2 && os.Args[1] == "supervise" {
//		os.Exit(supervisor.Main(os.Args[2]))
//	}
//
// The functions of this package are safe for concurrent use; a data dir is owned by at most
// one running supervisor.
package supervisor
