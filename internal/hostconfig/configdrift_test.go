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

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// TestConfigDriftPublished: the server config on disk is compared with the one rendered for
// the host (CONFIG_SHA256 in master.conf). The start's record (the functions step) and the
// state timer's step publish the difference in the deployment record, which the audit
// reports; the file as rendered publishes nothing (the negative control). An edit put back
// before any start is cleared at the next tick; a start on the edited file stays in the
// record for that server's run, until a start on the rendered file. A refused write is
// logged; a record that names another server run, or is gone, is left alone.
func TestConfigDriftPublished(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 1, ACLFile: true})
	m := cl.Masters[0]
	ctx := context.Background()
	p := newPolicy(t, time.Second)
	withHostAdmin(t, p, m)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not on PATH: run `make deps`")
	}
	lib := filepath.Join(p.dir, "redlock-functions.lua")
	if err := os.WriteFile(lib, []byte(lua.FunctionLibrary().Code), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Render(testHost())
	if err != nil {
		t.Fatal(err)
	}
	rendered := file(t, b, ConfDir+"/"+b.Server.Package+".conf").Content
	if mc := file(t, b, MasterConfPath).Content; !strings.Contains(mc, "\nCONFIG_SHA256="+shellQuote(sha256Hex(rendered))+"\n") {
		t.Fatalf("master.conf does not carry the rendered server config's sha256:\n%s", mc)
	}
	confFile := filepath.Join(p.dir, "redis-server.conf")
	if err := os.WriteFile(confFile, []byte(rendered), 0o600); err != nil {
		t.Fatal(err)
	}
	extra := fmt.Sprintf("HOST=%s\nPORT=%d\nCLI=%s\nFUNCTIONS_FILE=%s\nCONFIG_FILE=%s\nCONFIG_SHA256=%s\n",
		m.Host, m.Port, cli, lib, shellQuote(confFile), sha256Hex(rendered))
	p.appendConf(extra)
	drift := func() (string, bool) {
		t.Helper()
		got, err := m.Admin().HGetAll(ctx, hold.DeploymentKey).Result()
		if err != nil {
			t.Fatal(err)
		}
		d, ok := got[hold.FieldConfigDrift]
		return d, ok
	}

	if err := os.MkdirAll(filepath.Join(p.dir, "run"), 0o755); err != nil { // the gate makes it
		t.Fatal(err)
	}
	edit := func(text string) {
		t.Helper()
		if err := os.WriteFile(confFile, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	const loaded = "the server runs on a config that was not the rendered one"

	p.run("functions")
	if d, ok := drift(); !ok || d != "" {
		t.Fatalf("the file as rendered: %s = %q (present %v), want present and empty", hold.FieldConfigDrift, d, ok)
	}
	p.run("state")
	if d, _ := drift(); d != "" {
		t.Fatalf("the file as rendered, after the state step: %s = %q, want empty", hold.FieldConfigDrift, d)
	}

	// A hand edit while the server runs: it keeps its values, its next start would not.
	edit(rendered + "appendfsync no\n")
	out, _ := p.run("state")
	d, _ := drift()
	for _, want := range []string{confFile, "changed on disk", sha256Hex(rendered)} {
		if !strings.Contains(d, want) {
			t.Errorf("after a hand edit: %s = %q, want it to name %q", hold.FieldConfigDrift, d, want)
		}
	}
	if !strings.Contains(out, "changed on disk") {
		t.Errorf("the state step does not log the drift:\n%s", out)
	}
	// Put back before any start: the server never loaded the edit, and the next tick clears it.
	edit(rendered)
	p.run("state")
	if d, _ := drift(); d != "" {
		t.Errorf("the file put back: %s = %q, want empty", hold.FieldConfigDrift, d)
	}

	// A file that cannot be read is drift too.
	if err := os.Remove(confFile); err != nil {
		t.Fatal(err)
	}
	p.run("state")
	if d, _ := drift(); !strings.Contains(d, "unreadable") {
		t.Errorf("the file removed: %s = %q, want it to say unreadable", hold.FieldConfigDrift, d)
	}
	edit(rendered)

	// A start on the edited file (the functions step of that start): the drift stays for the
	// whole run, the file put back or not, until a start on the rendered file.
	edit(rendered + "appendfsync no\n")
	p.run("functions")
	if d, _ := drift(); !strings.Contains(d, "changed on disk") {
		t.Errorf("a start on the edited file: %s = %q, want the drift", hold.FieldConfigDrift, d)
	}
	edit(rendered)
	p.run("state")
	if d, _ := drift(); !strings.Contains(d, loaded) || !strings.Contains(d, confFile) {
		t.Errorf("the file put back after a start on the edit: %s = %q, want %q naming the file", hold.FieldConfigDrift, d, loaded)
	}
	p.run("functions") // a start on the rendered file
	p.run("state")
	if d, _ := drift(); d != "" {
		t.Errorf("after a start on the rendered file: %s = %q, want empty", hold.FieldConfigDrift, d)
	}

	// The tick's write is checked: an error reply (a master over maxmemory) is logged, not
	// taken for done (redis-cli exits 0 on error replies).
	if err := m.Admin().ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	edit(rendered + "appendfsync no\n")
	out, _ = p.run("state")
	if err := m.Admin().ConfigSet(ctx, "maxmemory", "64mb").Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "cannot publish the config drift") || !strings.Contains(out, "OOM") {
		t.Errorf("the tick's write refused (OOM): the step logged\n%s", out)
	}
	edit(rendered)
	p.run("state")

	// The tick writes only into the record of the server running now: a record naming
	// another run is not made to look current.
	if err := m.Admin().HSet(ctx, hold.DeploymentKey, hold.FieldRunID, strings.Repeat("0", 40)).Err(); err != nil {
		t.Fatal(err)
	}
	edit(rendered + "appendfsync no\n")
	p.run("state")
	if d, _ := drift(); d != "" {
		t.Errorf("a record of another run: the tick wrote %s = %q into it", hold.FieldConfigDrift, d)
	}
	// Nor is a record that is gone recreated: the tick takes the server for a flushed one
	// and kills it (the Exists below may find it dead: no record either).
	if err := m.Admin().Del(ctx, hold.DeploymentKey).Err(); err != nil {
		t.Fatal(err)
	}
	out, _ = p.run("state")
	if n, err := m.Admin().Exists(ctx, hold.DeploymentKey).Result(); (err == nil && n != 0) || !strings.Contains(out, "killed") {
		t.Errorf("the record deleted: the tick recreated it (%d, %v), or did not kill the server:\n%s", n, err, out)
	}
}
