package redisconf

import (
	"os"
	"path/filepath"
)

// The start's other rule, for masters whose fence registers are seeded (a host rendered with
// seed_fences): the registers live in the AOF, so a data dir with no AOF has none, whatever
// its ACL file says. Live changes (redlock_users) save that file with the lock users on; a
// master whose AOF was lost but whose ACL file was kept would let them in unseeded, and its
// empty registers would vote fences backwards until the next apply. So such a start makes
// the ACL file again from the rendered one (lock users off) and the master marks itself
// unseeded; redlock_users seeds it and turns them on. A restore is a replacement too: AOF
// files other than those a clean stop left (a backup restored into the data dir) bring the
// backup's fence registers, below fences the master gave since, and the backup's seed record
// (seeded): such a start also makes the ACL file again, and marks the master unseeded
// whatever record it loaded.
//
// One rule, as data (SeedScenarios) and in Go (ACLAtStartFor), beside the rendering of the
// ACL file it picks (Config.LockUsersOff). Implementations, each tested against
// SeedScenarios: the host gate script (its gate step, internal/hostconfig) and the kit's
// test harness (internal/localmasters, Options.SeedFences), which uses ACLAtStartFor. The
// local runtime (redlock_master) loads no ACL file (its lock users are in redis.conf) and
// does not seed, so the rule has nothing to act on there (docs/protocol.md, "Fence seeding").

// AOFDir is the AOF's directory in a data dir (appenddirname: Render keeps the default).
const AOFDir = "appendonlydir"

// AOFManifest is the AOF's manifest in AOFDir (appendfilename: Render keeps the default).
// redis-server 7 loads an AOF through its manifest only: a dir with other files and no
// manifest (a stray or temporary file) starts empty, and a new AOF is made beside them.
const AOFManifest = "appendonly.aof.manifest"

// AOF is what the data dir holds of the AOF when the master starts.
type AOF string

const (
	AOFFiles      AOF = "the AOF files of the last run"
	AOFDirEmpty   AOF = "an empty appendonlydir"
	AOFNoManifest AOF = "an appendonlydir with files but no manifest (it loads nothing)"
	AOFNone       AOF = "no appendonlydir (a new, replaced or lost data disk)"
	// AOFAfterCleanStop: the files a clean stop left, as its clean marker names them.
	AOFAfterCleanStop AOF = "the AOF files a clean stop left, its marker there"
	// AOFRestored: after a clean stop, files other than those its marker names (a backup
	// restored into the data dir, the master's own seed record in it).
	AOFRestored AOF = "AOF files restored after a clean stop (other files than its marker names)"
)

// ACLAtStart is what the start does with the master's ACL file.
type ACLAtStart string

const (
	// KeepACLFile: the file as live changes saved it.
	KeepACLFile ACLAtStart = "keep the ACL file"
	// RenderedACLFile: the file made again from the rendered one, lock users off until
	// seeding turns them on; the master marks itself unseeded.
	RenderedACLFile ACLAtStart = "the rendered ACL file, lock users off"
)

// SeedScenario is one case of the rule: whether the master seeds its fence registers, the
// AOF at its start (its ACL file was saved with the lock users on), and what the start must
// do with that file.
type SeedScenario struct {
	Name       string
	SeedFences bool
	AOF        AOF
	Want       ACLAtStart
}

// SeedScenarios is the table.
var SeedScenarios = []SeedScenario{
	{Name: "seeding on, the AOF there: the ACL file is kept", SeedFences: true, AOF: AOFFiles, Want: KeepACLFile},
	{Name: "seeding on, AOF lost and ACL file kept: lock users off", SeedFences: true, AOF: AOFNone, Want: RenderedACLFile},
	{Name: "seeding on, an empty appendonlydir: lock users off", SeedFences: true, AOF: AOFDirEmpty, Want: RenderedACLFile},
	{Name: "seeding on, an appendonlydir without its manifest: lock users off", SeedFences: true, AOF: AOFNoManifest, Want: RenderedACLFile},
	{Name: "seeding off, no AOF: the ACL file is kept", SeedFences: false, AOF: AOFNone, Want: KeepACLFile},
	{Name: "seeding off, the AOF there: the ACL file is kept", SeedFences: false, AOF: AOFFiles, Want: KeepACLFile},
	{Name: "seeding on, the AOF a clean stop left: the ACL file is kept", SeedFences: true, AOF: AOFAfterCleanStop, Want: KeepACLFile},
	{Name: "seeding on, a backup restored after a clean stop: lock users off", SeedFences: true, AOF: AOFRestored, Want: RenderedACLFile},
	{Name: "seeding off, a backup restored after a clean stop: the ACL file is kept", SeedFences: false, AOF: AOFRestored, Want: KeepACLFile},
}

// ACLAtStartFor is the rule for a master that starts in dataDir: with seeding on, restored
// (the runtime's clean marker, written on this machine for dataDir, names other AOF files
// than those there now), or no AOF manifest (no dir, an empty one, files without the
// manifest, or unreadable: fail closed), the rendered ACL file. Files can be there and still
// load nothing (an incr file emptied over an empty base): no rule on files sees that, so a
// runtime also turns the lock users off after the start when the master loaded no seed
// record (MarkUnseeded).
func ACLAtStartFor(seedFences bool, dataDir string, restored bool) ACLAtStart {
	if !seedFences {
		return KeepACLFile
	}
	if restored {
		return RenderedACLFile
	}
	if fi, err := os.Stat(filepath.Join(dataDir, AOFDir, AOFManifest)); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
		return KeepACLFile
	}
	return RenderedACLFile
}

// MarkUnseeded is the rule after the start of a master with seeding on: whether its lock
// users must be turned off (the rendered ACL file, loaded) and its record set to unseeded,
// whatever it says. A master with no seed record (hadRecord false) loaded none: a seeded one
// has it in its AOF, so its data is gone whatever its files looked like. A restored one
// (ACLAtStartFor's restored) loaded the backup's record. Otherwise the record is only
// created when missing (unseeded), and never overwritten.
func MarkUnseeded(hadRecord, restored bool) bool { return !hadRecord || restored }
