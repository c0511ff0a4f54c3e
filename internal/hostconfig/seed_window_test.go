package hostconfig

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// recordlessMaster is a master whose AOF loaded nothing (files passed the gate): no
// functions, no seed record, billing on as live changes saved it; p's functions step points
// at it with seed_fences, its rendered ACL file at seedFile and EXPORTER_ENV at fifo.
// acquire is billing's FCALL of the library's acquire.
func recordlessMaster(t *testing.T) (p *policy, m *redistest.Master, seedFile, fifo string, acquire func() error) {
	t.Helper()
	users := []redisconf.LockUser{{Name: "billing", Password: strings.Repeat("e", 64), KeyPrefix: "billing:"}}
	cl := redistest.Start(t, redistest.Options{Masters: 1, ACLFile: true, LockUsers: users})
	m = cl.Masters[0]
	ctx := t.Context()
	p = newPolicy(t, time.Second)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not on PATH: run `make deps`")
	}
	withHostAdmin(t, p, m)
	off, err := redisconf.Config{AdminPassword: redistest.AdminPassword, LockUsers: users, LockUsersOff: true}.RenderACL()
	if err != nil {
		t.Fatal(err)
	}
	seedFile = filepath.Join(p.dir, "users.acl.seed")
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
	fifo = filepath.Join(p.dir, "exporter.env")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	p.appendConf(fmt.Sprintf("HOST=%s\nPORT=%d\nCLI=%s\nFUNCTIONS_FILE=%s\nSEED_KEY=%s\nACL_SEED=%s\nEXPORTER_ENV=%s\n",
		m.Host, m.Port, cli, lib, audit.FenceSeedKey, shellQuote(seedFile), shellQuote(fifo)))
	// The AOF loaded nothing: no functions, no record; billing on as live changes saved it.
	for _, cmd := range [][]any{{"FUNCTION", "FLUSH"}, {"DEL", audit.FenceSeedKey}, {"ACL", "SETUSER", users[0].Name, "on"}, {"ACL", "SAVE"}} {
		if err := m.Admin().Do(ctx, cmd...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	acquire = func() error {
		c := m.ClientAs(users[0].Name, users[0].Password)
		defer c.Close()
		return c.FCall(ctx, redlock.FunctionLibrary().Function("acquire"), []string{"billing:k", "billing:k:fence"}, "tok", 10000, 1).Err()
	}

	return p, m, seedFile, fifo, acquire
}

// TestFunctionsStepGivesNoFunctionsToLockUsersOfARecordlessMaster: a master whose AOF loaded
// nothing (files passed the gate) has no functions and no seed record, and its lock users are
// on in the ACL file live changes saved. A fence is taken through the library only, so until
// it is loaded they can take none; the functions step must turn them off (the rendered ACL file,
// loaded) before it loads the library, or they acquire against empty fence registers in
// between. The step is frozen inside host_admin (which reads EXPORTER_ENV, here a FIFO) to
// look at the master at that point, deterministically: the lock user's acquire must fail.
// The negative control: the step that loads the library first lets billing acquire there.
func TestFunctionsStepGivesNoFunctionsToLockUsersOfARecordlessMaster(t *testing.T) {
	p, m, _, fifo, acquire := recordlessMaster(t)
	ctx := t.Context()
	var out bytes.Buffer
	step := p.command("functions")
	step.Stdout, step.Stderr = &out, &out
	if err := step.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- step.Wait() }()
	// An open for writing returns once the step opens the FIFO to read it (host_admin's
	// grep, then its two seds); the step waits there until the line is written.
	unblock := func() { // lets a writer blocked in open return once the step is gone
		if f, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	}
	writerCh := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			close(writerCh)
			return
		}
		writerCh <- f
	}()
	var w *os.File
	select {
	case w = <-writerCh:
	case err := <-done:
		unblock()
		t.Fatalf("the functions step ended (%v) before host_admin read EXPORTER_ENV:\n%s", err, out.String())
	}
	// Frozen in host_admin: the lock users must not be able to acquire yet.
	probe := acquire()
	t.Logf("billing's acquire while the step is in host_admin: %v", probe)
	if probe == nil {
		t.Errorf("billing acquired on a master that loaded no seed record before the step turned its lock users off")
	}
	// Let host_admin go on: its grep and two seds each read one copy of the line.
	stop := make(chan struct{})
	go func() {
		for f := w; f != nil; {
			_, _ = f.WriteString("REDIS_PASSWORD=" + strings.Repeat("f", 64) + "\n")
			f.Close()
			select {
			case <-stop:
				return
			default:
			}
			f, _ = os.OpenFile(fifo, os.O_WRONLY, 0)
		}
	}()
	err := <-done
	close(stop)
	unblock()
	if err != nil {
		t.Fatalf("functions step: %v\n%s", err, out.String())
	}
	if err := acquire(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("after the step: billing's acquire %v, want WRONGPASS", err)
	}
	if s, err := audit.ReadFenceSeed(ctx, m.Admin()); err != nil || !s.Unseeded() {
		t.Fatalf("seed record %+v (%v), want unseeded", s, err)
	}
}

// TestFunctionsStepFailsClosedWhenLockUsersStayOn: where the rendered ACL file cannot be
// loaded (ACL LOAD refuses it), the functions step fails (the unit's start fails) without
// loading the library or marking the master: its lock users, still on, can take no fence. The negative control is the step that loads the library first: billing acquires.
func TestFunctionsStepFailsClosedWhenLockUsersStayOn(t *testing.T) {
	p, m, seedFile, _, acquire := recordlessMaster(t)
	ctx := t.Context()
	p.appendConf("EXPORTER_ENV=\n") // host_admin reads no exporter file here
	if err := os.WriteFile(seedFile, []byte("user default on nopass ~* &* +@all\nuser billing on no-such-rule\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := p.command("functions").CombinedOutput()
	t.Logf("functions step: %v\n%s", err, out)
	if err == nil || !strings.Contains(string(out), "cannot turn the lock users off") {
		t.Fatalf("the functions step with an ACL file ACL LOAD refuses: %v, want it to fail naming the ACL LOAD", err)
	}
	if err := acquire(); err == nil {
		t.Errorf("billing acquired on a master whose lock users could not be turned off")
	}
	if libs, err := m.Admin().FunctionList(ctx, redis.FunctionListQuery{}).Result(); err != nil || len(libs) != 0 {
		t.Errorf("function libraries %v (%v), want none", libs, err)
	}
	if n, err := m.Admin().Exists(ctx, audit.FenceSeedKey).Result(); err != nil || n != 0 {
		t.Errorf("%s exists %d (%v), want no mark", audit.FenceSeedKey, n, err)
	}
}
