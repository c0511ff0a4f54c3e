// Package audit inspects the masters of a Redlock deployment and says, in plain
// sentences, what would let two clients hold the same lock.
//
// Run contacts every endpoint as the admin user (CONFIG GET and INFO are not allowed for
// the restricted lock user), measures each master's clock against the caller's and its
// round-trip time, and compares everything with the kit's safety rules (docs/guides/safety-model.md):
// independent masters (no replication, distinct servers), AOF with appendfsync always,
// noeviction with an explicit maxmemory, a restart delay longer than the largest lock TTL,
// clocks that agree in rate, and enough reachable masters for a quorum.
//
// An unsafe deployment is not an error: Run returns a Report whose Safe is false and
// whose Problems name the master, the setting and the fix. Run returns an error only for
// a Target it cannot work with (no endpoints, a negative duration).
//
// The same code backs the provider's redlock_audit data source and `lockagent validate`.
package audit
