// Package hold is the restart-hold policy of a Redlock master written once as data: the
// names of the records both runtimes keep and of the settings they share (settings.go), the
// deployment record they publish, and the table
// of scenarios (Scenarios) that the local supervisor and the host gate script are each
// tested against.
//
// The rule: a master that may have granted locks and did not prove a clean, durable stop
// stays down for restart_delay (more than the largest lock TTL) from the last moment it may
// have served, so that every lock it granted has expired elsewhere before it answers again.
package hold
