package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"golang.org/x/sys/unix"
)

// TestDeploymentRecordPublished: after every start the supervisor writes, as the admin, the
// restart delay its hold uses and its runtime's name; a lowered delay is published with its
// floor (the larger delay the running master granted under), not as configured.
func TestDeploymentRecordPublished(t *testing.T) {
	t.Parallel()
	m := newMaster(t, 2*time.Second)
	pid := m.spawn()
	st := m.waitReady(pid)
	ctx := context.Background()
	want := func(when, delayMS string) {
		t.Helper()
		got, err := m.admin().HGetAll(ctx, hold.DeploymentKey).Result()
		info, _ := m.admin().InfoMap(ctx, "server").Result()
		if runID := info["Server"]["run_id"]; got[hold.FieldRunID] != runID || runID == "" {
			t.Fatalf("%s: %s=%q, want this server's run_id %q", when, hold.FieldRunID, got[hold.FieldRunID], runID)
		}
		repl, _ := m.admin().InfoMap(ctx, "replication").Result()
		if id := repl["Replication"]["master_replid"]; got[hold.FieldReplID] != id || id == "" {
			t.Fatalf("%s: %s=%q, want this server's master_replid %q", when, hold.FieldReplID, got[hold.FieldReplID], id)
		}
		if fs, err := hold.DataFS(m.dir); err != nil || fs == "" || got[hold.FieldDataFS] != fs {
			t.Fatalf("%s: %s=%q, want %q (%v), the filesystem the data dir is on", when, hold.FieldDataFS, got[hold.FieldDataFS], fs, err)
		}
		if err != nil || got[hold.FieldRestartDelayMS] != delayMS || got[hold.FieldRuntime] != hold.RuntimeLocal {
			t.Fatalf("%s: %s = %v (%v), want %s=%s %s=%s", when, hold.DeploymentKey, got, err,
				hold.FieldRestartDelayMS, delayMS, hold.FieldRuntime, hold.RuntimeLocal)
		}
	}
	want("first start", "2000")

	// Negative control: gone after a delete, back after the next start.
	if err := m.admin().Del(ctx, hold.DeploymentKey).Err(); err != nil {
		t.Fatal(err)
	}
	if n, _ := m.admin().Exists(ctx, hold.DeploymentKey).Result(); n != 0 {
		t.Fatal("the record survived its delete")
	}
	// The supervisor kills a server whose record is gone at its next tick (a flushed
	// keyspace); on a busy machine that tick can come before the test's kill.
	m.killRedisOrGone(st.RedisPID)
	m.waitState("holding", func(s State) bool { return s.Status == StatusHolding })
	m.waitReady(pid)
	want("after a crash and its hold", "2000")

	// The delay deleted first, so that its return proves the reload republished it (the
	// field: a record gone is a flushed keyspace, and the master would be killed for it).
	if err := m.admin().HDel(ctx, hold.DeploymentKey, hold.FieldRestartDelayMS).Err(); err != nil {
		t.Fatal(err)
	}
	m.cfg.RestartDelay = 500 * time.Millisecond
	if err := WriteConfig(m.dir, m.cfg); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reload in the log", func() bool { return strings.Contains(logTail(m.dir, 4000), "config reloaded") })
	waitFor(t, "the record republished", func() bool {
		n, err := m.admin().HExists(ctx, hold.DeploymentKey, hold.FieldRestartDelayMS).Result()
		return err == nil && n
	})
	// The master granted locks under 2s a moment ago: a crash now is held about 2s.
	got, err := m.admin().HGet(ctx, hold.DeploymentKey, hold.FieldRestartDelayMS).Result()
	if err != nil || got == "500" {
		t.Fatalf("after lowering the delay to 500ms: %s=%q (%v), want the floor (about 2000), not 500", hold.FieldRestartDelayMS, got, err)
	}
	// The floor lapses about 2s after the reload: from then a crash is held 500ms, and the
	// record says so at once (not at the next start). Until then it never says more than a
	// crash would be held.
	waitFor(t, "the lapsed floor republished as the configured delay", func() bool {
		st := m.state()
		got, err := m.admin().HGet(ctx, hold.DeploymentKey, hold.FieldRestartDelayMS).Result()
		ms, _ := strconv.ParseInt(got, 10, 64)
		if held := time.Until(st.HoldFloor); err == nil && ms > 500 && time.Duration(ms)*time.Millisecond > held+stateInterval+pingInterval {
			t.Fatalf("%s=%s while a crash now would be held about %v", hold.FieldRestartDelayMS, got, max(held, 500*time.Millisecond))
		}
		return err == nil && got == "500"
	})
}

// TestConfigDriftPublished: redis.conf changed on disk while the server runs on safe values
// (its next start would load the change) is published in the deployment record, naming the
// file and the setting, within a second or so; put back, the drift is cleared.
func TestConfigDriftPublished(t *testing.T) {
	t.Parallel()
	m := newMaster(t, 2*time.Second)
	text, err := os.ReadFile(m.cfg.ConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(text)
	m.cfg.ConfigSHA256 = hex.EncodeToString(sum[:])
	if err := WriteConfig(m.dir, m.cfg); err != nil {
		t.Fatal(err)
	}
	m.waitReady(m.spawn())
	ctx := context.Background()
	drift := func() string {
		got, err := m.admin().HGetAll(ctx, hold.DeploymentKey).Result()
		if err != nil {
			t.Fatal(err)
		}
		return got[hold.FieldConfigDrift]
	}
	if d := drift(); d != "" {
		t.Fatalf("%s = %q with the rendered file on disk", hold.FieldConfigDrift, d)
	}
	if err := os.WriteFile(m.cfg.ConfigFile, append(append([]byte(nil), text...), "appendfsync no\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the drift published", func() bool {
		d := drift()
		return strings.Contains(d, m.cfg.ConfigFile) && strings.Contains(d, "appendfsync")
	})
	if err := os.WriteFile(m.cfg.ConfigFile, text, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the drift cleared", func() bool { return drift() == "" })

	// A server started on the edited file keeps it for its run: putting the file back
	// does not clear the drift, a start on the rendered file does.
	if err := os.WriteFile(m.cfg.ConfigFile, append(append([]byte(nil), text...), "appendfsync no\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the drift published again", func() bool { return strings.Contains(drift(), "appendfsync") })
	edited := m.state().RedisPID
	m.killRedis(edited)
	waitFor(t, "the server restarted on the edited file", func() bool {
		st := m.state()
		return st.Status == StatusRunning && st.RedisPID != 0 && st.RedisPID != edited && m.accepts()
	})
	if err := os.WriteFile(m.cfg.ConfigFile, text, 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the drift to name the start on the edited file", func() bool {
		return strings.Contains(drift(), "was started on a config file that was not the rendered one")
	})
	// Ticks go by (the file is checked once a second): it stays.
	time.Sleep(1500 * time.Millisecond)
	if d := drift(); !strings.Contains(d, "was started on a config file that was not the rendered one") {
		t.Fatalf("after the file was put back, %s = %q: the run on the edited file is forgotten", hold.FieldConfigDrift, d)
	}
	restarted := m.state().RedisPID
	m.killRedis(restarted)
	waitFor(t, "a start on the rendered file clears it", func() bool {
		st := m.state()
		return st.Status == StatusRunning && st.RedisPID != restarted && m.accepts() && drift() == ""
	})
}

// TestReplacedDatasetHeldLikeACrash: a master that replicated another server (REPLICAOF,
// then NO ONE) serves another dataset: its lock keys may be gone, so a lock it granted can be
// granted again. The supervisor sees its replication id change (at the next heartbeat) and
// treats it as a master that lost its data: it kills it and holds it down for restart_delay
// from the exit, as after a crash; the record is never republished for that run. The control:
// REPLICAOF NO ONE on a master that was no replica (what every provider update sends) changes
// nothing, and the master serves on. Before, the replaced master served on, unheld.
func TestReplacedDatasetHeldLikeACrash(t *testing.T) {
	t.Parallel()
	const delay = 2 * time.Second
	m := newMaster(t, delay)
	pid := m.spawn()
	st := m.waitReady(pid)
	ctx := context.Background()
	a := m.admin()
	if err := a.ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	// Heartbeats go by (each reads the replication id): the control stays up, the same server.
	beat := func() string { v, _ := a.HGet(ctx, hold.DeploymentKey, hold.FieldHeartbeatMS).Result(); return v }
	for i, last := 0, beat(); i < 2; i++ {
		waitFor(t, "a heartbeat after the no-op REPLICAOF NO ONE", func() bool { return beat() != last })
		last = beat()
	}
	if now := m.state(); now.RedisPID != st.RedisPID || now.Status != StatusRunning {
		t.Fatalf("REPLICAOF NO ONE on a master: pid %d status %s, want %d running", now.RedisPID, now.Status, st.RedisPID)
	}
	// A backup by SYNC (redis-cli --rdb) gives the master a new replication id (Redis makes
	// its backlog), with no replication: the master serves on, and the record names the new id.
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not on PATH: run `make deps`")
	}
	host, port, _ := net.SplitHostPort(m.cfg.Addr)
	backup := exec.Command(cli, "-h", host, "-p", port, "--user", "default", "--pass", redistest.AdminPassword, "--no-auth-warning",
		"--rdb", filepath.Join(t.TempDir(), "backup.rdb"))
	if out, err := backup.CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --rdb: %v\n%s", err, out)
	}
	replID := func() string {
		r, _ := a.InfoMap(ctx, "replication").Result()
		return r["Replication"]["master_replid"]
	}
	waitFor(t, "the record to name the replication id after the backup", func() bool {
		got, _ := a.HGet(ctx, hold.DeploymentKey, hold.FieldReplID).Result()
		return got == replID()
	})
	for i, last := 0, beat(); i < 2; i++ {
		waitFor(t, "a heartbeat after the backup", func() bool { return beat() != last })
		last = beat()
	}
	if now := m.state(); now.RedisPID != st.RedisPID || now.Status != StatusRunning {
		t.Fatalf("after a backup (redis-cli --rdb): pid %d status %s %q, want %d running", now.RedisPID, now.Status, now.LastError, st.RedisPID)
	}

	m.replicateAnother(st.RedisPID)
	held := m.waitState("held after the replaced dataset", func(s State) bool {
		return s.Status == StatusHolding && strings.Contains(s.LastError, "dataset was replaced")
	})
	if want := held.LastExit.Add(delay); held.RestartAt.Round(0).Before(want.Round(0)) {
		t.Fatalf("RestartAt %v, want restart_delay %v from the exit %v", held.RestartAt, delay, held.LastExit)
	}
	if processAlive(st.RedisPID) {
		t.Fatalf("the replaced server (pid %d) still runs", st.RedisPID)
	}
	if _, refused := m.probeHold(held.RestartAt); refused == 0 {
		t.Fatal("no probe completed during the hold")
	}
	after := m.waitReady(pid)
	got, _ := m.admin().HGetAll(ctx, hold.DeploymentKey).Result()
	info, _ := m.admin().InfoMap(ctx, "server").Result()
	if runID := info["Server"]["run_id"]; after.RedisPID == st.RedisPID || got[hold.FieldRunID] != runID {
		t.Fatalf("after the hold: pid %d (was %d), record %v, run_id %s: want a new server the record names", after.RedisPID, st.RedisPID, got, runID)
	}
}

// TestDeploymentRecordStopsVouchingWhenTheSupervisorIsKilled: the supervisor SIGKILLed, its
// redis-server serves on with nothing to hold it down after its next crash. The record's
// heartbeat stops, and the audit's finding on it appears (before: the record vouched on).
func TestDeploymentRecordStopsVouchingWhenTheSupervisorIsKilled(t *testing.T) {
	t.Parallel()
	m := newMaster(t, 2*time.Second)
	pid := m.spawn()
	st := m.waitReady(pid)
	deploymentError := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rep, err := audit.Run(ctx, audit.Target{Endpoints: []string{m.cfg.Addr}, Username: "default",
			Password: redistest.AdminPassword, MaxLockTTL: time.Second, ClockInterval: 100 * time.Millisecond})
		if err != nil || len(rep.Masters) != 1 {
			t.Fatalf("audit: %v", err)
		}
		return rep.Masters[0].DeploymentError
	}
	// Negative control: while the supervisor runs, the record vouches.
	waitFor(t, "the record to vouch under a running supervisor", func() bool { return deploymentError() == "" })
	m.killSupervisor(pid)
	if !processAlive(st.RedisPID) {
		t.Fatal("redis-server died with its supervisor")
	}
	waitFor(t, "the audit to see the supervisor gone", func() bool {
		return strings.Contains(deploymentError(), "the runtime is gone")
	})
	t.Logf("after the kill: %s", deploymentError())
}

// TestDataDirOnTmpfs: a master whose data dir is a real tmpfs mount (a reboot empties it,
// whatever appendfsync says). The supervisor publishes the filesystem's type, and the audit
// reports the master UNSAFE for it; TestDeploymentRecordPublished is the control on disk.
func TestDataDirOnTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	t.Parallel()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=64m,mode=0700"); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v", dir, err)
	}
	// Registered before the master's cleanup, so it runs after it: the servers are gone.
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount the tmpfs on %s: %v", dir, err)
		}
	})
	m := newMasterIn(t, dir, 2*time.Second)
	m.waitReady(m.spawn())
	ctx := context.Background()
	if got, err := m.admin().HGet(ctx, hold.DeploymentKey, hold.FieldDataFS).Result(); err != nil || got != "tmpfs" {
		t.Fatalf("%s = %q (%v), want tmpfs", hold.FieldDataFS, got, err)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rep, err := audit.Run(rctx, audit.Target{Endpoints: []string{m.cfg.Addr}, Username: "default",
		Password: redistest.AdminPassword, MaxLockTTL: time.Second, ClockInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	if all := strings.Join(rep.Problems, "\n"); !strings.Contains(all, "keeps its data dir on tmpfs") {
		t.Fatalf("a master on tmpfs: no finding on its storage in\n%s", all)
	}
}

// TestReplacedThenStoppedIsNoCleanStop: a master whose dataset was replaced, stopped before
// the next heartbeat could see it: its stop must leave no clean marker (the next start would
// serve at once, without the locks it granted: another server's dataset was fsynced).
func TestReplacedThenStoppedIsNoCleanStop(t *testing.T) {
	t.Parallel()
	m := newMaster(t, 2*time.Second)
	pid := m.spawn()
	st := m.waitReady(pid)
	ctx := context.Background()
	m.replicateAnother(st.RedisPID)
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := Stop(sctx, m.dir); err != nil {
		t.Logf("Stop: %v", err)
	}
	if CleanStop(m.dir) {
		t.Fatalf("a replaced master's stop left a clean marker: its next start would serve at once\n%s", logTail(m.dir, 3000))
	}
}

// replicateAnother makes the master's server (pid redisPID) a replica of a server of its
// own, waits until it has synced or its supervisor has killed it for it, and ends the
// replication if the server is still there (REPLICAOF NO ONE).
func (m *testMaster) replicateAnother(redisPID int) {
	m.t.Helper()
	ctx := context.Background()
	a := m.admin()
	other := redistest.Start(m.t, redistest.Options{Masters: 1}).Masters[0]
	if err := a.ConfigSet(ctx, "masterauth", redistest.AdminPassword).Err(); err != nil {
		m.t.Fatal(err)
	}
	if err := a.ReplicaOf(ctx, other.Host, strconv.Itoa(other.Port)).Err(); err != nil {
		m.t.Fatal(err)
	}
	waitFor(m.t, "the sync or the kill", func() bool {
		info, _ := a.Info(ctx, "replication").Result()
		st := m.state()
		return strings.Contains(info, "master_link_status:up") || st.RedisPID != redisPID || st.Status != StatusRunning
	})
	_ = a.ReplicaOf(ctx, "NO", "ONE").Err()
}
