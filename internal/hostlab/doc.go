// Package hostlab gives tests N real "hosts" on one Linux machine, so the kit's
// cloud-init user-data and Debian's own redis-server/valkey-server units run as they
// would on a cloud VM, and tests can break the network and the machines the way a
// data centre does.
//
// # Design
//
// A host is a systemd-nspawn --boot container: real systemd as PID 1, real
// cloud-init (NoCloud seed), real Debian units with their sandboxing. It is cheaper
// and far faster than a VM (five hosts boot, cloud-init included, in seconds, in
// under 100 MiB) and needs no docker, no host systemd and no machined: nspawn runs
// with --register=no --keep-unit inside a cgroup the harness creates for each
// container, and commands reach the container with nsenter into its PID 1's
// namespaces.
//
//   - Root file system: an overlay mount per host. The lower layer is a Debian
//     bookworm image built once with debootstrap (plus valkey from
//     bookworm-backports) and cached in /var/cache/redlock-kit/hostlab/<hash>
//     ($REDLOCK_HOSTLAB_CACHE), the hash covering the package lists and the
//     customisation; the upper layer is the host's disk. The mirror is the one this
//     machine's apt uses ($REDLOCK_HOSTLAB_MIRROR overrides). In the image
//     redis-server and valkey-server are disabled (user-data enables them) and
//     cloud-init uses NoCloud only with a module list trimmed to bootcmd,
//     write_files, runcmd and the scripts modules.
//   - Network: a "switch" namespace holding a bridge; every host and every client
//     is a network namespace with eth0 on a veth plugged into the bridge, on a
//     private /24 (10.213.X.0/24). None of it exists in the root namespace, nothing
//     routes anywhere else. Tests talk to hosts from client namespaces: with
//     ClientCommand, or in-process with DialContext (a dialer that creates its
//     sockets in the client namespace).
//
// # Faults
//
//   - Isolate(h), CutClient(c, hosts...), OneWay(from, to): nft DROP rules in a
//     bridge-family table in the switch namespace (the hosts cannot see or undo
//     them). Dropped, not rejected: connections time out as in a real partition.
//     Heal removes them all.
//   - Host.Kill(unit, sig): a signal to the unit's main process (host-side pid);
//     systemd in the container reacts as it would to a crash (Restart=always).
//   - Host.Reboot: clean reboot (systemctl reboot); services stop, disk kept.
//   - Host.PowerOff / Host.Boot: pulled plug: SIGKILL to nspawn, the container's
//     PID 1 and every process in its cgroup; no shutdown. The disk (overlay upper)
//     is kept and Boot starts it with the same instance-id, so cloud-init does not
//     re-run per-instance modules. Data the kernel already has survives (this is a
//     process crash of the whole machine, not a lost page cache).
//   - Host.Replace: the machine is gone and a new, empty one takes its address:
//     hard stop, disk thrown away, new instance-id, fresh cloud-init run.
//
// Start (tests) skips when the machine cannot run hosts unless
// REDLOCK_REQUIRE_HOSTS=1; New (tools) returns an *UnavailableError. Close removes
// everything the lab created, by pid and by recorded name, never by pattern:
// containers and their processes, mounts, cgroup directories, nft tables, network
// namespaces (with their veths and the bridge) and the work dir.
package hostlab
