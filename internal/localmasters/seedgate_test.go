package localmasters

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// TestSeedGateScenarios: the harness's start gate (Options.SeedFences) against the seeding
// rule's table, which the host gate script runs against too
// (internal/hostconfig: TestGateTurnsLockUsersOffWithoutAOF). A real master, its lock user
// turned on and saved in its ACL file as live changes do it, and marked seeded, is killed
// (or shut down cleanly, for the scenarios that need a clean stop); its data dir is left with
// the scenario's AOF, and it is started again: the lock user can log in only where the table
// keeps the ACL file, and a master started with the rendered one is marked unseeded (a
// restored one although its AOF says seeded). The scenarios with seeding off are the
// controls: their ACL file is kept.
func TestSeedGateScenarios(t *testing.T) {
	tenant := redisconf.LockUser{Name: "app", Password: "app-secret-for-the-seed-gate", KeyPrefix: "app:"}
	for _, tc := range redisconf.SeedScenarios {
		t.Run(tc.Name, func(t *testing.T) {
			c, err := New(Options{Masters: 1, LockUsers: []redisconf.LockUser{tenant}, ACLFile: true, SeedFences: tc.SeedFences})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			m := c.Masters[0]
			admin := m.Admin()
			// What redlock_users does once the master is seeded: the user on, saved.
			if err := admin.Do(ctx, "ACL", "SETUSER", tenant.Name, "on").Err(); err != nil {
				t.Fatal(err)
			}
			if err := admin.Do(ctx, "ACL", "SAVE").Err(); err != nil {
				t.Fatal(err)
			}
			if err := admin.HSet(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedSeeded).Err(); err != nil {
				t.Fatal(err)
			}
			stop := m.Kill
			if tc.AOF == redisconf.AOFAfterCleanStop || tc.AOF == redisconf.AOFRestored {
				stop = m.Shutdown
			}
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			aofDir := filepath.Join(m.DataDir, redisconf.AOFDir)
			switch tc.AOF {
			case redisconf.AOFRestored:
				err = restoreCopy(aofDir)
			case redisconf.AOFNone:
				err = os.RemoveAll(aofDir)
			case redisconf.AOFDirEmpty:
				if err = os.RemoveAll(aofDir); err == nil {
					err = os.Mkdir(aofDir, 0o700)
				}
			case redisconf.AOFNoManifest:
				err = os.Remove(filepath.Join(aofDir, redisconf.AOFManifest))
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := redisconf.ACLAtStartFor(tc.SeedFences, m.DataDir, tc.AOF == redisconf.AOFRestored); got != tc.Want {
				t.Errorf("ACLAtStartFor: %q, want %q", got, tc.Want)
			}
			if err := m.Restart(); err != nil {
				t.Fatal(err)
			}
			rdb := m.ClientAs(tenant.Name, tenant.Password)
			loginErr := rdb.Ping(ctx).Err()
			_ = rdb.Close()
			if on := loginErr == nil; on != (tc.Want == redisconf.KeepACLFile) {
				t.Errorf("%s can log in: %v (%v); want %v (%s)", tenant.Name, on, loginErr, tc.Want == redisconf.KeepACLFile, tc.Want)
			}
			if tc.Want == redisconf.RenderedACLFile {
				if s, err := audit.ReadFenceSeed(ctx, admin); err != nil || !s.Unseeded() {
					t.Errorf("started with the rendered ACL file: %s is %+v (%v), want unseeded", audit.FenceSeedKey, s, err)
				}
			}
		})
	}
}

// restoreCopy puts a copy of the newest AOF file in its place, as a restore from a backup
// taken since the last write does: the same bytes in a new file (another inode).
func restoreCopy(aofDir string) error {
	entries, err := os.ReadDir(aofDir)
	if err != nil || len(entries) == 0 {
		return fmt.Errorf("no AOF files in %s to restore (%v)", aofDir, err)
	}
	path := filepath.Join(aofDir, entries[len(entries)-1].Name())
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
