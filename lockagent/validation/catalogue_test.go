package validation_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// TestUnsafeCatalogue runs the catalogue of unsafe deployments on real masters: the clean
// deployment is SAFE (the negative control), and every unsafe change gets the verdict the
// catalogue names, none SAFE. The balancer case puts an in-test TCP round-robin balancer on
// loopback in front of a master and a spare server with the same users.
func TestUnsafeCatalogue(t *testing.T) {
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	spare := redistest.StartKit(t, redistest.Options{Masters: 1})
	results := validation.CheckCatalogue(t, configFor(c), validation.CatalogueOptions{Options: quick, Spare: spare.Masters[0].Addr})
	if len(results) != len(validation.UnsafeCatalogue())+1 {
		t.Fatalf("%d results for %d cases and the clean run", len(results), len(validation.UnsafeCatalogue()))
	}
	// CheckCatalogue logged each case; the table goes to REDLOCK_CATALOGUE_OUT only.
	var table strings.Builder
	for _, r := range results {
		fmt.Fprintf(&table, "%s\n", r)
		if r.Verdict != r.Want {
			t.Errorf("%q: verdict %q, want %q (%s)", r.Name, r.Verdict, r.Want, r.Finding)
		}
	}
	if path := os.Getenv("REDLOCK_CATALOGUE_OUT"); path != "" {
		_ = os.WriteFile(path, []byte(table.String()), 0o644)
	}
}

// TestRenamedACLIsInconclusive: a master that cannot be asked about its users (rename-command
// ACL "", as on a server without ACL DRYRUN) leaves the users unchecked, which is
// INCONCLUSIVE, never SAFE; a lock user with every right next to it is not waved through.
func TestRenamedACLIsInconclusive(t *testing.T) {
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	m := c.Masters[1]
	if err := m.Admin().Do(t.Context(), "ACL", "SETUSER", redistest.LockUser, "+@all", "-config").Err(); err != nil {
		t.Fatal(err)
	}
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(m.ConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	// The ACL rules of the lock user live in the config file; keep the widened rights.
	conf = []byte(strings.Replace(string(conf), "user "+redistest.LockUser+" ", "user "+redistest.LockUser+" +@all -config ", 1) + "rename-command ACL \"\"\n")
	if err := os.WriteFile(m.ConfigFile, conf, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	rep, err := validation.Run(t.Context(), configFor(c), quick)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != validation.VerdictInconclusive || rep.ExitCode() != validation.ExitInconclusive {
		t.Fatalf("verdict %s (exit %d), want INCONCLUSIVE:\n%s", rep.Verdict, rep.ExitCode(), rep)
	}
	if !strings.Contains(strings.Join(rep.Inconclusive, "\n"), m.Addr) {
		t.Errorf("inconclusive findings do not name %s:\n%s", m.Addr, rep)
	}
}

// TestLockConnectionsReachTheAuditedServer: the connections of phases 2 and 3 read the
// identity marker the admin wrote on the server the audit saw; a connection that reaches a
// server without it (here: the marker deleted on one master once phase 2 starts, as a
// balancer switching servers after the audit would look) makes the verdict UNSAFE.
func TestLockConnectionsReachTheAuditedServer(t *testing.T) {
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	m := c.Masters[0]
	opts := quick
	opts.Hook = func(point string) {
		if point != "behaviour" {
			return
		}
		keys, err := m.Admin().Keys(t.Context(), "redlock-kit:validate:*:identity").Result()
		if err != nil || len(keys) != 1 {
			t.Errorf("identity marker on %s: %v %v", m.Addr, keys, err)
			return
		}
		if err := m.Admin().Del(t.Context(), keys...).Err(); err != nil {
			t.Error(err)
		}
	}
	rep, err := validation.Run(t.Context(), configFor(c), opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != validation.VerdictUnsafe || !strings.Contains(strings.Join(rep.Problems, "\n"), m.Addr+": a lock connection of phases 2-3 reached a server without the identity marker") {
		t.Fatalf("verdict %s, want UNSAFE naming %s:\n%s", rep.Verdict, m.Addr, rep)
	}
}

// TestMonitoringUserIsSafe is the negative control of the users' checks: a keyless
// monitoring user with the read-only commands a metrics exporter needs (some of which the
// server marks @admin or @dangerous) keeps the deployment SAFE.
func TestMonitoringUserIsSafe(t *testing.T) {
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	for _, m := range c.Masters {
		if err := m.Admin().Do(t.Context(), "ACL", "SETUSER", "redlock-monitor", "reset", "on", ">monitor-secret-0123456789",
			"+ping", "+info", "+client|list", "+client|info", "+slowlog|get", "+slowlog|len", "+latency|latest",
			"+latency|history", "+latency|doctor", "+memory|stats", "+command|count", "+command|docs").Err(); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := validation.Run(t.Context(), configFor(c), quick)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Verdict != validation.VerdictSafe {
		t.Fatalf("a keyless read-only monitoring user made the verdict %s:\n%s", rep.Verdict, rep)
	}
}
