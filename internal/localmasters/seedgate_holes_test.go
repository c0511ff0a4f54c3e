package localmasters

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// TestSeedGateAOFThatLoadsNothing: an appendonlydir that has entries is not an AOF that
// loads. redis-server 7.0 starts empty from a dir that holds no manifest (a stray or
// temporary file only: it makes a new AOF beside it), and from a manifest whose incr file
// was emptied while its base was the empty one made at the first start (a crash leaves every
// write of the run in the incr file). Both starts lose the fence registers and the seed
// record; the ACL file, saved by live changes with the lock users on, must not let them in.
// The control: the same master with its AOF untouched keeps its record and its lock user.
func TestSeedGateAOFThatLoadsNothing(t *testing.T) {
	tenant := redisconf.LockUser{Name: "app", Password: "app-secret-for-the-seed-gate", KeyPrefix: "app:"}
	cases := []struct {
		name     string
		damage   func(t *testing.T, aofDir string)
		wantLost bool
	}{
		{name: "control: the AOF untouched", damage: func(*testing.T, string) {}},
		{name: "no manifest, a stray file only", wantLost: true, damage: func(t *testing.T, aofDir string) {
			if err := os.RemoveAll(aofDir); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(aofDir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(aofDir, "temp-rewriteaof-bg-1.aof"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "incr files emptied over the first start's empty base", wantLost: true, damage: func(t *testing.T, aofDir string) {
			incr, err := filepath.Glob(filepath.Join(aofDir, "*.incr.aof"))
			if err != nil || len(incr) == 0 {
				t.Fatalf("no incr file in %s (%v)", aofDir, err)
			}
			for _, f := range incr {
				if err := os.Truncate(f, 0); err != nil {
					t.Fatal(err)
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Options{Masters: 1, LockUsers: []redisconf.LockUser{tenant}, ACLFile: true, SeedFences: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			m := c.Masters[0]
			admin := m.Admin()
			// What redlock_users does once the master is seeded: the record, the user on, saved.
			if err := admin.HSet(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedSeeded).Err(); err != nil {
				t.Fatal(err)
			}
			if err := admin.Do(ctx, "ACL", "SETUSER", tenant.Name, "on").Err(); err != nil {
				t.Fatal(err)
			}
			if err := admin.Do(ctx, "ACL", "SAVE").Err(); err != nil {
				t.Fatal(err)
			}
			if err := m.Kill(); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, filepath.Join(m.DataDir, redisconf.AOFDir))
			if err := m.Restart(); err != nil {
				t.Fatal(err)
			}
			s, err := audit.ReadFenceSeed(ctx, admin)
			if err != nil {
				t.Fatal(err)
			}
			// The precondition: the damage lost the record (the harness marked it unseeded).
			if lost := s.Unseeded(); lost != tc.wantLost {
				t.Fatalf("seed record after the restart: %+v; want lost=%v (the damage did not do what the case says)", s, tc.wantLost)
			}
			rdb := m.ClientAs(tenant.Name, tenant.Password)
			loginErr := rdb.Ping(ctx).Err()
			_ = rdb.Close()
			if on := loginErr == nil; on == tc.wantLost {
				t.Errorf("%s can log in: %v (%v), master unseeded: %v; lock users must be on only where the record survived",
					tenant.Name, on, loginErr, s.Unseeded())
			}
			if tc.wantLost && loginErr != nil && !strings.Contains(loginErr.Error(), "WRONGPASS") {
				t.Errorf("login refused for another reason: %v", loginErr)
			}
		})
	}
}
