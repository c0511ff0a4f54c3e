package hostconfig

// Reproductions of the rev32h review of the host changes since 3bac220 (the pidfile token,
// the redlock-state kill of a replaced dataset, the restore rule). Each test asserts what
// should happen and fails on main as of 6423a6d; its comment gives the sequence.

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// reviewACL renders the ACL file with one lock user, off (the rendered file with
// seed_fences) or on (as live changes saved it).
func reviewACL(t *testing.T, off bool) string {
	t.Helper()
	users := []redisconf.LockUser{{Name: "billing", Password: strings.Repeat("d", 64), KeyPrefix: "billing:"}}
	s, err := redisconf.Config{AdminPassword: redistest.AdminPassword, LockUsers: users, LockUsersOff: off}.RenderACL()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// withSeedFences makes the policy a host rendered with seed_fences: SEED_KEY, the rendered
// ACL file (lock users off) as ACL_SEED, and the server's ACL file in the data dir as live
// changes saved it (lock users on). The admin password file stays the one the test's
// servers use.
func (p *policy) withSeedFences() {
	p.t.Helper()
	seed := filepath.Join(p.dir, "users.acl.seed")
	if err := os.WriteFile(seed, []byte(reviewACL(p.t, true)), 0o600); err != nil {
		p.t.Fatal(err)
	}
	p.write("users.acl", reviewACL(p.t, false))
	p.appendConf("ACL_SEED=" + shellQuote(seed) + "\nACL_FILE=" + shellQuote(filepath.Join(p.dataDir, "users.acl")) +
		"\nSERVICE_USER=root\nSERVICE_GROUP=root\nSEED_KEY=" + shellQuote(audit.FenceSeedKey) + "\n")
}

// lockUserOn says whether the data dir's ACL file lets the lock user in.
func (p *policy) lockUserOn() bool {
	p.t.Helper()
	for _, l := range strings.Split(p.read("users.acl"), "\n") {
		if strings.HasPrefix(l, "user billing ") {
			return strings.Contains(l, " on ")
		}
	}
	p.t.Fatalf("no user billing in the ACL file:\n%s", p.read("users.acl"))
	return false
}

// runGateHeld runs the gate on the test's clock: if it holds, the clock is moved past the
// hold. It returns the gate's log.
func (p *policy) runGateHeld(clock int64) string {
	p.t.Helper()
	g := p.startGate()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := g.output()
		if strings.Contains(out, "holding the start for") {
			p.setClock(clock + 10*60*1000)
			break
		}
		if strings.Contains(out, "starting at once") || time.Now().After(deadline) {
			break
		}
		select {
		case <-g.done:
		case <-time.After(20 * time.Millisecond):
			continue
		}
		break
	}
	if err := g.wait(); err != nil {
		p.t.Fatalf("gate: %v\n%s", err, g.output())
	}
	return g.output()
}

// durableRun runs a server with the master's config as the unit does, has it take a lock
// (a write), and stops it through the stop and stopped steps: a clean marker over its files.
func (p *policy) durableRun(lock string) {
	p.t.Helper()
	srv := p.startServerConfig()
	if err := srv.admin.Set(context.Background(), "billing:lock", lock, 0).Err(); err != nil {
		p.t.Fatal(err)
	}
	pid := strconv.Itoa(srv.cmd.Process.Pid)
	p.run("started", "MAINPID="+pid)
	p.run("stop", "MAINPID="+pid)
	if err := srv.wait(); err != nil {
		p.t.Fatalf("the server did not exit 0 after the stop step: %v", err)
	}
	if out, err := p.try("stopped", "SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0"); err != nil || !p.exists(hold.HostCleanMarker) {
		p.t.Fatalf("no clean marker after a durable stop (%v):\n%s", err, out)
	}
}

// TestReviewRollbackOfTheDataDirStartsAtOnce (finding 1): the clean marker, the pidfile's
// token and the AOF files all live in the data dir, so a rollback of the data dir to a state
// taken during an earlier clean stop (a volume snapshot restored, a ZFS/LVM/btrfs rollback,
// or the dir moved aside and moved back: inodes, names, sizes, mtimes as they were) brings a
// marker that vouches for the files it came with. In the same boot the gate starts the master
// at once on the older dataset: the locks the later run granted are gone while they are still
// valid on the other masters (no restart_delay), and with seed_fences the restore rule sees
// nothing either (the marker names these files): no unseeded mark, lock users kept on.
func TestReviewRollbackOfTheDataDirStartsAtOnce(t *testing.T) {
	p := newPolicy(t, 2*time.Second)
	clock := int64(9_000_000)
	p.setClock(clock)
	aof := filepath.Join(p.dataDir, redisconf.AOFDir)

	// Run 1 stops cleanly. The "snapshot": its AOF files (their inodes kept), marker and token.
	p.durableRun("run 1")
	snap := filepath.Join(p.dir, "snapshot")
	if err := os.Mkdir(snap, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(aof, filepath.Join(snap, redisconf.AOFDir)); err != nil {
		t.Fatal(err)
	}
	marker1, token1 := p.read(hold.HostCleanMarker), p.read("redis-server.pid")
	// The dir the master goes on with: the same files (a copy: other inodes, so the gate of
	// run 2 holds; on a real volume its files keep the inodes and it starts at once).
	if out, err := exec.Command("cp", "-a", filepath.Join(snap, redisconf.AOFDir), aof).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	p.runGateHeld(clock)

	// Run 2 grants a lock and stops cleanly.
	clock += 20 * 60 * 1000
	p.setClock(clock)
	p.durableRun("run 2")

	// The rollback, within the boot: the snapshot's files, marker and token come back.
	clock += 1000
	p.setClock(clock)
	if err := os.RemoveAll(aof); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(snap, redisconf.AOFDir), aof); err != nil {
		t.Fatal(err)
	}
	p.write(hold.HostCleanMarker, marker1)
	if err := os.WriteFile(p.pidFile(), []byte(token1), 0o644); err != nil {
		t.Fatal(err)
	}
	p.withSeedFences()

	out := p.runGateHeld(clock)
	srv := p.startServerConfig()
	lock, _ := srv.admin.Get(context.Background(), "billing:lock").Result()
	t.Logf("gate after the rollback:\n%s\nthe master now serves billing:lock = %q", out, lock)
	if strings.Contains(out, "starting at once") {
		t.Errorf("the gate started a rolled-back data dir at once (its lock of run 2 gone: billing:lock = %q); want restart_delay", lock)
	}
	if !p.exists(hold.HostUnseededRecord) || p.lockUserOn() {
		t.Errorf("with seed_fences, a rolled-back data dir: %s %v, lock user on %v; want it marked unseeded, users off",
			hold.HostUnseededRecord, p.exists(hold.HostUnseededRecord), p.lockUserOn())
	}
}

// TestReviewFailedGateForgetsTheRestore (finding 3): a gate that fails before the server
// starts (here: the restore's own record cannot be written, as on a full disk right after a
// restore) is followed by systemd's ExecStopPost: the stopped step finds no hold record,
// takes it for an unclean stop and removes the clean marker. The next attempt has no marker
// to compare the files with: the restore is forgotten, the lock users stay on.
func TestReviewFailedGateForgetsTheRestore(t *testing.T) {
	p := newPolicy(t, 100*time.Millisecond)
	p.write(hold.HostCleanMarker, p.cleanMarker())
	p.replaceAOF() // the backup restored after the clean stop
	p.withSeedFences()
	obstacle := filepath.Join(p.dataDir, hold.HostUnseededRecord+".tmp")
	if err := os.Mkdir(obstacle, 0o700); err != nil { // the write fails, as with ENOSPC or EIO
		t.Fatal(err)
	}
	out, err := p.try("gate")
	if err == nil {
		t.Fatalf("the gate did not fail on the unwritable record:\n%s", out)
	}
	stopped, _ := p.try("stopped", "SERVICE_RESULT=exit-code", "EXIT_CODE=exited", "EXIT_STATUS=1")
	t.Logf("gate (failed):\n%s\nstopped:\n%s", out, stopped)
	if err := os.Remove(obstacle); err != nil {
		t.Fatal(err)
	}
	out, _ = p.run("gate")
	if !p.exists(hold.HostUnseededRecord) || p.lockUserOn() {
		t.Errorf("after a failed attempt, the restore is forgotten: marker %v, %s %v, lock user on %v; want unseeded, users off\ngate:\n%s",
			p.exists(hold.HostCleanMarker), hold.HostUnseededRecord, p.exists(hold.HostUnseededRecord), p.lockUserOn(), out)
	}
}

// TestReviewReplicatedDatasetComesBackSeeded (finding 4): the redlock-state tick kills a
// master that replicated another server, and the gate holds it. But its AOF now holds the
// other server's dataset: that server's fence registers and its seed record (seeded). With
// seed_fences the next start keeps the ACL file (lock users on) and the seed record: the
// master admits lock users with another master's registers, below fences it gave itself.
// A restore is a replacement; so is this.
func TestReviewReplicatedDatasetComesBackSeeded(t *testing.T) {
	p := newPolicy(t, 2*time.Second)
	clock := int64(4_000_000)
	p.setClock(clock)
	ctx := context.Background()
	srv := p.startServer(p.dataDir)
	pid := strconv.Itoa(srv.cmd.Process.Pid)
	p.withFunctions()
	p.run("functions")
	p.run("started", "MAINPID="+pid)
	// This master is seeded, its register for a lock at 500.
	if err := srv.admin.HSet(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedSeeded).Err(); err != nil {
		t.Fatal(err)
	}
	if err := srv.admin.Set(ctx, "billing:job:fence", "500", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Another (seeded) master, whose register for that lock is 10, replicated (REPLICAOF,
	// then NO ONE), as replicateAnother does.
	port, err := redistest.FreePort(p.host)
	if err != nil {
		t.Fatal(err)
	}
	other := p.startServerOn(t.TempDir(), port)
	if err := other.admin.HSet(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedSeeded).Err(); err != nil {
		t.Fatal(err)
	}
	if err := other.admin.Set(ctx, "billing:job:fence", "10", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := srv.admin.ConfigSet(ctx, "masterauth", redistest.AdminPassword).Err(); err != nil {
		t.Fatal(err)
	}
	if err := srv.admin.Do(ctx, "REPLICAOF", p.host, strconv.Itoa(port)).Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if info, _ := srv.admin.Info(ctx, "replication").Result(); strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("never synced")
		}
	}
	if err := srv.admin.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	// The AOF rewrite that follows a sync makes the other dataset the master's AOF; the tick
	// comes up to 30 s later, by when it is long done.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		info, _ := srv.admin.Info(ctx, "persistence").Result()
		if strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0") &&
			strings.Contains(info, "aof_enabled:1") && !strings.Contains(info, "aof_rewrites:0\r") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the AOF rewrite after the sync never ended:\n%s", info)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if v, _ := srv.admin.Get(ctx, "billing:job:fence").Result(); v != "10" {
		t.Fatalf("the other master's register did not replace this one's: %q", v)
	}
	out, _ := p.run("state")
	if !srv.exitedWithin(10 * time.Second) {
		t.Fatalf("the tick did not kill the replaced master:\n%s", out)
	}
	p.try("stopped", "SERVICE_RESULT=signal", "EXIT_CODE=killed", "EXIT_STATUS=KILL")
	p.withSeedFences() // a host with seed_fences; its ACL file as saved live: lock users on
	gate := p.runGateHeld(clock)
	// As the unit starts it: with the ACL file (seed_mark loads the rendered one into it).
	again := p.startServerConfig("--aclfile", filepath.Join(p.dataDir, "users.acl"))
	fout, err := p.try("functions")
	if err != nil {
		t.Fatalf("functions: %v\n%s", err, fout)
	}
	state, _ := again.admin.HGet(ctx, audit.FenceSeedKey, audit.FenceSeedStateField).Result()
	fence, _ := again.admin.Get(ctx, "billing:job:fence").Result()
	t.Logf("gate:\n%s\nafter the start: seed state %q, register %q (was 500), lock user on %v", gate, state, fence, p.lockUserOn())
	if state != audit.FenceSeedUnseeded || p.lockUserOn() {
		t.Errorf("a master whose dataset was replaced by another master's comes back with seed state %q and lock users on %v "+
			"(its register %s, below the 500 it gave); want unseeded, users off", state, p.lockUserOn(), fence)
	}
}

// TestReviewUpgradedBinaryIsNotKilled (finding 5): the tick kills the pid a replaced server
// reports only if /proc/<pid>/exe is the server's binary. A package upgrade replaces the
// binary under the running server (dpkg renames the new file over it): its exe reads
// "<path> (deleted)" until the unit restarts, and the tick only logs that it cannot kill: a
// replaced dataset serves on (the documented 30 s becomes "until the next restart").
func TestReviewUpgradedBinaryIsNotKilled(t *testing.T) {
	p := newPolicy(t, 2*time.Second)
	p.setClock(4_000_000)
	real, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not on PATH")
	}
	if real, err = filepath.EvalSymlinks(real); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(p.dir, "bin", "redis-server") // not named redis-check-rdb: the name picks the mode
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", real, bin).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	p.appendConf("SERVER_BINARY=" + shellQuote(bin) + "\n")
	srv := p.startCmd(exec.Command(bin, "--bind", p.host, "--port", strconv.Itoa(p.port), "--dir", p.dataDir,
		"--requirepass", redistest.AdminPassword, "--appendonly", "yes", "--appendfsync", "always",
		"--save", "", "--logfile", p.serverLog), p.port)
	p.withFunctions()
	p.run("functions")
	p.run("started", "MAINPID="+strconv.Itoa(srv.cmd.Process.Pid))
	// The upgrade: the new binary renamed over the old one, as dpkg unpacks it.
	if out, err := exec.Command("cp", real, bin+".dpkg-new").CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if err := os.Rename(bin+".dpkg-new", bin); err != nil {
		t.Fatal(err)
	}
	p.replicateAnother(srv)
	out, _ := p.run("state")
	if !srv.exitedWithin(5 * time.Second) {
		t.Errorf("after an upgrade of the server package (its restart not yet run), the tick left a replaced master serving:\n%s", out)
	}
}

// TestReviewClonedDataDirKeepsLockUsersOn (finding 6): the restore rule counts a marker of
// this machine only. A data dir that comes with a clean marker of another machine (a disk
// image or AMI of a cleanly stopped master, a data volume moved to a new instance) is
// another master's dataset or an older one of this master: the gate holds (right), but with
// seed_fences it keeps the ACL file (lock users on) and the seed record it came with.
func TestReviewClonedDataDirKeepsLockUsersOn(t *testing.T) {
	p := newPolicy(t, 100*time.Millisecond)
	p.write(hold.HostCleanMarker, p.marker("0123456789abcdef0123456789abcdef", "boot-0", 1000, p.aofDigest(), p.dataDir))
	p.withSeedFences()
	out, _ := p.run("gate")
	if !p.exists(hold.HostUnseededRecord) || p.lockUserOn() {
		t.Errorf("a data dir with another machine's clean marker: %s %v, lock user on %v; want it treated as a replacement\ngate:\n%s",
			hold.HostUnseededRecord, p.exists(hold.HostUnseededRecord), p.lockUserOn(), out)
	}
}

// TestReviewTickRacesTheFirstPublish (finding 7): publish writes /run/redlock/repl (the run
// the tick watches) before the HSET that creates the deployment record. On a master that
// started empty (a new host, a replaced one) a tick between the two finds that run with no
// record, takes it for a flushed one and kills it: the start fails and holds restart_delay
// again. The CLI is slowed at that HSET to make the window wide.
func TestReviewTickRacesTheFirstPublish(t *testing.T) {
	p := newPolicy(t, 2*time.Second)
	p.setClock(4_000_000)
	srv := p.startServer(p.dataDir) // the empty AOF newPolicy leaves: no record
	p.withFunctions()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not on PATH")
	}
	waiting := filepath.Join(p.dir, "hset-waiting")
	wrapper := filepath.Join(p.dir, "slow-hset-cli")
	body := "#!/bin/sh\ncase \" $* \" in *\" HSET " + hold.DeploymentKey + " \"*) : >" + shellQuote(waiting) + "; sleep 3 ;; esac\nexec " + shellQuote(cli) + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	p.appendConf("CLI=" + shellQuote(wrapper) + "\n")
	fn := p.command("functions")
	var fout strings.Builder
	fn.Stdout, fn.Stderr = &fout, &fout
	if err := fn.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(waiting); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the functions step never reached its HSET")
		}
	}
	out, _ := p.try("state") // the redlock-state timer fires
	ferr := fn.Wait()
	if srv.exitedWithin(2 * time.Second) {
		t.Errorf("a tick during the first start's publish killed the new master (functions: %v):\nstate:\n%s\nfunctions:\n%s", ferr, out, fout.String())
	}
}

// TestReviewRestoredMarkKeepsTheBackupsReason (finding 8): a restore is marked with HSET state
// unseeded only: the backup's reason, sources and time of its seeding stay in the record,
// and the audit's warning (and the plan) read "waits for its fence registers to be seeded
// (<how it was seeded>)".
func TestReviewRestoredMarkKeepsTheBackupsReason(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1, ACLFile: true})
	m := cl.Masters[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := newPolicy(t, time.Second)
	withHostAdmin(t, p, m)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not on PATH")
	}
	p.withFunctions()
	p.appendConf("HOST=" + m.Host + "\nPORT=" + strconv.Itoa(m.Port) + "\nCLI=" + shellQuote(cli) + "\nSEED_KEY=" + shellQuote(audit.FenceSeedKey) + "\n")
	const reason = "seeded from 4 of the other 4 masters (10.0.1.12:6379, 10.0.1.13:6379, 10.0.1.14:6379, 10.0.1.15:6379)"
	if err := m.Admin().HSet(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedSeeded,
		audit.FenceSeedReasonField, reason, audit.FenceSeedFromField, "10.0.1.12:6379,10.0.1.13:6379").Err(); err != nil {
		t.Fatal(err)
	}
	p.write(hold.HostUnseededRecord, "restored\n")
	if out, err := p.try("functions"); err != nil {
		t.Fatalf("functions: %v\n%s", err, out)
	}
	s, err := audit.ReadFenceSeed(ctx, m.Admin())
	if err != nil {
		t.Fatal(err)
	}
	if s.State != audit.FenceSeedUnseeded {
		t.Fatalf("state %q", s.State)
	}
	if s.Reason == reason || s.From != "" {
		t.Errorf("a restored master marked unseeded keeps the backup's seeding: reason %q, from %q", s.Reason, s.From)
	}
}

// TestReviewHandStartBeforeTheStoppedStep (finding 10, low): the stopped step writes the
// token over whatever the pidfile holds ("the server removed its pidfile at its exit"). A
// server started with the master's config between the unit's server's exit and ExecStopPost
// (up to ~5 s while durable_exit waits for the journal) has written its pid there: the token
// replaces it, the marker names the token, and once that server is gone (killed, its locks
// granted) the next start is at once.
func TestReviewHandStartBeforeTheStoppedStep(t *testing.T) {
	p := newPolicy(t, 2*time.Second)
	p.setClock(9_000_000)
	srv := p.startServerConfig()
	pid := strconv.Itoa(srv.cmd.Process.Pid)
	p.run("started", "MAINPID="+pid)
	p.run("stop", "MAINPID="+pid)
	if err := srv.wait(); err != nil {
		t.Fatal(err)
	}
	hand := p.startServerConfig("--appendonly", "no") // by hand, before systemd runs ExecStopPost
	handPid := strings.TrimSpace(p.read("redis-server.pid"))
	out, _ := p.try("stopped", "SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0")
	if err := hand.admin.Set(context.Background(), "billing:lock", "granted by the server run by hand", 0).Err(); err != nil {
		t.Fatal(err)
	}
	hand.kill()
	g := p.startGate()
	if gateDecision(g) == "at once" {
		t.Errorf("a server started with the master's config before the stopped step (its pid %s in the pidfile) was overwritten by the token: at once\nstopped:\n%s\ngate:\n%s",
			handPid, out, g.output())
	}
	g.stop()
}

// gateDecision waits until the gate says whether it starts at once or holds.
func gateDecision(g *gateRun) string {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		switch out := g.output(); {
		case strings.Contains(out, "starting at once"):
			return "at once"
		case strings.Contains(out, "holding the start for"):
			return "held"
		}
	}
	return "neither"
}
