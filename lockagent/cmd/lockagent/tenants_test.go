package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestRunUnderATenantsPrefix: with a tenant's user, `run` locks <key_prefix><key> (the
// prefix from LOCKAGENT_KEY_PREFIX or --key-prefix); without the prefix the tenant's user
// is refused (NOPERM), which run reports as access denied (77), not as a conflict.
func TestRunUnderATenantsPrefix(t *testing.T) {
	billing := redisconf.LockUser{Name: "billing", Password: "billing-secret-0123456789", KeyPrefix: "billing:"}
	cluster := redistest.StartKit(t, redistest.Options{Masters: 3, LockUsers: []redisconf.LockUser{billing,
		{Name: "orders", Password: "orders-secret-0123456789", KeyPrefix: "orders:"}}})
	env := []string{"LOCKAGENT_ENDPOINTS=" + strings.Join(cluster.Addrs(), ","), "LOCKAGENT_USERNAME=billing",
		"LOCKAGENT_PASSWORD=" + billing.Password}

	code, stdout, stderr := runAgent(t, append(env, "LOCKAGENT_KEY_PREFIX=billing:"), args([]string{"run", "--key", "nightly", "--ttl", "10s"}, sh(`echo "$LOCKAGENT_KEY"`))...)
	if code != 0 {
		t.Fatalf("run with the tenant's prefix exited %d:\n%s", code, stderr)
	}
	if strings.TrimSpace(stdout) != "nightly" {
		t.Errorf("LOCKAGENT_KEY = %q, want the name as given (nightly)", stdout)
	}

	// While the command runs, the lock is billing:nightly on a majority; after, nowhere.
	started := filepath.Join(t.TempDir(), "started")
	p := startAgent(t, env, args([]string{"run", "--key-prefix", "billing:", "--key", "nightly", "--ttl", "10s"},
		[]string{"--", "sh", "-c", `touch "$0"; sleep 1`, started})...)
	waitForFile(t, started, p)
	ctx := context.Background()
	held := 0
	for _, m := range cluster.Masters {
		if n, _ := m.Admin().Exists(ctx, "billing:nightly").Result(); n == 1 {
			held++
		}
	}
	if held < 2 {
		t.Errorf("billing:nightly is held on %d of 3 masters while the command runs, want a majority", held)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("run --key-prefix exited %d", code)
	}
	for i, m := range cluster.Masters {
		if n, err := m.Admin().Exists(ctx, "billing:nightly", "nightly").Result(); err != nil || n != 0 {
			t.Errorf("master %d: %d lock keys left after run (%v)", i, n, err)
		}
	}

	code, _, stderr = runAgent(t, env, args([]string{"run", "--key", "nightly", "--ttl", "10s", "--wait", "0s"}, sh("true"))...)
	if code != 77 || !strings.Contains(stderr, "NOPERM") {
		t.Errorf("run without the tenant's prefix: exit %d, want 77 (denied) with NOPERM shown:\n%s", code, stderr)
	}
}
