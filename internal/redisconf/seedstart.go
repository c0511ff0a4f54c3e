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
// unseeded; redlock_users seeds it and turns them on.
//
// One rule, as data (SeedScenarios) and in Go (ACLAtStartFor), beside the rendering of the
// ACL file it picks (Config.LockUsersOff). Implementations, each tested against
// SeedScenarios: the host gate script (its gate step, internal/hostconfig) and the kit's
// test harness (internal/localmasters, Options.SeedFences), which uses ACLAtStartFor. The
// local runtime (redlock_master) loads no ACL file (its lock users are in redis.conf) and
// does not seed, so the rule has nothing to act on there (docs/protocol.md, "Fence seeding").

// AOFDir is the AOF's directory in a data dir (appenddirname: Render keeps the default).
const AOFDir = "appendonlydir"

// AOF is what the data dir holds of the AOF when the master starts.
type AOF string

const (
	AOFFiles    AOF = "the AOF files of the last run"
	AOFDirEmpty AOF = "an empty appendonlydir"
	AOFNone     AOF = "no appendonlydir (a new, replaced or lost data disk)"
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
	{Name: "seeding off, no AOF: the ACL file is kept", SeedFences: false, AOF: AOFNone, Want: KeepACLFile},
	{Name: "seeding off, the AOF there: the ACL file is kept", SeedFences: false, AOF: AOFFiles, Want: KeepACLFile},
}

// ACLAtStartFor is the rule for a master that starts in dataDir: with seeding on and no
// entry in its AOF dir (none, empty, or unreadable: fail closed), the rendered ACL file.
func ACLAtStartFor(seedFences bool, dataDir string) ACLAtStart {
	if !seedFences {
		return KeepACLFile
	}
	if entries, err := os.ReadDir(filepath.Join(dataDir, AOFDir)); err == nil && len(entries) > 0 {
		return KeepACLFile
	}
	return RenderedACLFile
}
