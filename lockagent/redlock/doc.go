// Package redlock is a Redlock client over N independent Redis masters (go-redis/v9).
//
// A lock is acquired when a majority (N/2+1) of the masters accepted
// SET key token NX PX ttl, and only for its validity: TTL - elapsed - (TTL*DriftFactor + 2ms).
// Release and extension are compare-and-delete / compare-and-pexpire Lua scripts run on
// every master. Every acquisition also gets a fencing token (Lock.Fence) from a quorum
// register stored next to the key. See SPEC.md for the algorithm and the deployment it
// needs.
//
// A Client is safe for concurrent use.
package redlock
