package audit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

var tenants = []redisconf.LockUser{
	{Name: "billing", Password: "billing-secret-0123456789", KeyPrefix: "billing:"},
	{Name: "orders", Password: "orders-secret-0123456789", KeyPrefix: "orders:"},
}

// tenantClient is a Redlock client of one tenant: its user, its prefix.
func tenantClient(t *testing.T, c *redistest.Cluster, u redisconf.LockUser) *redlock.Client {
	t.Helper()
	var masters []redis.UniversalClient
	for _, m := range c.Masters {
		rc := m.ClientAs(u.Name, u.Password)
		t.Cleanup(func() { rc.Close() })
		masters = append(masters, rc)
	}
	lc, err := redlock.New(masters, redlock.Options{KeyPrefix: u.KeyPrefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Close() })
	return lc
}

// isNoPerm reports an ACL refusal: NOPERM, or the error a script gets when a command in it
// touches a key its caller may not ("The user executing the script can't access ...").
func isNoPerm(err error) bool {
	return err != nil && (strings.HasPrefix(err.Error(), "NOPERM") || strings.Contains(err.Error(), "user executing the script can't access"))
}

// TestTenantCannotTouchAnotherTenantsLock is the cross-tenant attack suite: with one lock
// user per application, orders tries every way a lock client found to break a lock it does
// not own (read the token, delete it, overwrite it with no TTL, expire it, lower the fence,
// script over it, listen to or fake its release) against billing's held lock, on every
// master. Each is refused with NOPERM, and billing's lock and fence come through intact.
// The same actions by billing's own user are possible: clients that share a user trust
// each other (docs/guides/security.md, "Lock users").
func TestTenantCannotTouchAnotherTenantsLock(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3, LockUsers: tenants})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	billing, orders := tenantClient(t, c, tenants[0]), tenantClient(t, c, tenants[1])

	// Both tenants lock the same name at once: different keys, no interference.
	held, err := billing.Acquire(ctx, "nightly", 30*time.Second)
	if err != nil {
		t.Fatalf("billing acquires: %v", err)
	}
	if held.Key() != "billing:nightly" {
		t.Fatalf("billing's key is %q, want billing:nightly (the prefix comes from the client)", held.Key())
	}
	theirs, err := orders.Acquire(ctx, "nightly", 30*time.Second)
	if err != nil {
		t.Fatalf("orders acquires its own nightly while billing holds its own: %v", err)
	}

	key := held.Key()
	attacks := []struct {
		what string
		args []any
	}{
		{"read the token", []any{"GET", key}},
		{"delete the lock", []any{"DEL", key}},
		{"overwrite it with no TTL", []any{"SET", key, "stolen"}},
		{"take it when free", []any{"SET", key, "stolen", "NX", "PX", "30000"}},
		{"expire it", []any{"PEXPIRE", key, "1"}},
		{"read its TTL", []any{"PTTL", key}},
		{"lower its fencing register", []any{"SET", key + redlock.FenceSuffix, "0"}},
		{"fake its release notice", []any{"PUBLISH", key + redlock.ReleaseChannelSuffix, held.Token()}},
		{"delete it from a script", []any{"EVAL", `return redis.call("del", KEYS[1])`, "1", key}},
		{"delete it from a script without declaring it", []any{"EVAL", `return redis.call("del", "` + key + `")`, "0"}},
		// The kit's own functions run with the caller's rights too: the DEL inside is refused.
		{"release it with the kit's function", []any{"FCALL", redlock.FunctionLibrary().Function("release"), "1", key, held.Token(), "", ""}},
		{"extend it with the kit's function", []any{"FCALL", redlock.FunctionLibrary().Function("extend"), "1", key, held.Token(), "30000"}},
	}
	for i, m := range c.Masters {
		rc := m.ClientAs(tenants[1].Name, tenants[1].Password)
		for _, a := range attacks {
			if err := rc.Do(ctx, a.args...).Err(); !isNoPerm(err) {
				t.Errorf("master %d: orders could %s of billing (%v): got %v, want an ACL refusal", i, a.what, a.args[0], err)
			}
		}
		// Listening to billing's releases: the subscription itself is refused.
		ps := rc.Subscribe(ctx, key+redlock.ReleaseChannelSuffix)
		if _, err := ps.Receive(ctx); !isNoPerm(err) {
			t.Errorf("master %d: orders subscribed to billing's release channel: %v, want NOPERM", i, err)
		}
		ps.Close()
		rc.Close()
	}
	// billing still holds it everywhere, with its fence.
	for i, m := range c.Masters {
		if v, err := m.Admin().Get(ctx, key).Result(); err != nil || v != held.Token() {
			t.Errorf("master %d: billing's key after the attacks = %q, %v; want its token", i, v, err)
		}
	}
	if err := held.Extend(ctx, 30*time.Second); err != nil {
		t.Fatalf("billing extends after the attacks: %v", err)
	}

	// Within one tenant the same actions work: that is why each application needs its own user.
	own := c.Masters[0].ClientAs(tenants[0].Name, tenants[0].Password)
	defer own.Close()
	if v, err := own.Get(ctx, key).Result(); err != nil || v != held.Token() {
		t.Errorf("billing's own user reads its token: %q, %v", v, err)
	}
	if err := own.Del(ctx, key).Err(); err != nil {
		t.Errorf("billing's own user deletes its lock on one master: %v (within a tenant this is possible)", err)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatalf("billing releases: %v", err)
	}
	// Both locks took 30 s, above the deployment's max_lock_ttl: the audit samples every
	// lock user's keys and would rightly report a held one.
	if err := theirs.Release(ctx); err != nil {
		t.Fatalf("orders releases: %v", err)
	}

	// The audit proves the isolation with ACL DRYRUN.
	tgt := target(c)
	tgt.LockUsername, tgt.LockPassword = tenants[0].Name, tenants[0].Password
	rep := run(t, tgt)
	for _, m := range rep.Masters {
		if !m.TenantsChecked || len(m.LockUsers) != 2 || len(m.TenantLeaks) != 0 {
			t.Errorf("audit of %s: checked %v, users %+v, leaks %q; want 2 isolated users", m.Endpoint, m.TenantsChecked, m.LockUsers, m.TenantLeaks)
		}
	}
	if !rep.Safe {
		t.Errorf("isolated tenants audited unsafe: %q", rep.Problems)
	}
}

// TestAuditFindsTenantsThatAreNotIsolated shows the isolation check can fail: a user with
// every key next to the tenants, and a tenant whose pattern reaches another's keys, are
// both reported as problems.
func TestAuditFindsTenantsThatAreNotIsolated(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3, LockUsers: tenants})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, m := range c.Masters {
		// A shared user left over from before the tenants, with every key.
		if err := m.Admin().ACLSetUser(ctx, "shared", (redisconf.LockUser{Name: "shared", Password: "shared-secret-0123456789"}).ACLRules()...).Err(); err != nil {
			t.Fatal(err)
		}
		// orders widened to every key starting with "o" or "b" by hand.
		if err := m.Admin().ACLSetUser(ctx, "orders", "~b*").Err(); err != nil {
			t.Fatal(err)
		}
	}
	rep := run(t, target(c))
	if rep.Safe {
		t.Fatal("audit says SAFE with a user that reaches every key and a tenant that reaches another's")
	}
	all := strings.Join(rep.Problems, "\n")
	for _, want := range []string{"shared reaches every key", "orders can read its token (GET), delete it (DEL)", "reset its fencing register (SET)", "of billing's locks"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	for _, m := range rep.Masters {
		if len(m.TenantLeaks) == 0 {
			t.Errorf("%s: no tenant leak recorded", m.Endpoint)
		}
	}
	_ = audit.ClassDenied
}

// TestAnotherTenantsRightsAreChecked: the audit run for billing (its lock credentials)
// still checks orders, which may FLUSHALL (billing's keys with it), REPLICAOF, SHUTDOWN and
// FUNCTION LOAD; the isolated tenants with only the lock commands are the negative control.
func TestAnotherTenantsRightsAreChecked(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3, LockUsers: tenants})
	tgt := target(c)
	tgt.LockUsername, tgt.LockPassword = tenants[0].Name, tenants[0].Password
	if rep := run(t, tgt); !rep.Safe {
		t.Fatalf("isolated tenants reported unsafe:\n%s", strings.Join(rep.Problems, "\n"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, m := range c.Masters {
		if err := m.Admin().ACLSetUser(ctx, "orders", "+flushall", "+replicaof", "+shutdown", "+function|load").Err(); err != nil {
			t.Fatal(err)
		}
	}
	rep := run(t, tgt)
	if !hasProblem(rep.Problems, c.Masters[0].Addr, []string{"user orders run flushall, function|load, replicaof, shutdown"}) {
		t.Fatalf("no problem about orders' rights:\n%s", strings.Join(rep.Problems, "\n"))
	}
}

// TestGlobKeyPatternsAreProbed: key patterns that are globs rather than prefixes were
// skipped by the probes, so a tenant confined to ord?rs:* with RESTORE and MIGRATE, and a
// tenant whose pattern reaches billing's keys while billing's own pattern is bill[i]ng:*,
// were both SAFE. Each is a problem now; the isolated tenants are the negative control.
func TestGlobKeyPatternsAreProbed(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3, LockUsers: tenants})
	tgt := target(c)
	tgt.LockUsername, tgt.LockPassword = tenants[0].Name, tenants[0].Password
	if rep := run(t, tgt); !rep.Safe {
		t.Fatalf("isolated tenants reported unsafe:\n%s", strings.Join(rep.Problems, "\n"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	set := func(user string, rules ...string) {
		t.Helper()
		for _, m := range c.Masters {
			if err := m.Admin().ACLSetUser(ctx, user, rules...).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	set("orders", "resetkeys", "~ord?rs:*", "+restore", "+migrate")
	rep := run(t, tgt)
	if !hasProblem(rep.Problems, c.Masters[0].Addr, []string{"user orders run migrate, restore"}) {
		t.Fatalf("no problem about orders' RESTORE and MIGRATE on ord?rs:*:\n%s", strings.Join(rep.Problems, "\n"))
	}
	set("orders", "resetkeys", "~orders:*", "~bill*", "-restore", "-migrate")
	set("billing", "resetkeys", "~bill[i]ng:*")
	rep = run(t, tgt)
	if !hasProblem(rep.Problems, c.Masters[0].Addr, []string{"orders can read its token (GET)", "of billing's locks"}) {
		t.Fatalf("no tenant leak from orders into billing's bill[i]ng:*:\n%s", strings.Join(rep.Problems, "\n"))
	}
	set("billing", "resetkeys", "~b[^x]lling:*")
	if rep := run(t, tgt); rep.Safe || len(rep.Unchecked) == 0 {
		t.Fatalf("a negated class was not reported unchecked: safe %v, unchecked %q", rep.Safe, rep.Unchecked)
	}
}

func TestKeyMatching(t *testing.T) {
	t.Parallel()
	for pat, want := range map[string]string{
		"billing:*": "billing:redlock-audit-probe", "ord?rs:*": "ordxrs:redlock-audit-probe",
		"bill[i]ng:*": "billing:redlock-audit-probe", "a[b-d]c": "abc", `x\*y`: "x*y", "*": "redlock-audit-probe",
	} {
		if got, ok := audit.KeyMatching(pat); !ok || got != want {
			t.Errorf("KeyMatching(%q) = %q, %v; want %q", pat, got, ok, want)
		}
	}
	for _, pat := range []string{"a[^b]c", "a[bc"} {
		if _, ok := audit.KeyMatching(pat); ok {
			t.Errorf("KeyMatching(%q): ok, want false", pat)
		}
	}
}

// TestSelectorKeysMakeATenant: a tenant whose key pattern is in a selector rather than its
// root rules ((~billing:* ...)) was not seen as confined, so a user with every key next to
// it was SAFE; it is a problem now.
func TestSelectorKeysMakeATenant(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3, LockUsers: tenants})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, m := range c.Masters {
		if err := m.Admin().ACLSetUser(ctx, "billing", "resetkeys", "(~billing:* +fcall)").Err(); err != nil {
			t.Fatal(err)
		}
		if err := m.Admin().ACLSetUser(ctx, "orders", "~*").Err(); err != nil {
			t.Fatal(err)
		}
	}
	tgt := target(c)
	tgt.LockUsername, tgt.LockPassword = "", "" // the audit of the lock user is not what this is about
	rep := run(t, tgt)
	if !hasProblem(rep.Problems, c.Masters[0].Addr, []string{"orders reaches every key"}) {
		t.Fatalf("no problem about orders reaching billing's keys:\n%s", strings.Join(rep.Problems, "\n"))
	}
}

// TestCopyOntoTheDeploymentRecordIsAProblem: a tenant that may HSET its own keys and, in a
// selector, COPY or RENAME one of them onto redlock-kit:deployment can forge the published
// restart delay without any hash write there; that was SAFE.
func TestCopyOntoTheDeploymentRecordIsAProblem(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3, LockUsers: tenants})
	tgt := target(c)
	tgt.LockUsername, tgt.LockPassword = tenants[0].Name, tenants[0].Password
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, m := range c.Masters {
		if err := m.Admin().ACLSetUser(ctx, "orders", "+hset", "(~orders:* %W~"+hold.DeploymentKey+" +copy +rename)").Err(); err != nil {
			t.Fatal(err)
		}
	}
	rep := run(t, tgt)
	if !hasProblem(rep.Problems, c.Masters[0].Addr, []string{"lets user orders run copy (from orders:redlock-audit-probe), rename (from orders:redlock-audit-probe) on " + hold.DeploymentKey}) {
		t.Fatalf("no problem about orders copying onto the deployment record:\n%s", strings.Join(rep.Problems, "\n"))
	}
}
