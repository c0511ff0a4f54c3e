package audit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestUnseededMasterWithLockUsersIsAProblem: a master marked unseeded (it started empty)
// whose lock user can log in is a problem; with the lock user off it is only a warning (it
// waits); seeded, or with no record at all (the negative controls), neither.
func TestUnseededMasterWithLockUsersIsAProblem(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3})
	m := c.Masters[1]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := m.Admin()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = admin.Del(ctx, audit.FenceSeedKey).Err()
		_ = admin.Do(ctx, "ACL", "SETUSER", redistest.LockUser, "on").Err()
		_ = admin.Do(ctx, "ACL", "SETUSER", redistest.EvalUser, "on").Err()
	})
	seedFindings := func(list []string) []string {
		var out []string
		for _, l := range list {
			if strings.Contains(l, "fence registers") {
				out = append(out, l)
			}
		}
		return out
	}
	set := func(state, reason string) {
		t.Helper()
		if err := admin.HSet(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, state, audit.FenceSeedReasonField, reason).Err(); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("no record: no finding", func(t *testing.T) {
		rep := run(t, target(c))
		if f := append(seedFindings(rep.Problems), seedFindings(rep.Warnings)...); len(f) > 0 || !rep.Safe {
			t.Fatalf("want safe and no fence seed finding, got %q (problems %q)", f, rep.Problems)
		}
	})
	t.Run("unseeded, lock user on: a problem", func(t *testing.T) {
		set(audit.FenceSeedUnseeded, "the master started empty")
		rep := run(t, target(c))
		want := "Master " + m.Addr + "'s fence registers are not seeded (the master started empty), yet lock users " + redistest.LockUser + ", " + redistest.EvalUser + " can log in"
		if rep.Safe || !containsPrefix(rep.Problems, want) {
			t.Fatalf("want a problem starting %q, got:\n%s", want, strings.Join(rep.Problems, "\n"))
		}
		for _, rm := range rep.Masters {
			if rm.Endpoint == m.Addr && rm.FenceSeed.State != audit.FenceSeedUnseeded {
				t.Errorf("FenceSeed = %+v, want state %q", rm.FenceSeed, audit.FenceSeedUnseeded)
			}
		}
	})
	t.Run("unseeded, lock user off: a warning only", func(t *testing.T) {
		set(audit.FenceSeedUnseeded, "the master started empty")
		for _, u := range []string{redistest.LockUser, redistest.EvalUser} {
			if err := admin.Do(ctx, "ACL", "SETUSER", u, "off").Err(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = admin.Do(ctx, "ACL", "SETUSER", u, "on").Err() }()
		}
		tgt := target(c)
		tgt.LockUsername = "" // the lock user cannot log in on that master by design
		rep := run(t, tgt)
		if p := seedFindings(rep.Problems); len(p) > 0 {
			t.Errorf("want no fence seed problem, got %q", p)
		}
		want := "Master " + m.Addr + " waits for its fence registers to be seeded"
		if !containsPrefix(rep.Warnings, want) {
			t.Errorf("want a warning starting %q, got:\n%s", want, strings.Join(rep.Warnings, "\n"))
		}
	})
	t.Run("seeded: no finding", func(t *testing.T) {
		set(audit.FenceSeedSeeded, "seeded from 2 of the other masters")
		rep := run(t, target(c))
		if f := append(seedFindings(rep.Problems), seedFindings(rep.Warnings)...); len(f) > 0 || !rep.Safe {
			t.Fatalf("want safe and no fence seed finding, got %q (problems %q)", f, rep.Problems)
		}
	})
}
