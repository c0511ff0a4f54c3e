// Package chaos is a Jepsen-style test of Redlock on five systemd hosts (internal/hostlab):
// worker processes contend for a few keys while a nemesis injects faults, and checkers
// decide from the recorded history whether the safety model held.
//
//   - Deploy provisions a master on each host from the user-data internal/hostconfig renders.
//   - Run starts the workers, separate processes (the test binary re-executed with WorkerEnv
//     set) in the lab's client namespaces, each with its own redlock.Client. Under each lock
//     a worker reads the fenced Register and writes back the value plus one. Every call and
//     its reply is a Record on CLOCK_MONOTONIC (Mono), which is one clock for every process
//     on a Linux machine, so the histories of all workers compare.
//   - The nemesis injects one fault at a time in an order drawn from the run's seed
//     (SafeFaults; ViolationFaults break the deployment's assumptions, for the labelled run
//     that must be caught), and records when each master was unreachable from which client
//     host.
//   - Analyze runs the checkers: CheckHolds (mutual exclusion and fence order),
//     CheckRegister (stale operations refused, no lost increment) and Liveness (acquisitions
//     go on while a majority is reachable), and builds the Report (JSON and Summary).
//
// The checkers are plain functions over histories; their tests feed them bad histories.
package chaos
