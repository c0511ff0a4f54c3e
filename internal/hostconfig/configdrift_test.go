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
// reports; the file as rendered publishes nothing (the negative control), and putting it
// back clears the finding at the next tick. A record that names another server run is left
// alone.
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
	f, err := os.OpenFile(filepath.Join(p.dir, "master.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(extra); err != nil {
		t.Fatal(err)
	}
	f.Close()
	drift := func() (string, bool) {
		t.Helper()
		got, err := m.Admin().HGetAll(ctx, hold.DeploymentKey).Result()
		if err != nil {
			t.Fatal(err)
		}
		d, ok := got[hold.FieldConfigDrift]
		return d, ok
	}

	p.run("functions")
	if d, ok := drift(); !ok || d != "" {
		t.Fatalf("the file as rendered: %s = %q (present %v), want present and empty", hold.FieldConfigDrift, d, ok)
	}
	p.run("state")
	if d, _ := drift(); d != "" {
		t.Fatalf("the file as rendered, after the state step: %s = %q, want empty", hold.FieldConfigDrift, d)
	}

	// A hand edit: the running server keeps its values, its next start would not.
	if err := os.WriteFile(confFile, []byte(rendered+"appendfsync no\n"), 0o600); err != nil {
		t.Fatal(err)
	}
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
	p.run("functions") // a start publishes it too
	if d2, _ := drift(); d2 != d {
		t.Errorf("the start's record: %s = %q, want %q", hold.FieldConfigDrift, d2, d)
	}

	// A file that cannot be read is drift too.
	if err := os.Remove(confFile); err != nil {
		t.Fatal(err)
	}
	p.run("state")
	if d, _ := drift(); !strings.Contains(d, "unreadable") {
		t.Errorf("the file removed: %s = %q, want it to say unreadable", hold.FieldConfigDrift, d)
	}

	// Put back: the next tick clears it.
	if err := os.WriteFile(confFile, []byte(rendered), 0o600); err != nil {
		t.Fatal(err)
	}
	p.run("state")
	if d, _ := drift(); d != "" {
		t.Errorf("the file put back: %s = %q, want empty", hold.FieldConfigDrift, d)
	}

	// The tick writes only into the record of the server running now: a record naming
	// another run is not made to look current.
	if err := m.Admin().HSet(ctx, hold.DeploymentKey, hold.FieldRunID, strings.Repeat("0", 40)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(confFile, []byte(rendered+"appendfsync no\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.run("state")
	if d, _ := drift(); d != "" {
		t.Errorf("a record of another run: the tick wrote %s = %q into it", hold.FieldConfigDrift, d)
	}
	// Nor is a record that is gone recreated.
	if err := m.Admin().Del(ctx, hold.DeploymentKey).Err(); err != nil {
		t.Fatal(err)
	}
	p.run("state")
	if n, err := m.Admin().Exists(ctx, hold.DeploymentKey).Result(); err != nil || n != 0 {
		t.Errorf("the record deleted: the tick recreated it (%d, %v)", n, err)
	}
}
