package hold

import "slices"

// The storage under a master's data dir: the AOF with appendfsync always is what keeps its
// lock keys and fence registers through a crash of the machine, and only if the dir is on
// storage that keeps what was fsynced. On tmpfs or ramfs an fsync keeps nothing: after a
// reboot the master starts empty (its fence registers from zero, its hold and clean-stop
// records gone). Both runtimes publish the data dir's filesystem type in the deployment
// record (FieldDataFS), named as `stat -f -c %T` names it, and the audit reports a
// volatile one.

// VolatileFS are the filesystem types whose contents a reboot or power loss empties.
var VolatileFS = []string{"tmpfs", "ramfs"}

// Volatile reports whether fs (a FieldDataFS value) is one of VolatileFS.
func Volatile(fs string) bool { return slices.Contains(VolatileFS, fs) }

// fsNames are the names `stat -f -c %T` (GNU coreutils) gives the filesystem magic numbers
// a data dir is most likely on; DataFS gives others as a hexadecimal number.
var fsNames = map[int64]string{
	0x01021994: "tmpfs",
	0x858458f6: "ramfs",
	0xef53:     "ext2/ext3",
	0x58465342: "xfs",
	0x9123683e: "btrfs",
	0x794c7630: "overlayfs",
	0x2fc12fc1: "zfs",
	0x6969:     "nfs",
	0x65735546: "fuseblk",
	0xf2f52010: "f2fs",
}
