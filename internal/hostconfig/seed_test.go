package hostconfig

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestRenderSeedFences: with SeedFences the lock users are rendered off and master.conf
// names the record the script marks; the user-data with exporters still fits. Without it
// (the negative control) the users are on and nothing is marked.
func TestRenderSeedFences(t *testing.T) {
	h := exporterHost()
	h.Spec.LockUsers = []redisconf.LockUser{{Name: "billing", Password: strings.Repeat("d", 64), KeyPrefix: "billing:"},
		{Name: "orders", Password: strings.Repeat("e", 64), KeyPrefix: "orders:"}}
	for _, seed := range []bool{true, false} {
		h.SeedFences = seed
		b, err := Render(h)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed_fences %v: user-data with exporters and two tenants: %d bytes", seed, len(b.UserData))
		acl := file(t, b, ACLSeedPath).Content
		conf := file(t, b, MasterConfPath).Content
		for _, u := range []string{"billing", "orders"} {
			line := ""
			for _, l := range strings.Split(acl, "\n") {
				if strings.HasPrefix(l, "user "+u+" ") {
					line = l
				}
			}
			if want := map[bool]string{true: " off ", false: " on "}[seed]; !strings.Contains(line, want) {
				t.Errorf("seed_fences %v: user %s is %q, want it%s", seed, u, line, want)
			}
		}
		if !strings.Contains(acl, "user default reset on ") {
			t.Errorf("seed_fences %v: the admin must stay on:\n%s", seed, acl)
		}
		hasKey := strings.Contains(conf, "SEED_KEY='"+audit.FenceSeedKey+"'\n")
		if hasKey != seed {
			t.Errorf("seed_fences %v: master.conf names SEED_KEY: %v\n%s", seed, hasKey, conf)
		}
	}
}

// TestFunctionsStepMarksUnseeded: with SEED_KEY, the step that runs after every start marks
// a master with no record unseeded, leaves a seeded one as it is, and fails the start when
// it cannot mark it (a master that could not be marked would look seeded).
func TestFunctionsStepMarksUnseeded(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1, ACLFile: true})
	m := cl.Masters[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := newPolicy(t, time.Second)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not on PATH: run `make deps`")
	}
	withHostAdmin(t, p, m)
	h := testHost()
	h.SeedFences = true
	b, err := Render(h)
	if err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(p.dir, "redlock-functions.lua")
	if err := os.WriteFile(lib, []byte(file(t, b, FunctionsPath).Content), 0o644); err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(filepath.Join(p.dir, "master.conf"))
	if err != nil {
		t.Fatal(err)
	}
	extra := fmt.Sprintf("HOST=%s\nPORT=%d\nCLI=%s\nFUNCTIONS_FILE=%s\nSEED_KEY=%s\n", m.Host, m.Port, cli, lib, audit.FenceSeedKey)
	if err := os.WriteFile(filepath.Join(p.dir, "master.conf"), append(conf, extra...), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() (string, error) {
		out, err := p.command("functions").CombinedOutput()
		return string(out), err
	}
	state := func() string {
		s, err := audit.ReadFenceSeed(ctx, m.Admin())
		if err != nil {
			t.Fatal(err)
		}
		return s.State
	}

	if out, err := run(); err != nil {
		t.Fatalf("functions step: %v\n%s", err, out)
	}
	if s := state(); s != audit.FenceSeedUnseeded {
		t.Fatalf("a master that started empty: state %q, want %q", s, audit.FenceSeedUnseeded)
	}
	if err := m.Admin().HSet(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedSeeded).Err(); err != nil {
		t.Fatal(err)
	}
	if out, err := run(); err != nil {
		t.Fatalf("functions step: %v\n%s", err, out)
	}
	if s := state(); s != audit.FenceSeedSeeded {
		t.Fatalf("a seeded master restarted: state %q, want it still %q", s, audit.FenceSeedSeeded)
	}
	// A restore the gate found (its record in the data dir): the backup's record says
	// seeded, and the master is marked unseeded all the same, its lock users turned off (the
	// rendered ACL file, loaded); the record of the restore goes once the mark is made.
	p.write(hold.HostUnseededRecord, "restored\n")
	if out, err := run(); err != nil {
		t.Fatalf("functions step after a restore: %v\n%s", err, out)
	}
	if s := state(); s != audit.FenceSeedUnseeded || p.exists(hold.HostUnseededRecord) {
		t.Fatalf("a restored master: state %q, %s left %v; want %q and none", s, hold.HostUnseededRecord, p.exists(hold.HostUnseededRecord), audit.FenceSeedUnseeded)
	}
	if out, err := run(); err != nil || state() != audit.FenceSeedUnseeded {
		t.Fatalf("functions step after the mark: %v, state %q\n%s", err, state(), out)
	}
	if err := m.Admin().Set(ctx, audit.FenceSeedKey, "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if out, err := run(); err == nil || !strings.Contains(out, "cannot mark "+audit.FenceSeedKey+" unseeded") {
		t.Fatalf("functions step with an unwritable record: %v\n%s; want a failure that says so", err, out)
	}
}

// TestGateTurnsLockUsersOffWithoutAOF: the gate step against the seeding rule's table
// (redisconf.SeedScenarios, which the test harness's gate also runs against): with SEED_KEY, a
// start whose data dir has no AOF, or an empty AOF dir (a lost or replaced data disk whose
// ACL file was kept, saved by live changes with the lock users on), or AOF files other than
// those its clean marker names (a restored backup) makes the ACL file again from the
// rendered one, lock users off, with the host admin's hash; redlock_users turns them on once
// it seeded the master. The controls: with the AOF there (after a clean stop too), or
// without SEED_KEY, the file is left as it is.
func TestGateTurnsLockUsersOffWithoutAOF(t *testing.T) {
	users := []redisconf.LockUser{{Name: "billing", Password: strings.Repeat("d", 64), KeyPrefix: "billing:"}}
	render := func(off bool) string {
		s, err := redisconf.Config{AdminPassword: redistest.AdminPassword, LockUsers: users, LockUsersOff: off}.RenderACL()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	billingOn := func(acl string) bool {
		for _, l := range strings.Split(acl, "\n") {
			if strings.HasPrefix(l, "user billing ") {
				return strings.Contains(l, " on ")
			}
		}
		t.Fatalf("no user billing in the ACL file:\n%s", acl)
		return false
	}
	for _, tc := range redisconf.SeedScenarios {
		t.Run(tc.Name, func(t *testing.T) {
			wantOn := tc.Want == redisconf.KeepACLFile
			p := newPolicy(t, 100*time.Millisecond)
			seedFile, pwFile := filepath.Join(p.dir, "users.acl.seed"), filepath.Join(p.dir, "host-admin-password")
			if err := os.WriteFile(seedFile, []byte(render(true)), 0o644); err != nil {
				t.Fatal(err)
			}
			p.write("users.acl", render(false)) // as live changes saved it: the lock users on
			aofDir := filepath.Join(p.dataDir, redisconf.AOFDir)
			if entries, err := os.ReadDir(aofDir); err != nil || len(entries) == 0 {
				t.Fatalf("the policy's data dir has no AOF files to start from (%v)", err)
			}
			switch tc.AOF {
			case redisconf.AOFAfterCleanStop:
				p.write(hold.HostCleanMarker, p.cleanMarker())
			case redisconf.AOFRestored:
				p.write(hold.HostCleanMarker, p.cleanMarker())
				p.replaceAOF()
			}
			if tc.AOF == redisconf.AOFNoManifest {
				p.write(filepath.Join(redisconf.AOFDir, "appendonly.aof.1.incr.aof"), "")
				if err := os.Remove(filepath.Join(aofDir, redisconf.AOFManifest)); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			} else if tc.AOF == redisconf.AOFNone || tc.AOF == redisconf.AOFDirEmpty {
				if err := os.RemoveAll(aofDir); err != nil {
					t.Fatal(err)
				}
			}
			if tc.AOF == redisconf.AOFDirEmpty {
				if err := os.Mkdir(aofDir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			extra := "ACL_SEED=" + shellQuote(seedFile) + "\nACL_FILE=" + shellQuote(filepath.Join(p.dataDir, "users.acl")) +
				"\nADMIN_PASSWORD_FILE=" + shellQuote(pwFile) + "\nSERVICE_USER=root\nSERVICE_GROUP=root\n"
			if tc.SeedFences {
				extra += "SEED_KEY=" + shellQuote(audit.FenceSeedKey) + "\n"
			}
			conf, err := os.ReadFile(filepath.Join(p.dir, "master.conf"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(p.dir, "master.conf"), append(conf, extra...), 0o644); err != nil {
				t.Fatal(err)
			}
			out, _ := p.run("gate")
			acl := p.read("users.acl")
			if got := billingOn(acl); got != wantOn {
				t.Fatalf("billing on = %v after the gate, want %v (%s):\n%s\ngate:\n%s", got, wantOn, tc.Want, acl, out)
			}
			// A restore is remembered until a start marks the master unseeded (the functions
			// step: TestFunctionsStepMarksUnseeded), whatever record the backup brought.
			if restored := tc.SeedFences && tc.AOF == redisconf.AOFRestored; p.exists(hold.HostUnseededRecord) != restored {
				t.Fatalf("%s after the gate: %v, want %v\ngate:\n%s", hold.HostUnseededRecord, p.exists(hold.HostUnseededRecord), restored, out)
			}
			if !wantOn {
				pw, err := os.ReadFile(pwFile)
				if err != nil || !strings.Contains(acl, "#"+redisconf.HashPassword(string(pw))) {
					t.Fatalf("the remade ACL file lacks the host admin's hash (%v):\n%s", err, acl)
				}
			}
		})
	}
}
