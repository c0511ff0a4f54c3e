package audit_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestRenamedFunctionIsUnchecked: with FUNCTION renamed away (rename-command FUNCTION ""),
// the audit cannot see which code runs under the kit's function names, and the admin may
// have loaded any under the new name. That was SAFE; it is a check not made (INCONCLUSIVE
// in validate) now. The other masters, whose library is read, are the negative control.
func TestRenamedFunctionIsUnchecked(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3})
	m := c.Masters[1]
	// The AOF's incremental file replays FUNCTION LOAD, which a renamed FUNCTION refuses:
	// rewrite it first, so that the library is in the base (RDB preamble) only.
	if err := m.Admin().BgRewriteAOF(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	for {
		info, err := m.Admin().Info(t.Context(), "persistence").Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	start := time.Now()
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(m.ConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m.ConfigFile, append(conf, "\nrename-command FUNCTION \"\"\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	// Started by hand: the kit's restart loads the library, which the renamed FUNCTION
	// refuses, and stops the server.
	cmd := exec.Command("redis-server", m.ConfigFile)
	cmd.Dir = m.DataDir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for m.Admin().Ping(t.Context()).Err() != nil {
		if time.Since(start) > time.Minute {
			t.Fatal("the restarted master never answered")
		}
		time.Sleep(20 * time.Millisecond)
	}
	rep := run(t, target(c))
	if rep.Safe {
		t.Fatalf("audit says SAFE although one master's functions could not be read: %+v", rep.Masters[1])
	}
	for _, am := range rep.Masters {
		named := strings.Contains(strings.Join(am.Unchecked, "\n"), "FUNCTION LIST")
		if named != (am.Endpoint == m.Addr) {
			t.Errorf("%s: unchecked %q; want the FUNCTION LIST gap on %s only", am.Endpoint, am.Unchecked, m.Addr)
		}
	}
}
