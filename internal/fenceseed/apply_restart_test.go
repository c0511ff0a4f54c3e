package fenceseed_test

import (
	"context"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/acl"
	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/fenceseed"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestApplyLetsNoLockUserIntoAMasterRestartedEmptyDuringIt: redlock_users' apply seeds
// (fenceseed.Seed) and then changes the users on every master Seed found ready
// (fenceseed.LetIn). A master that restarts with its AOF lost in between comes
// back through the start gate unseeded, its lock users off; the apply's change must not
// turn them on there (its registers are empty): that master fails the apply, and the next
// one seeds it; so too between its runtime's ACL LOAD and its mark (no record, no key).
// The control: the masters that did not restart take the change and let the lock user in.
func TestApplyLetsNoLockUserIntoAMasterRestartedEmptyDuringIt(t *testing.T) {
	t.Parallel()
	c := redistest.StartKit(t, redistest.Options{Masters: 3, LockUsers: []redisconf.LockUser{tenant}, ACLFile: true, SeedFences: true})
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
	tenantIn := func(m *redistest.Master) error {
		rdb := m.ClientAs(tenant.Name, tenant.Password)
		defer rdb.Close()
		return rdb.Ping(ctx).Err()
	}
	user := acl.User{Name: tenant.Name, KeyPrefix: tenant.KeyPrefix, PasswordHashes: []string{redisconf.HashPassword(tenant.Password)}}
	change := acl.Change{Users: []acl.User{user}}

	// An update's apply: Seed finds every master seeded, so every one is ready.
	_, failed := fenceseed.Seed(ctx, target, endpoints, updated)
	if failed != nil {
		t.Fatalf("seed: %v", failed)
	}
	// Master 1 restarts with its AOF lost (its ACL file as live changes saved it) before
	// the apply's change reaches it.
	replaceEmpty(t, c.Masters[0], true)
	if s, err := audit.ReadFenceSeed(ctx, c.Masters[0].Admin()); err != nil || !s.Unseeded() {
		t.Fatalf("after the restart: %+v (%v), want unseeded", s, err)
	}
	if err := tenantIn(c.Masters[0]); err == nil {
		t.Fatalf("after the gated restart, before the change: %s logs in", tenant.Name)
	}
	changeFailed := fenceseed.LetIn(ctx, target, endpoints, endpoints, change)
	t.Logf("the apply's change: failures %v", changeFailed)
	if err := tenantIn(c.Masters[0]); err == nil {
		t.Errorf("%s logs in on %s, unseeded with empty fence registers, after the apply's change", tenant.Name, c.Masters[0].Addr)
	}
	if changeFailed[c.Masters[0].Addr] == nil {
		t.Errorf("the change reports no failure on the unseeded %s", c.Masters[0].Addr)
	}
	// The start's runtime turns the lock users off and then marks the master: a change
	// between the two finds an empty master with no record, and must not turn them on.
	if err := c.Masters[0].Admin().Del(ctx, audit.FenceSeedKey).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := fenceseed.DataKeys(ctx, c.Masters[0].Admin()); err != nil || n != 0 {
		t.Fatalf("before the mark: %d keys besides the deployment record (%v), want an empty master", n, err)
	}
	unmarkedFailed := fenceseed.LetIn(ctx, target, endpoints, endpoints, change)
	t.Logf("the change before the mark: failures %v", unmarkedFailed)
	if err := tenantIn(c.Masters[0]); err == nil || unmarkedFailed[c.Masters[0].Addr] == nil {
		t.Errorf("before the mark: %s logs in (%v), change failure %v; want refused", tenant.Name, err, unmarkedFailed[c.Masters[0].Addr])
	}
	// The control: the other masters took the change, and their lock user is in.
	for _, m := range c.Masters[1:] {
		if err := tenantIn(m); err != nil || changeFailed[m.Addr] != nil {
			t.Errorf("control: %s on %s: login %v, change %v", tenant.Name, m.Addr, err, changeFailed[m.Addr])
		}
	}
}
