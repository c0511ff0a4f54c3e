package acl

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

const (
	billingPassword = "billing-password-one-0123456789"
	billingNext     = "billing-password-two-0123456789"
)

func billing(passwords ...string) User {
	u := User{Name: "billing", KeyPrefix: "billing:"}
	for _, p := range passwords {
		u.PasswordHashes = append(u.PasswordHashes, redisconf.HashPassword(p))
	}
	return u
}

func adminTarget() Target { return Target{Password: redistest.AdminPassword} }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// login reports whether user/password can log in on m and SET a key under prefix.
func login(t *testing.T, m *redistest.Master, user, password, key string) error {
	t.Helper()
	c := m.ClientAs(user, password)
	defer c.Close()
	return c.Set(ctx(t), key, "v", time.Second).Err()
}

func TestApplyAddsAUserConfinedToItsPrefix(t *testing.T) {
	c := redistest.Start(t, redistest.Options{Masters: 1, ACLFile: true})
	m := c.Masters[0]
	if err := adminTarget().Apply(ctx(t), m.Addr, []User{billing(billingPassword)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := login(t, m, "billing", billingPassword, "billing:lock"); err != nil {
		t.Fatalf("the new user cannot lock under its prefix: %v", err)
	}
	if err := login(t, m, "billing", billingPassword, "orders:lock"); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("the new user reached a key outside its prefix: %v", err)
	}
	acl, err := os.ReadFile(m.DataDir + "/users.acl")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(acl), "user billing ") || strings.Contains(string(acl), billingPassword) {
		t.Fatalf("ACL file after the apply: want the user, with its hash only:\n%s", acl)
	}
}

// TestApplyChangesNothingThatMatches: a second apply sends no ACL SETUSER (commandstats),
// so subscribed clients are never touched; a hand-made change is drift and is undone.
func TestApplyChangesNothingThatMatches(t *testing.T) {
	c := redistest.Start(t, redistest.Options{Masters: 1, ACLFile: true})
	m := c.Masters[0]
	u := billing(billingPassword)
	for range 2 {
		if err := adminTarget().Apply(ctx(t), m.Addr, []User{u}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := setuserCalls(t, m); n != 1 {
		t.Fatalf("two applies of one user sent ACL SETUSER %d times, want 1", n)
	}
	// Drift: someone gives the user EVAL by hand.
	if err := m.Admin().Do(ctx(t), "ACL", "SETUSER", "billing", "+eval").Err(); err != nil {
		t.Fatal(err)
	}
	live, err := adminTarget().Read(ctx(t), m.Addr, []string{"billing", "absent"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := live["absent"]; ok {
		t.Fatal("Read found a user that does not exist")
	}
	if u.Matches(live["billing"]) {
		t.Fatalf("a user given +eval by hand still matches: %s", live["billing"])
	}
	if err := adminTarget().Apply(ctx(t), m.Addr, []User{u}, nil); err != nil {
		t.Fatal(err)
	}
	live, err = adminTarget().Read(ctx(t), m.Addr, []string{"billing"})
	if err != nil {
		t.Fatal(err)
	}
	if !u.Matches(live["billing"]) {
		t.Fatalf("the apply did not undo the drift: live %s, want %s", live["billing"], u.Definition())
	}
}

func setuserCalls(t *testing.T, m *redistest.Master) int {
	t.Helper()
	info, err := m.Admin().Info(ctx(t), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_acl|setuser:calls="); ok {
			n := 0
			for _, ch := range rest {
				if ch < '0' || ch > '9' {
					break
				}
				n = n*10 + int(ch-'0')
			}
			return n
		}
	}
	return 0
}

// TestRotationOverlap: with two hashes both passwords log in, and a connection that
// logged in with the old one keeps working; once the old hash is removed, only new logins
// with it fail.
func TestRotationOverlap(t *testing.T) {
	c := redistest.Start(t, redistest.Options{Masters: 1, ACLFile: true})
	m := c.Masters[0]
	target := adminTarget()
	if err := target.Apply(ctx(t), m.Addr, []User{billing(billingPassword)}, nil); err != nil {
		t.Fatal(err)
	}
	holder := m.ClientAs("billing", billingPassword)
	defer holder.Close()
	if err := holder.Set(ctx(t), "billing:held", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := target.Apply(ctx(t), m.Addr, []User{billing(billingNext, billingPassword)}, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{billingPassword, billingNext} {
		if err := login(t, m, "billing", p, "billing:x"); err != nil {
			t.Fatalf("during the overlap, a login with %q fails: %v", p[:16], err)
		}
	}
	if err := holder.PExpire(ctx(t), "billing:held", time.Minute).Err(); err != nil {
		t.Fatalf("the holder's connection broke during the overlap: %v", err)
	}
	if err := target.Apply(ctx(t), m.Addr, []User{billing(billingNext)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := login(t, m, "billing", billingPassword, "billing:x"); err == nil {
		t.Fatal("the old password still logs in after the overlap ended")
	}
	if err := login(t, m, "billing", billingNext, "billing:x"); err != nil {
		t.Fatal(err)
	}
}

// TestAppliedUsersSurviveACrash: ACL SAVE put them in the ACL file the server loads.
func TestAppliedUsersSurviveACrash(t *testing.T) {
	c := redistest.Start(t, redistest.Options{Masters: 1, ACLFile: true})
	m := c.Masters[0]
	if err := adminTarget().Apply(ctx(t), m.Addr, []User{billing(billingPassword)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := login(t, m, "billing", billingPassword, "billing:lock"); err != nil {
		t.Fatalf("the user is gone after a crash and restart: %v", err)
	}
	if err := adminTarget().Apply(ctx(t), m.Addr, nil, []string{"billing"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := login(t, m, "billing", billingPassword, "billing:lock"); err == nil {
		t.Fatal("a removed user came back after a restart")
	}
}

// TestApplyRefusesAMasterWithoutACLFile: nothing is changed where it could not be kept.
func TestApplyRefusesAMasterWithoutACLFile(t *testing.T) {
	c := redistest.Start(t, redistest.Options{Masters: 1})
	m := c.Masters[0]
	err := adminTarget().Apply(ctx(t), m.Addr, []User{billing(billingPassword)}, nil)
	var epErr *EndpointError
	if !errors.Is(err, ErrNoACLFile) || !errors.As(err, &epErr) || epErr.Endpoint != m.Addr {
		t.Fatalf("Apply on a master without aclfile = %v, want ErrNoACLFile naming %s", err, m.Addr)
	}
	if err := login(t, m, "billing", billingPassword, "billing:lock"); err == nil {
		t.Fatal("the refused apply created the user anyway")
	}
}

// TestApplyAllNamesTheMasterThatIsDown and changes the others; the next apply converges.
func TestApplyAllNamesTheMasterThatIsDown(t *testing.T) {
	c := redistest.Start(t, redistest.Options{Masters: 3, ACLFile: true})
	down := c.Masters[1]
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	users := []User{billing(billingPassword)}
	failed := adminTarget().ApplyAll(ctx(t), c.Addrs(), users, nil)
	if len(failed) != 1 || failed[down.Addr] == nil {
		t.Fatalf("ApplyAll with %s down failed on %v, want that master only", down.Addr, failed)
	}
	for _, m := range []*redistest.Master{c.Masters[0], c.Masters[2]} {
		if err := login(t, m, "billing", billingPassword, "billing:lock"); err != nil {
			t.Fatalf("%s (up) did not get the user: %v", m.Addr, err)
		}
	}
	if err := down.Restart(); err != nil {
		t.Fatal(err)
	}
	if failed := adminTarget().ApplyAll(ctx(t), c.Addrs(), users, nil); failed != nil {
		t.Fatalf("the next apply did not converge: %v", failed)
	}
	if err := login(t, down, "billing", billingPassword, "billing:lock"); err != nil {
		t.Fatal(err)
	}
}

func TestCheckRefusesWhatCannotBeApplied(t *testing.T) {
	for name, u := range map[string]User{
		"admin name":      {Name: "default", KeyPrefix: "a:", PasswordHashes: []string{redisconf.HashPassword("x")}},
		"glob prefix":     {Name: "a", KeyPrefix: "a*", PasswordHashes: []string{redisconf.HashPassword("x")}},
		"no password":     {Name: "a", KeyPrefix: "a:"},
		"plain password":  {Name: "a", KeyPrefix: "a:", PasswordHashes: []string{"not-a-hash"}},
		"upper-case hash": {Name: "a", KeyPrefix: "a:", PasswordHashes: []string{strings.ToUpper(redisconf.HashPassword("x"))}},
	} {
		if err := u.Check(); err == nil {
			t.Errorf("%s: Check accepted %+v", name, u)
		}
	}
	if err := billing(billingPassword).Check(); err != nil {
		t.Errorf("Check refused a good user: %v", err)
	}
}

// TestEvalUserForOtherRedlockClients: a user with AllowEval lets redsync (which releases
// with EVAL) acquire and release under its prefix on every master, its scripts still
// confined to the prefix; a user without it cannot EVAL (the control).
func TestEvalUserForOtherRedlockClients(t *testing.T) {
	c := redistest.Start(t, redistest.Options{Masters: 3, ACLFile: true})
	u := billing(billingPassword)
	u.AllowEval = true
	if failed := adminTarget().ApplyAll(ctx(t), c.Addrs(), []User{u}, nil); failed != nil {
		t.Fatal(failed)
	}
	if n := setuserCalls(t, c.Masters[0]); n != 1 {
		t.Fatalf("ACL SETUSER sent %d times, want 1", n)
	}
	if err := adminTarget().Apply(ctx(t), c.Masters[0].Addr, []User{u}, nil); err != nil || setuserCalls(t, c.Masters[0]) != 1 {
		t.Fatalf("a second apply of the EVAL user changed it (%v): its live form does not match", err)
	}
	var pools []redsyncredis.Pool
	for _, m := range c.Masters {
		cl := m.ClientAs("billing", billingPassword)
		t.Cleanup(func() { cl.Close() })
		pools = append(pools, goredis.NewPool(cl))
	}
	mutex := redsync.New(pools...).NewMutex("billing:nightly", redsync.WithExpiry(5*time.Second), redsync.WithTries(3))
	if err := mutex.LockContext(ctx(t)); err != nil {
		t.Fatalf("redsync cannot acquire through the EVAL user: %v", err)
	}
	if ok, err := mutex.UnlockContext(ctx(t)); !ok || err != nil {
		t.Fatalf("redsync cannot release through the EVAL user: %v %v", ok, err)
	}
	cl := c.Masters[0].ClientAs("billing", billingPassword)
	defer cl.Close()
	if err := cl.Eval(ctx(t), "return redis.call('get', KEYS[1])", []string{"orders:nightly"}).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Fatalf("the EVAL user's script reached a key outside its prefix: %v", err)
	}
	plain := billing(billingPassword)
	if err := adminTarget().Apply(ctx(t), c.Masters[0].Addr, []User{plain}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cl.Eval(ctx(t), "return 1", nil).Err(); err == nil {
		t.Fatal("a user without AllowEval can still EVAL")
	}
}

// TestAdminPasswordRotation: the new admin password is added while the masters still
// accept only the previous one (the connection falls back to it), both then log in, and
// the next change retires the previous one; another password of the admin (a host's own)
// is kept throughout.
func TestAdminPasswordRotation(t *testing.T) {
	c := redistest.Start(t, redistest.Options{Masters: 2, ACLFile: true})
	const next, hostOwn = "next-admin-password-0123456789", "host-own-admin-password-0123456789"
	old := redistest.AdminPassword
	h := redisconf.HashPassword
	adminLogsIn := func(m *redistest.Master, password string) bool {
		cl := m.ClientAs("default", password)
		defer cl.Close()
		return cl.ConfigGet(ctx(t), "appendfsync").Err() == nil
	}
	for _, m := range c.Masters {
		adminDo(t, m, "ACL", "SETUSER", "default", "#"+h(hostOwn))
	}
	if err := (Target{Password: next}).ApplyChange(ctx(t), c.Masters[0].Addr, Change{AdminAccept: []string{h(next)}}); err == nil {
		t.Fatal("the new admin password logged in before it was added (the control)")
	}
	rotate := Target{Password: next, PreviousPassword: old}
	if failed := rotate.ApplyChangeAll(ctx(t), c.Addrs(), Change{AdminAccept: []string{h(next), h(old)}}); failed != nil {
		t.Fatal(failed)
	}
	for _, m := range c.Masters {
		for _, pw := range []string{old, next, hostOwn} {
			if !adminLogsIn(m, pw) {
				t.Fatalf("during the overlap %s refuses admin password %.10s...", m.Addr, pw)
			}
		}
	}
	retire := Target{Password: next, PreviousPassword: old}
	if failed := retire.ApplyChangeAll(ctx(t), c.Addrs(), Change{AdminAccept: []string{h(next)}, AdminRetire: []string{h(old)}}); failed != nil {
		t.Fatal(failed)
	}
	for _, m := range c.Masters {
		if adminLogsIn(m, old) || !adminLogsIn(m, next) || !adminLogsIn(m, hostOwn) {
			t.Fatalf("%s after the retirement: old %v, new %v, host's own %v; want false, true, true", m.Addr,
				adminLogsIn(m, old), adminLogsIn(m, next), adminLogsIn(m, hostOwn))
		}
	}
}

func adminDo(t *testing.T, m *redistest.Master, args ...any) {
	t.Helper()
	if err := m.Admin().Do(ctx(t), args...).Err(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
}
