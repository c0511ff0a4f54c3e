// Package hostconfig renders one Redlock master for a host the user runs: Debian's
// redis-server or valkey-server package under systemd, provisioned by cloud-init.
//
// The rendering takes the same master.Spec as the local runtime. What it writes:
//
//   - the server config: internal/redisconf's safe settings (AOF appendfsync always,
//     no-appendfsync-on-rewrite no, noeviction with an explicit maxmemory, no RDB
//     snapshots, protected mode, no replication), bound to the host's address;
//   - an ACL file with every user, the admin (default) included, as SHA-256 hashes only:
//     setup copies it into the data dir, where the server loads it and ACL SAVE rewrites
//     it after a live change (internal/acl), and adds the hash of the host's own admin
//     password, which it makes at first boot and which never leaves the host: the
//     user-data holds no password;
//   - a drop-in for the package's own unit (its sandbox is kept) that does the delayed
//     restart with systemd's primitives: Restart=always with a short RestartSec, an
//     ExecStartPre gate that holds a start until every lock the last run granted has
//     expired, an ExecStopPost step that records how the run ended, an ExecStop step that
//     rewrites the AOF and shuts down, start limits that never give up on a held start;
//   - the policy script those steps run (redlock-master.sh, embedded) and its settings,
//     with the hooks as shell functions that get the same REDLOCK_* environment as the
//     local supervisor gives them;
//   - with the exporters (exporters.go), the master's state for node_exporter's textfile
//     collector (StateMetricsPath), which the script rewrites at every gate decision, start
//     and stop, and a timer every 30 s; a write that fails is logged and changes nothing;
//     and redis_exporter's environment, to which setup adds a monitoring password the host
//     makes (its hash one more of the monitoring user's, as for the admin);
//   - with TLS, the certificates, and the server key unless TLS.KeyOnHost: then the
//     operator's provisioning delivers it, and the gate keeps the master down until it has.
//
// Fail-closed: only a clean, durable stop recorded on this machine, data dir and boot starts
// at once. An unclean stop holds restart_delay from the exit (CLOCK_BOOTTIME, same boot);
// anything else (a reboot, a power loss, a new, cloned or replaced host, a record that
// cannot be read) holds restart_delay from now, so a new cluster waits one restart_delay
// before it grants anything; a record that cannot be written keeps the master down. The
// policy and its records: docs/guides/restart-hold.md; its scenarios: internal/master/hold.
//
// The result comes as #cloud-config user-data, its gzip+base64 form (refused above 16 KiB,
// EC2's limit; cloud-init unpacks gzipped user-data), and a list of files and commands for
// other tools (Packer, Ansible).
package hostconfig
