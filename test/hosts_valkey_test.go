package test

import (
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/hostlab"
)

// TestHostsValkeyMigration is the day-2 guide's "Migrate from Redis to Valkey" on five
// real systemd hosts: all five start on Debian's redis-server; each in turn is replaced by
// a host running valkey-server 8.0 (bookworm-backports; the lab's image has it) by the
// guide's "Replace a host" (held, unseeded, seeded from the other four, let in), while four
// separate `lockagent run` loops contend for two locks and log every hold. The cluster is
// mixed (Redis 7.0 and Valkey 8.0 masters, one function library) until the last step. No
// run fails, no two holds overlap, no fence goes backwards (the negative control of the
// seeding is TestHostsRollingReplacement's), and at the end every master says it is
// Valkey 8.0 (checked before the migration too, where it must fail: every master is Redis).
func TestHostsValkeyMigration(t *testing.T) {
	started := time.Now()
	c := startRollingCluster(t, []string{"v1", "v2", "v3", "v4", "v5"}, nil,
		func(int, *hostlab.Host) rollingHost { return rollingHost{server: "redis-server"} })
	t.Logf("five redis-server hosts up and seeded: %s", time.Since(started).Round(time.Second))
	if valkey := c.valkeyMasters(); len(valkey) != 0 {
		t.Fatalf("before the migration, masters %q say they are Valkey", valkey)
	}

	migrating := time.Now()
	k := c.newContention("")
	coldKeys, hotKeys := []string{"app:cold-1", "app:cold-2"}, []string{"app:hot-1", "app:hot-2"}
	warm := c.lockClient()
	for _, key := range coldKeys {
		for n := 0; n < 30; n++ {
			k.take(warm, key)
		}
	}
	k.start(4, hotKeys)
	k.waitHolds(10)
	for i := range c.hosts {
		c.replace(i, c.render(i, rollingHost{server: "valkey-server"}))
		k.waitHolds(10)
		t.Logf("%s now runs %s: %d holds so far, largest fence %d", c.hosts[i].Name(), c.units[i],
			len(begins(readHolds(t, k.holds))), largest(readHolds(t, k.holds)))
	}
	k.stopWorkers()
	lc := c.lockClient()
	for _, key := range append(append([]string{}, coldKeys...), hotKeys...) {
		k.take(lc, key)
	}

	holds := readHolds(t, k.holds)
	back, overlapping := holdViolations(holds)
	failed := k.failedRuns()
	t.Logf("Redis -> Valkey migration of 5 hosts under contention: %d acquisitions, %d failed runs, %d overlaps, %d fences out of order, migration %s (test %s)",
		len(begins(holds)), failed, len(overlapping), len(back), time.Since(migrating).Round(time.Second), time.Since(started).Round(time.Second))
	if failed > 0 || len(back) > 0 || len(overlapping) > 0 {
		t.Fatalf("migration: %d failed runs, fences out of order %q, overlaps %q\n%s", failed, back, overlapping, k.failureLines())
	}
	if valkey := c.valkeyMasters(); len(valkey) != len(c.hosts) {
		t.Fatalf("after the migration only %q are Valkey 8.0", valkey)
	}
	for i, h := range c.hosts {
		if out, err := h.Exec(c.ctx, "systemctl", "is-active", "valkey-server.service"); err != nil {
			t.Errorf("valkey-server on %s: %v %s", h.Name(), err, out)
		}
		if out, _ := h.Exec(c.ctx, "systemctl", "is-active", "redis-server.service"); strings.TrimSpace(out) == "active" {
			t.Errorf("redis-server still runs on %s (%s)", h.Name(), c.endpoints[i])
		}
	}
}

// valkeyMasters lists the masters whose INFO says valkey-server 8.0.
func (c *rollingCluster) valkeyMasters() []string {
	c.t.Helper()
	var out []string
	for i := range c.hosts {
		admin := c.client(i, "", c.adminPass)
		info, err := admin.Info(c.ctx, "server").Result()
		_ = admin.Close()
		if err != nil {
			c.t.Fatalf("INFO server of %s: %v", c.endpoints[i], err)
		}
		if strings.Contains(info, "server_name:valkey") && strings.Contains(info, "valkey_version:8.0.") {
			out = append(out, c.endpoints[i])
		}
	}
	return out
}
