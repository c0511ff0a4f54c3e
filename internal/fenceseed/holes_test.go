package fenceseed_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/acl"
	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/fenceseed"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// The lock the scenarios fence.
const holeKey = "app:ledger"

// TestFenceAfterEmptyMasterLetIn: three masters, all seeded. A holder takes the lock many
// times while master 3 is away (the registers go up on masters 1 and 2 only, as they do
// whenever one master misses a holder's writes). Master 1 then comes back empty, and a
// new client takes the lock on masters 1 and 3 (master 2 away): its fence must be above
// every earlier fence. It is when master 1 is marked unseeded before redlock_users runs
// (the control), and when redlock_users runs in the window between the new server's start
// and its runtime's mark (ExecStartPost: the functions step's HSETNX): Seed refuses
// the empty master with no record (ErrUnmarked), so its lock users stay off until the
// next apply seeds it (before, Seed counted it as seeded, a source, and the apply turned
// its lock users on: fence 4 after 23).
//
// The master may also lose its AOF but keep its ACL file, which live changes saved with
// the lock users on. Started through the start gate's seeding rule (redisconf.SeedScenarios; the
// harness applies it with Options.SeedFences, as a host's gate does with seed_fences), the
// ACL file is made again with the lock users off and the master marks itself unseeded: no
// lock user gets in until the next apply seeds it, and the fence goes on. The negative
// control starts it without the gate: its lock users log in unseeded and its empty
// register votes the fence backwards (the regression, asserted).
func TestFenceAfterEmptyMasterLetIn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		gate    bool   // the harness applies the start gate's seeding rule (Options.SeedFences)
		aclKept bool   // the ACL file as it was (lock users on) instead of the rendered one (off)
		markAt  string // when the runtime marks it unseeded by hand: "start", "after-apply" (too late), or "" (the gate does)
		// backwards: the negative control, where the fence must go backwards.
		backwards bool
	}{
		{name: "control: marked before redlock_users runs", markAt: "start"},
		{name: "redlock_users runs before the runtime marks the master", markAt: "after-apply"},
		{name: "AOF lost, ACL file kept, the start gate: lock users off until the apply seeds it", gate: true, aclKept: true},
		{name: "negative control: AOF lost, ACL file kept, no start gate: the fence goes backwards", markAt: "start", aclKept: true, backwards: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := redistest.StartKit(t, redistest.Options{Masters: 3, LockUsers: []redisconf.LockUser{tenant}, ACLFile: true, SeedFences: tc.gate})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			target := acl.Target{Password: redistest.AdminPassword}
			endpoints := c.Addrs()
			for _, m := range c.Masters {
				if err := fenceseed.MarkUnseeded(ctx, m.Admin()); err != nil {
					t.Fatal(err)
				}
			}
			if done, failed := redlockUsersApply(ctx, t, target, endpoints, created); failed != nil || len(done) != 3 {
				t.Fatalf("first seeding: %d seeded, failures %v", len(done), failed)
			}

			// Every master sees the first holds; then master 3 misses the rest.
			holder := newClient(t, c)
			for i := 0; i < 3; i++ {
				takeFence(ctx, t, holder, holeKey)
			}
			// Down, not paused: a paused master would run the writes queued on its sockets
			// when it resumes.
			if err := c.Masters[2].Kill(); err != nil {
				t.Fatal(err)
			}
			var last uint64
			for i := 0; i < 20; i++ {
				last = takeFence(ctx, t, holder, holeKey)
			}
			time.Sleep(lockTTL) // its restart delay
			if err := c.Masters[2].Restart(); err != nil {
				t.Fatal(err)
			}

			replaceEmpty(t, c.Masters[0], tc.aclKept)
			if tc.markAt == "start" {
				if err := fenceseed.MarkUnseeded(ctx, c.Masters[0].Admin()); err != nil {
					t.Fatal(err)
				}
			}
			if tc.gate {
				// Before any apply: unseeded, and its lock user cannot log in.
				if s, err := audit.ReadFenceSeed(ctx, c.Masters[0].Admin()); err != nil || s.State != audit.FenceSeedUnseeded {
					t.Fatalf("after the gated start: %s is %+v (%v), want %s", audit.FenceSeedKey, s, err, audit.FenceSeedUnseeded)
				}
				rdb := c.Masters[0].ClientAs(tenant.Name, tenant.Password)
				err := rdb.Ping(ctx).Err()
				_ = rdb.Close()
				if err == nil {
					t.Fatalf("after the gated start, before any apply: %s logged in on the unseeded master", tenant.Name)
				}
				t.Logf("before the apply, %s on the unseeded master: %v", tenant.Name, err)
			}
			if !tc.aclKept || tc.gate {
				done, failed := redlockUsersApply(ctx, t, target, endpoints, updated)
				t.Logf("redlock_users' apply: %d seeded %v, failures %v", len(done), done, failed)
			}
			if tc.markAt == "after-apply" {
				if err := fenceseed.MarkUnseeded(ctx, c.Masters[0].Admin()); err != nil {
					t.Fatal(err)
				}
				// The next apply, after the runtime marked it.
				done, failed := redlockUsersApply(ctx, t, target, endpoints, updated)
				t.Logf("the next apply: %d seeded %v, failures %v", len(done), done, failed)
			}

			pause(t, c.Masters[1])
			fresh := newClient(t, c) // a process that never saw the lock
			got := takeFence(ctx, t, fresh, holeKey)
			resume(t, c.Masters[1])
			t.Logf("last fence before the replacement %d, first fence after it %d", last, got)
			switch {
			case tc.backwards && got > last:
				t.Fatalf("negative control: fence %d after %d; want the regression (the unseeded master's empty register voting)", got, last)
			case !tc.backwards && got <= last:
				t.Fatalf("fence went backwards: %d after %d (the replaced master's empty register voted)", got, last)
			}
		})
	}
}

// TestFenceAfterEveryMasterReplaced: three masters, all seeded by redlock_users' first
// apply (a create), a lock fenced up to 20. Then the masters are replaced (new disks), each
// after the last; no fence after the replacements may be at or below 20. The control
// replaces one master at a time, each seeded by an update before the next goes: the fence
// goes on. Replacing every master before redlock_users runs again (a change that replaces
// every host in one apply, where redlock_users runs after the hosts) leaves every master
// unseeded: an update's Seed refuses every one (ErrEveryMasterUnseeded, naming the fix)
// and no lock user is let in. Before, Seed took them for a new deployment: every register
// from 0, and the lock's fences started again at 1.
func TestFenceAfterEveryMasterReplaced(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		together bool
	}{
		{name: "control: one at a time, each seeded before the next"},
		{name: "every master replaced before the apply: refused", together: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := redistest.StartKit(t, redistest.Options{Masters: 3, LockUsers: []redisconf.LockUser{tenant}, ACLFile: true})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			target := acl.Target{Password: redistest.AdminPassword}
			endpoints := c.Addrs()
			for _, m := range c.Masters {
				if err := fenceseed.MarkUnseeded(ctx, m.Admin()); err != nil {
					t.Fatal(err)
				}
			}
			if done, failed := redlockUsersApply(ctx, t, target, endpoints, created); failed != nil || len(done) != 3 {
				t.Fatalf("first seeding: %d seeded, failures %v", len(done), failed)
			}
			holder := newClient(t, c)
			var last uint64
			for i := 0; i < 20; i++ {
				last = takeFence(ctx, t, holder, holeKey)
			}
			for _, m := range c.Masters {
				replaceEmpty(t, m, false)
				if err := fenceseed.MarkUnseeded(ctx, m.Admin()); err != nil {
					t.Fatal(err)
				}
				if !tc.together {
					if done, failed := redlockUsersApply(ctx, t, target, endpoints, updated); failed != nil || len(done) != 1 {
						t.Fatalf("seeding %s: %d seeded, failures %v", m.Addr, len(done), failed)
					}
				}
			}
			if tc.together {
				done, failed := redlockUsersApply(ctx, t, target, endpoints, updated)
				for _, s := range done {
					t.Logf("%s: %s", s.Endpoint, s.Reason)
				}
				if failed == nil {
					t.Fatalf("every master replaced before an update's apply: seeded %v, want every master refused", done)
				}
				// Every register is gone: nothing may be let in silently. Each master is
				// refused, named, with the fix.
				for _, ep := range endpoints {
					err := failed[ep]
					if !errors.Is(err, fenceseed.ErrEveryMasterUnseeded) || !strings.Contains(err.Error(), ep) ||
						!strings.Contains(err.Error(), "-replace=") {
						t.Errorf("%s: %v; want ErrEveryMasterUnseeded naming it and the fix (-replace=)", ep, err)
					}
				}
				if len(done) != 0 {
					t.Errorf("seeded %v beside the refusal", done)
				}
				lock, err := newClient(t, c).TryAcquire(ctx, holeKey, lockTTL)
				if err == nil {
					t.Errorf("a lock taken after the refusal, fence %d (last before the replacements %d)", lock.Fence(), last)
				}
				t.Logf("the apply refused: %v; a lock after it: %v", failed, err)
				return
			}
			fresh := newClient(t, c)
			got := takeFence(ctx, t, fresh, holeKey)
			t.Logf("last fence before the replacements %d, first fence after them %d", last, got)
			if got <= last {
				t.Fatalf("fence went backwards: %d after %d", got, last)
			}
		})
	}
}

// What redlock_users' apply passes Seed: its create may seed a new deployment, an update
// may not.
var (
	created = fenceseed.Options{NewDeployment: true}
	updated = fenceseed.Options{}
)

// redlockUsersApply does what redlock_users' apply does (provider/resource_users.go):
// fenceseed.Seed, then the lock user set (on) on every master Seed did not fail.
func redlockUsersApply(ctx context.Context, t *testing.T, target acl.Target, endpoints []string, opts fenceseed.Options) ([]fenceseed.Seeded, map[string]error) {
	t.Helper()
	done, failed := fenceseed.Seed(ctx, target, endpoints, opts)
	var ready []string
	for _, ep := range endpoints {
		if failed[ep] == nil {
			ready = append(ready, ep)
		}
	}
	user := acl.User{Name: tenant.Name, KeyPrefix: tenant.KeyPrefix, PasswordHashes: []string{redisconf.HashPassword(tenant.Password)}}
	for ep, err := range fenceseed.LetIn(ctx, target, endpoints, ready, acl.Change{Users: []acl.User{user}}) {
		if failed == nil {
			failed = map[string]error{}
		}
		failed[ep] = err
	}
	return done, failed
}

// replaceEmpty brings m back with no data after the largest TTL, as a new host: its ACL
// file rendered with the lock users off, or (aclKept) the file as it was.
func replaceEmpty(t *testing.T, m *redistest.Master, aclKept bool) {
	t.Helper()
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(m.DataDir, "appendonlydir")); err != nil {
		t.Fatal(err)
	}
	if !aclKept {
		rendered, err := redisconf.Config{AdminPassword: redistest.AdminPassword, LockUsers: []redisconf.LockUser{tenant}, LockUsersOff: true}.RenderACL()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(m.DataDir, "users.acl"), []byte(rendered), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(lockTTL) // the restart delay: every lock it could know has expired
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
}

// takeFence takes key, releases it, and returns its fence.
func takeFence(ctx context.Context, t *testing.T, client *redlock.Client, key string) uint64 {
	t.Helper()
	var lock *redlock.Lock
	err := patiently(ctx, func() (err error) {
		lock, err = client.TryAcquire(ctx, key, lockTTL)
		return err
	})
	if err != nil {
		t.Fatalf("acquire %s: %v", key, err)
	}
	f := lock.Fence()
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("release %s: %v", key, err)
	}
	return f
}

func pause(t *testing.T, m *redistest.Master) {
	t.Helper()
	if err := m.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Resume() })
}

func resume(t *testing.T, m *redistest.Master) {
	t.Helper()
	if err := m.Resume(); err != nil {
		t.Fatal(err)
	}
}

// TestSeedRefusesUnmarkedEmptyMaster: an empty master with no record, where another master
// has one, is refused (ErrUnmarked) and is no source; with data, or where no master has a
// record (a deployment that does not seed), it is left alone as before.
func TestSeedRefusesUnmarkedEmptyMaster(t *testing.T) {
	t.Parallel()
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	target := acl.Target{Password: redistest.AdminPassword}
	endpoints := c.Addrs()
	empty := c.Masters[0]
	if err := empty.Admin().FlushAll(ctx).Err(); err != nil { // flushed, or a server its runtime has not marked yet
		t.Fatal(err)
	}

	if done, failed := fenceseed.Seed(ctx, target, endpoints, fenceseed.Options{}); done != nil || failed != nil {
		t.Fatalf("no master has a record (a deployment that does not seed): want nothing done, got %v, %v", done, failed)
	}
	for _, m := range c.Masters[1:] {
		if err := m.Admin().HSet(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedSeeded).Err(); err != nil {
			t.Fatal(err)
		}
	}
	_, failed := fenceseed.Seed(ctx, target, endpoints, fenceseed.Options{})
	if !errors.Is(failed[empty.Addr], fenceseed.ErrUnmarked) || len(failed) != 1 {
		t.Fatalf("the others seeded, master 1 empty with no record: want ErrUnmarked for %s only, got %v", empty.Addr, failed)
	}
	if err := empty.Admin().Set(ctx, "app:ledger:fence", 5, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if done, failed := fenceseed.Seed(ctx, target, endpoints, fenceseed.Options{}); done != nil || failed != nil {
		t.Fatalf("master 1 holds data (a master from before seeding): want it left alone, got %v, %v", done, failed)
	}
}

// TestLockUserCannotTouchSeedRecord: a lock user must not reach the seeding record. A
// tenant whose prefix covers it ("redlock", "redlock-kit:") or lies inside the kit's keys
// could DEL it (an unseeded master would then count as seeded, where its users are on: AOF
// lost, ACL file kept, and the audit would no longer see it) or SET it to a string, after
// which neither Seed nor the runtime's HSETNX at the next start can use it. Such prefixes
// are refused wherever a lock user is defined: redis.conf, and ACL SETUSER as redlock_users
// applies it (here). Were one let through, the test logs in as it and tries the DEL. The
// control: the tenant "app:" is installed and its DEL is refused.
func TestLockUserCannotTouchSeedRecord(t *testing.T) {
	t.Parallel()
	c := redistest.StartKit(t, redistest.Options{Masters: 1, LockUsers: []redisconf.LockUser{tenant}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := c.Masters[0]
	if err := fenceseed.MarkUnseeded(ctx, m.Admin()); err != nil {
		t.Fatal(err)
	}
	control := m.ClientAs(tenant.Name, tenant.Password)
	t.Cleanup(func() { _ = control.Close() })
	if err := control.Del(ctx, audit.FenceSeedKey).Err(); err == nil {
		t.Fatalf("control: %s (prefix %q) deleted %s", tenant.Name, tenant.KeyPrefix, audit.FenceSeedKey)
	}

	target := acl.Target{Password: redistest.AdminPassword}
	for _, prefix := range []string{"redlock", "redlock-kit:", "redlock-kit:fence-seed"} {
		t.Run(prefix, func(t *testing.T) {
			wide := redisconf.LockUser{Name: "wide", Password: "wide-secret-for-the-seed-record", KeyPrefix: prefix}
			if _, err := (redisconf.Config{AdminPassword: redistest.AdminPassword, LockUsers: []redisconf.LockUser{tenant, wide}}).Render(); err == nil {
				t.Errorf("redis.conf with lock user prefix %q rendered", prefix)
			}
			user := acl.User{Name: wide.Name, KeyPrefix: prefix, PasswordHashes: []string{redisconf.HashPassword(wide.Password)}}
			err := target.ApplyChange(ctx, m.Addr, acl.Change{Users: []acl.User{user}})
			if err != nil {
				if !strings.Contains(err.Error(), redisconf.KitKeyPrefix) {
					t.Errorf("the refusal does not name the kit's keys (%s): %v", redisconf.KitKeyPrefix, err)
				}
				t.Logf("refused: %v", err)
				return
			}
			rdb := m.ClientAs(wide.Name, wide.Password)
			t.Cleanup(func() { _ = rdb.Close() })
			if err := rdb.Del(ctx, audit.FenceSeedKey).Err(); err == nil {
				t.Errorf("lock user %s (prefix %q) was installed and deleted %s", wide.Name, prefix, audit.FenceSeedKey)
			} else {
				t.Errorf("lock user %s (prefix %q) was installed (its DEL failed: %v)", wide.Name, prefix, err)
			}
		})
	}
	if state, err := m.Admin().HGet(ctx, audit.FenceSeedKey, audit.FenceSeedStateField).Result(); err != nil || state != audit.FenceSeedUnseeded {
		t.Errorf("%s after the attempts: state %q, %v; want %q", audit.FenceSeedKey, state, err, audit.FenceSeedUnseeded)
	}
}
