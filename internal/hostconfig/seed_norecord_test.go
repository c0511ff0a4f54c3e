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
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestFunctionsStepTurnsLockUsersOffWithoutRecord: AOF files can pass the gate and load
// nothing (an incr file emptied over the first start's empty base). The functions step's
// mark then finds no record (HSETNX 1): the master was seeded once, and its lock users, on
// in the ACL file live changes saved, must be turned off (the rendered file, loaded). The
// control: a master whose record survived keeps its lock users on.
func TestFunctionsStepTurnsLockUsersOffWithoutRecord(t *testing.T) {
	users := []redisconf.LockUser{{Name: "billing", Password: strings.Repeat("e", 64), KeyPrefix: "billing:"}}
	cl := redistest.Start(t, redistest.Options{Masters: 1, ACLFile: true, LockUsers: users})
	m := cl.Masters[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := newPolicy(t, time.Second)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not on PATH: run `make deps`")
	}
	withHostAdmin(t, p, m)
	off, err := redisconf.Config{AdminPassword: redistest.AdminPassword, LockUsers: users, LockUsersOff: true}.RenderACL()
	if err != nil {
		t.Fatal(err)
	}
	seedFile := filepath.Join(p.dir, "users.acl.seed")
	if err := os.WriteFile(seedFile, []byte(off), 0o644); err != nil {
		t.Fatal(err)
	}
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
	extra := fmt.Sprintf("HOST=%s\nPORT=%d\nCLI=%s\nFUNCTIONS_FILE=%s\nSEED_KEY=%s\nACL_SEED=%s\n", m.Host, m.Port, cli, lib, audit.FenceSeedKey, shellQuote(seedFile))
	if err := os.WriteFile(filepath.Join(p.dir, "master.conf"), append(conf, extra...), 0o644); err != nil {
		t.Fatal(err)
	}
	billingIn := func() (bool, error) {
		c := m.ClientAs(users[0].Name, users[0].Password)
		defer c.Close()
		err := c.Ping(ctx).Err()
		return err == nil, err
	}
	on := func() {
		for _, cmd := range [][]any{{"ACL", "SETUSER", users[0].Name, "on"}, {"ACL", "SAVE"}} {
			if err := m.Admin().Do(ctx, cmd...).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}

	// The control: the record survived, the lock user stays on.
	on()
	if err := m.Admin().HSet(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedSeeded).Err(); err != nil {
		t.Fatal(err)
	}
	if out, err := p.command("functions").CombinedOutput(); err != nil {
		t.Fatalf("functions step: %v\n%s", err, out)
	}
	if in, err := billingIn(); !in {
		t.Fatalf("a seeded master: billing cannot log in after the functions step (%v)", err)
	}

	// The record lost with the data: the lock user goes off, the master is unseeded.
	if err := m.Admin().Del(ctx, audit.FenceSeedKey).Err(); err != nil {
		t.Fatal(err)
	}
	if out, err := p.command("functions").CombinedOutput(); err != nil {
		t.Fatalf("functions step: %v\n%s", err, out)
	}
	if in, err := billingIn(); in || !strings.Contains(fmt.Sprint(err), "WRONGPASS") {
		t.Fatalf("a master that loaded no seed record: billing logs in = %v (%v), want WRONGPASS", in, err)
	}
	if s, err := audit.ReadFenceSeed(ctx, m.Admin()); err != nil || !s.Unseeded() {
		t.Fatalf("seed record %+v (%v), want unseeded", s, err)
	}
}
