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
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestSeed: every master unseeded is refused on an update (ErrEveryMasterUnseeded) and,
// on redlock_users' create, seeded everywhere as a new deployment; a replaced
// master is seeded from the others, each register at their largest + Margin, with the
// reason in its record and in its server's log; a master with no majority of seeded
// masters to seed from is refused, named, and left unseeded.
func TestSeed(t *testing.T) {
	t.Parallel()
	c := redistest.StartKit(t, redistest.Options{Masters: 5})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	target := acl.Target{Password: redistest.AdminPassword}
	endpoints := c.Addrs()
	mark := func(i int) {
		t.Helper()
		if err := c.Masters[i].Admin().Del(ctx, audit.FenceSeedKey).Err(); err != nil {
			t.Fatal(err)
		}
		if err := fenceseed.MarkUnseeded(ctx, c.Masters[i].Admin()); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("every master unseeded on an update: refused, named", func(t *testing.T) {
		for i := range c.Masters {
			mark(i)
		}
		done, failed := fenceseed.Seed(ctx, target, endpoints, fenceseed.Options{})
		if len(done) != 0 || len(failed) != 5 {
			t.Fatalf("seeded %+v, failures %v; want all 5 refused", done, failed)
		}
		for _, m := range c.Masters {
			if err := failed[m.Addr]; !errors.Is(err, fenceseed.ErrEveryMasterUnseeded) {
				t.Errorf("%s: %v, want ErrEveryMasterUnseeded", m.Addr, err)
			}
			if s, _ := audit.ReadFenceSeed(ctx, m.Admin()); !s.Unseeded() {
				t.Errorf("%s: record %+v: a refused master must stay unseeded", m.Addr, s)
			}
		}
	})

	t.Run("a new deployment: every master seeded", func(t *testing.T) {
		for i := range c.Masters {
			mark(i)
		}
		done, failed := fenceseed.Seed(ctx, target, endpoints, fenceseed.Options{NewDeployment: true})
		if failed != nil || len(done) != 5 {
			t.Fatalf("%d seeded, failures %v", len(done), failed)
		}
		if !strings.HasPrefix(done[0].Reason, "a new deployment") {
			t.Errorf("reason %q, want one that says it is a new deployment", done[0].Reason)
		}
	})

	t.Run("a replaced master: seeded from the others, max + margin", func(t *testing.T) {
		// Registers as fences left them: the largest on a minority only.
		for i, v := range []int64{7, 9, 500, 8, 0} {
			if v > 0 {
				if err := c.Masters[i].Admin().Set(ctx, "orders:42"+":fence", v, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		m := c.Masters[4]
		mark(4)
		done, failed := fenceseed.Seed(ctx, target, endpoints, fenceseed.Options{})
		if failed != nil || len(done) != 1 || done[0].Endpoint != m.Addr {
			t.Fatalf("seeded %+v, failures %v; want %s seeded", done, failed, m.Addr)
		}
		got, err := m.Admin().Get(ctx, "orders:42:fence").Int64()
		if want := int64(500 + fenceseed.Margin); err != nil || got != want {
			t.Errorf("register = %d (%v), want %d", got, err, want)
		}
		s, err := audit.ReadFenceSeed(ctx, m.Admin())
		if err != nil || s.State != audit.FenceSeedSeeded || !strings.Contains(s.Reason, "seeded from 4 of the other 4 masters") {
			t.Errorf("record %+v (%v), want seeded with its reason", s, err)
		}
		log, err := os.ReadFile(filepath.Join(m.DataDir, "redis.log"))
		if err != nil || !strings.Contains(string(log), "redlock-kit: fence registers seeded: seeded from 4") {
			t.Errorf("the server's log does not give the reason (%v):\n%s", err, tail(string(log)))
		}
	})

	t.Run("no majority of seeded masters: refused, named", func(t *testing.T) {
		for _, i := range []int{0, 1, 2} {
			mark(i)
		}
		done, failed := fenceseed.Seed(ctx, target, endpoints, fenceseed.Options{})
		if len(done) != 0 || len(failed) != 3 {
			t.Fatalf("seeded %+v, failures %v; want 3 refusals", done, failed)
		}
		err := failed[c.Masters[0].Addr]
		if !errors.Is(err, fenceseed.ErrNoMajority) || !strings.Contains(err.Error(), c.Masters[0].Addr+": ") ||
			!strings.Contains(err.Error(), "must be seeded from 3 of the other masters") {
			t.Errorf("error %v: want ErrNoMajority naming %s and the 3 needed", err, c.Masters[0].Addr)
		}
		s, _ := audit.ReadFenceSeed(ctx, c.Masters[0].Admin())
		if !s.Unseeded() {
			t.Errorf("record %+v: a refused master must stay unseeded", s)
		}
	})
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
