// Package hold is the restart-hold policy of a Redlock master written once as data: the
// names of the records both runtimes keep and of the settings they share (settings.go), the
// deployment record they publish, and the table
// of scenarios (Scenarios) that the local supervisor and the host gate script are each
// tested against.
//
// The rule: a master that may have granted locks and did not prove a clean, durable stop
// stays down for restart_delay (more than the largest lock TTL) from the last moment it may
// have served, so that every lock it granted has expired elsewhere before it answers again.
//
// The other rule a start applies where fence registers are seeded (the AOF lost, the ACL
// file kept: lock users off until seeding) picks an ACL file rather than a hold, and has its
// table beside that file's rendering: internal/redisconf's SeedScenarios, run against the
// host gate script and the test harness alike.
package hold
