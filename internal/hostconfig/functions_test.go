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

	"github.com/redlock-kit/redlock-kit/internal/funclib"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// TestFunctionsStep: the policy script's ExecStartPost step loads the rendered function
// library into a real server as the host's own admin (password made by setup's host_admin
// step, in its 0600 file), and fails, saying
// why, when the library does not load: systemd then fails the start.
func TestFunctionsStep(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1, ACLFile: true})
	m := cl.Masters[0]
	ctx := context.Background()
	p := newPolicy(t, time.Second)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not on PATH: run `make deps`")
	}
	_, pwFile := withHostAdmin(t, p, m)
	lib := filepath.Join(p.dir, "redlock-functions.lua")
	// The bundle's file, as a host gets it.
	b, err := Render(testHost())
	if err != nil {
		t.Fatal(err)
	}
	f := file(t, b, FunctionsPath)
	if f.Content != lua.FunctionLibrary().Code || f.Permissions != "0644" {
		t.Fatalf("%s: permissions %s, content is not the library", f.Path, f.Permissions)
	}
	if err := os.WriteFile(lib, []byte(f.Content), 0o644); err != nil {
		t.Fatal(err)
	}
	if d := file(t, b, DropInPath(b.Server)).Content; !strings.Contains(d, "ExecStartPost=+"+ScriptPath+" functions\n") {
		t.Fatalf("the drop-in does not fail the start on a failed load (ExecStartPost without '-'):\n%s", d)
	}
	// The rendered settings, pointed at the test's server, CLI and files (later
	// assignments win).
	extra := fmt.Sprintf("HOST=%s\nPORT=%d\nCLI=%s\nFUNCTIONS_FILE=%s\n", m.Host, m.Port, cli, lib)
	conf, err := os.ReadFile(filepath.Join(p.dir, "master.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(hostScript, "\nFUNCTIONS_LIBRARY='"+lua.LibraryName+"'\n") {
		t.Fatalf("the script's generated head lacks FUNCTIONS_LIBRARY:\n%s", kitNames())
	}
	if err := os.WriteFile(filepath.Join(p.dir, "master.conf"), append(conf, extra...), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() (string, error) {
		cmd := exec.Command(filepath.Join(p.dir, "redlock-master"), "functions")
		cmd.Env = append(os.Environ(), "REDLOCK_MASTER_CONF="+filepath.Join(p.dir, "master.conf"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	if err := m.Admin().FunctionDelete(ctx, lua.LibraryName).Err(); err != nil {
		t.Fatal(err)
	}
	if out, err := run(); err != nil {
		t.Fatalf("functions step: %v\n%s", err, out)
	}
	if st, err := funclib.Check(ctx, m.Admin()); err != nil || !st.Current {
		t.Fatalf("after the step: %+v %v, want the current library", st, err)
	}
	// The deployment record a validator reads: the delay the gate holds for (1s here).
	got, err := m.Admin().HGetAll(ctx, hold.DeploymentKey).Result()
	if err != nil || got[hold.FieldRestartDelayMS] != "1000" || got[hold.FieldRuntime] != hold.RuntimeHost {
		t.Fatalf("after the step: %s = %v (%v), want %s=1000 %s=%s", hold.DeploymentKey, got, err,
			hold.FieldRestartDelayMS, hold.FieldRuntime, hold.RuntimeHost)
	}
	info, _ := m.Admin().InfoMap(ctx, "server").Result()
	if runID := info["Server"]["run_id"]; runID == "" || got[hold.FieldRunID] != runID {
		t.Fatalf("after the step: %s=%q, want this server's run_id %q", hold.FieldRunID, got[hold.FieldRunID], runID)
	}
	repl, _ := m.Admin().InfoMap(ctx, "replication").Result()
	if id := repl["Replication"]["master_replid"]; id == "" || got[hold.FieldReplID] != id {
		t.Fatalf("after the step: %s=%q, want this server's master_replid %q", hold.FieldReplID, got[hold.FieldReplID], id)
	}
	// The storage the data dir is on, named as the supervisor names it (the audit reports a
	// volatile one).
	if fs, err := hold.DataFS(p.dataDir); err != nil || fs == "" || got[hold.FieldDataFS] != fs {
		t.Fatalf("after the step: %s=%q, want %q (%v), the type of the filesystem %s is on", hold.FieldDataFS, got[hold.FieldDataFS], fs, err, p.dataDir)
	}
	// A stat that fails (or prints nothing) fails the start closed, rather than publish a
	// record that says nothing of the storage.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "stat"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	failing := exec.Command(filepath.Join(p.dir, "redlock-master"), "functions")
	failing.Env = append(os.Environ(), "REDLOCK_MASTER_CONF="+filepath.Join(p.dir, "master.conf"), "PATH="+bin+":"+os.Getenv("PATH"))
	if out, err := failing.CombinedOutput(); err == nil || !strings.Contains(string(out), "cannot tell the storage") {
		t.Fatalf("functions step with a failing stat: %v\n%s\nwant it to fail, saying why", err, out)
	}
	// A floor still in effect (locks granted under a larger delay before a restart) is not
	// published: the gate cannot republish when it lapses, so the record says what a lock
	// granted from now on is held for, never more (a stale 60000 let clients keep a 59 s TTL).
	bootID, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	var upSecs float64
	if up, err := os.ReadFile("/proc/uptime"); err != nil || func() error { _, err := fmt.Sscan(string(up), &upSecs); return err }() != nil {
		t.Fatalf("read /proc/uptime: %v", err)
	}
	floorRecord := fmt.Sprintf("%s %d 60000 1000\n", strings.TrimSpace(string(bootID)), int64(upSecs*1000)+60_000)
	if err := os.WriteFile(filepath.Join(p.dataDir, hold.HostFloorRecord), []byte(floorRecord), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(); err != nil {
		t.Fatalf("functions step with a floor: %v\n%s", err, out)
	}
	if got, err := m.Admin().HGet(ctx, hold.DeploymentKey, hold.FieldRestartDelayMS).Result(); err != nil || got != "1000" {
		t.Fatalf("with a floor 60 s ahead: %s = %q (%v), want 1000 (what locks granted from now on are held for)", hold.FieldRestartDelayMS, got, err)
	}
	if err := os.Remove(filepath.Join(p.dataDir, hold.HostFloorRecord)); err != nil {
		t.Fatal(err)
	}
	// A record that cannot be written fails the start, saying why.
	if err := m.Admin().Set(ctx, hold.DeploymentKey, "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if out, err := run(); err == nil || !strings.Contains(out, "cannot record the restart delay") {
		t.Fatalf("functions step with an unwritable deployment record: %v\n%s; want a failure that says so", err, out)
	}
	if err := m.Admin().Del(ctx, hold.DeploymentKey).Err(); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(lib, []byte("#!lua name=redlock\nthis is not lua"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run()
	if err == nil || !strings.Contains(out, "cannot load the function library") {
		t.Fatalf("functions step with a broken library: %v\n%s; want a failure that says so", err, out)
	}
	if err := os.WriteFile(pwFile, []byte("wrong"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(); err == nil || !strings.Contains(out, "WRONGPASS") {
		t.Fatalf("functions step with a wrong admin password: %v\n%s; want a failure naming WRONGPASS", err, out)
	}
}
