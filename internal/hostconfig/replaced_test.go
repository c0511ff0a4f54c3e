package hostconfig

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// withFunctions points master.conf at the kit's function library in the test's dir, so that
// the functions step (load it, publish the deployment record) runs against a test server.
func (p *policy) withFunctions() {
	p.t.Helper()
	lib := filepath.Join(p.dir, "redlock-functions.lua")
	if err := os.WriteFile(lib, []byte(lua.FunctionLibrary().Code), 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.appendConf("FUNCTIONS_FILE=" + shellQuote(lib) + "\n")
}

// replicateAnother makes srv replicate another server (REPLICAOF, a full sync), then a
// master again (REPLICAOF NO ONE): the other server's dataset replaced its own, and it
// serves on, its master_replid2 the id it had as a replica.
func (p *policy) replicateAnother(srv *testServer) {
	p.t.Helper()
	port, err := redistest.FreePort(p.host)
	if err != nil {
		p.t.Fatal(err)
	}
	other := p.startServerOn(p.t.TempDir(), port)
	ctx := context.Background()
	if err := other.admin.Set(ctx, "other", "the other server's dataset", 0).Err(); err != nil {
		p.t.Fatal(err)
	}
	if err := srv.admin.ConfigSet(ctx, "masterauth", redistest.AdminPassword).Err(); err != nil {
		p.t.Fatal(err)
	}
	if err := srv.admin.Do(ctx, "REPLICAOF", p.host, strconv.Itoa(port)).Err(); err != nil {
		p.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, _ := srv.admin.Info(ctx, "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the server never synced from the other:\n%s", info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := srv.admin.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		p.t.Fatal(err)
	}
	if v, err := srv.admin.Get(ctx, "other").Result(); err != nil || v == "" {
		p.t.Fatalf("the other server's dataset did not replace the server's: %q, %v", v, err)
	}
}

// exitedWithin reports whether the server exited within d.
func (s *testServer) exitedWithin(d time.Duration) bool {
	select {
	case err := <-s.done:
		s.done <- err
		return true
	case <-time.After(d):
		return false
	}
}

// TestStateStepKillsAReplacedServer: the state timer's step decides as the local supervisor
// does (replacedSince) from the run_id and master_replid2 the functions step recorded at the
// start: a master that replicated another server (REPLICAOF, synced, then NO ONE) is
// killed (only when the pid it reports runs the server's binary), its stop after a
// replacement is no clean stop, and the controls serve on: a
// backup by SYNC (redis-cli --rdb: a new master_replid, nothing in master_replid2), and a
// replacement in a server the record of the start does not name.
func TestStateStepKillsAReplacedServer(t *testing.T) {
	start := func(t *testing.T) (*policy, *testServer, string) {
		p := newPolicy(t, 2*time.Second)
		p.setClock(4_000_000)
		srv := p.startServer(p.dataDir)
		pid := strconv.Itoa(srv.cmd.Process.Pid)
		p.withFunctions()
		p.run("functions")
		p.run("started", "MAINPID="+pid)
		return p, srv, pid
	}
	t.Run("replicated another server: killed, then held from the exit", func(t *testing.T) {
		t.Parallel()
		p, srv, _ := start(t)
		p.replicateAnother(srv)
		out, _ := p.run("state")
		if !srv.exitedWithin(10*time.Second) || !strings.Contains(out, "its dataset was replaced") {
			t.Fatalf("the state step did not kill the replaced server, or did not say why:\n%s", out)
		}
		p.run("stopped", "SERVICE_RESULT=signal", "EXIT_CODE=killed", "EXIT_STATUS=KILL")
		if p.exists(hold.HostCleanMarker) || !p.exists(hold.HostHoldRecord) {
			t.Fatalf("after the kill: clean marker %v, hold record %v", p.exists(hold.HostCleanMarker), p.exists(hold.HostHoldRecord))
		}
	})
	t.Run("a flushed keyspace (the record gone): killed, then held from the exit", func(t *testing.T) {
		t.Parallel()
		p, srv, _ := start(t)
		if err := srv.admin.FlushAll(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		out, _ := p.run("state")
		if !srv.exitedWithin(10*time.Second) || !strings.Contains(out, "its dataset was replaced") {
			t.Fatalf("the state step did not kill the flushed server, or did not say why:\n%s", out)
		}
		p.run("stopped", "SERVICE_RESULT=signal", "EXIT_CODE=killed", "EXIT_STATUS=KILL")
		if p.exists(hold.HostCleanMarker) || !p.exists(hold.HostHoldRecord) {
			t.Fatalf("after the kill: clean marker %v, hold record %v", p.exists(hold.HostCleanMarker), p.exists(hold.HostHoldRecord))
		}
	})
	t.Run("a stop after the replacement is no clean stop", func(t *testing.T) {
		t.Parallel()
		p, srv, pid := start(t)
		p.replicateAnother(srv)
		out, _ := p.run("stop", "MAINPID="+pid)
		if err := srv.wait(); err != nil {
			t.Fatalf("the server did not exit 0 after the stop step: %v", err)
		}
		stopped, _ := p.try("stopped", "SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0")
		if p.exists(hold.HostCleanMarker) || !p.exists(hold.HostHoldRecord) || !strings.Contains(out, "replaced") {
			t.Fatalf("a stop after a replacement: clean marker %v, hold record %v\nstop:\n%s\nstopped:\n%s",
				p.exists(hold.HostCleanMarker), p.exists(hold.HostHoldRecord), out, stopped)
		}
	})
	t.Run("control: a backup by SYNC (redis-cli --rdb) serves on", func(t *testing.T) {
		t.Parallel()
		p, srv, _ := start(t)
		ctx := context.Background()
		before, _ := srv.admin.Info(ctx, "replication").Result()
		cli, err := exec.LookPath("redis-cli")
		if err != nil {
			t.Fatal("redis-cli not on PATH")
		}
		backup := exec.Command(cli, "-h", p.host, "-p", strconv.Itoa(p.port), "--no-auth-warning", "--rdb", filepath.Join(t.TempDir(), "dump.rdb"))
		backup.Env = append(os.Environ(), "REDISCLI_AUTH="+redistest.AdminPassword)
		if out, err := backup.CombinedOutput(); err != nil {
			t.Fatalf("redis-cli --rdb: %v\n%s", err, out)
		}
		after, _ := srv.admin.Info(ctx, "replication").Result()
		if replID(before) == replID(after) {
			t.Fatalf("the backup gave the master no new master_replid (%s): the control tests nothing", replID(after))
		}
		out, _ := p.run("state")
		if srv.exitedWithin(2*time.Second) || strings.Contains(out, "replaced") {
			t.Fatalf("a backup by SYNC killed the server:\n%s", out)
		}
	})
	t.Run("a pid that does not run the server's binary is not killed, and the step says so", func(t *testing.T) {
		t.Parallel()
		p, srv, _ := start(t)
		p.appendConf("SERVER_BINARY=/bin/true\n")
		p.replicateAnother(srv)
		out, _ := p.run("state")
		if srv.exitedWithin(2*time.Second) || !strings.Contains(out, "cannot be killed") {
			t.Fatalf("the state step killed a pid it could not tell was the server's, or did not say so:\n%s", out)
		}
	})
	t.Run("control: a server the start's record does not name is left alone", func(t *testing.T) {
		t.Parallel()
		p, srv, _ := start(t)
		if err := os.WriteFile(filepath.Join(p.dir, "run", "repl"), []byte(strings.Repeat("f", 40)+" "+strings.Repeat("0", 40)+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p.replicateAnother(srv)
		out, _ := p.run("state")
		if srv.exitedWithin(2*time.Second) || strings.Contains(out, "replaced") {
			t.Fatalf("the state step killed a server its record does not name:\n%s", out)
		}
	})
}

// replID is master_replid in an INFO replication reply.
func replID(info string) string {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "master_replid:"); ok {
			return v
		}
	}
	return ""
}
