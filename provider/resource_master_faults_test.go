package provider

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/local"
	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// lockValidity is the longest a lock granted just before a crash can stay valid on the
// other masters: max_lock_ttl plus Redlock's drift allowance. A crashed master must not
// answer again before that.
var lockValidity = 2*time.Second + master.MinMargin(2*time.Second) - master.HealthCheckAllowance

// TestAccMaster_drift: safety settings changed behind Terraform's back show as a diff, and
// apply restores them.
func TestAccMaster_drift(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	var replicaPort int
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{
			{Config: masterConfig(m, ""), Check: m.capture()},
			{
				PreConfig:          func() { m.adminDo(t, "CONFIG", "SET", "appendfsync", "everysec") },
				Config:             masterConfig(m, ""),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: masterConfig(m, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(testAddr, tfjsonpath.New("appendfsync"), knownvalue.StringExact("always")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					m.expectConfig("appendfsync", "always"),
					resource.TestCheckResourceAttr(testAddr, "appendfsync", "always"),
				),
			},
			{
				// AOF off, or no fsync during rewrites: acknowledged locks can be lost.
				PreConfig: func() {
					m.adminDo(t, "CONFIG", "SET", "appendonly", "no")
					m.adminDo(t, "CONFIG", "SET", "no-appendfsync-on-rewrite", "yes")
				},
				Config: masterConfig(m, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(testAddr, tfjsonpath.New("appendonly"), knownvalue.StringExact("yes")),
					plancheck.ExpectKnownValue(testAddr, tfjsonpath.New("no_appendfsync_on_rewrite"), knownvalue.StringExact("no")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					m.expectConfig("appendonly", "yes"),
					m.expectConfig("no-appendfsync-on-rewrite", "no"),
					m.expectAOFWritten(),
					resource.TestCheckResourceAttr(testAddr, "appendonly", "yes"),
					resource.TestCheckResourceAttr(testAddr, "no_appendfsync_on_rewrite", "no"),
				),
			},
			{
				// A replica's dataset may be another server's: its supervisor sees the role at
				// its next heartbeat (a second) and restarts it through its hold (killed, held
				// for restart_delay, started on its files, which hold no REPLICAOF). An apply
				// that finds it a replica first does the same (restartReplica); which of the
				// two comes first is a race, so the drift the plan repairs is set after the
				// restart.
				PreConfig: func() {
					before, err := supervisor.ReadState(m.dir)
					if err != nil {
						t.Fatal(err)
					}
					replicaPort = closedPort(t)
					m.adminDo(t, "REPLICAOF", testBind, fmt.Sprint(replicaPort))
					for deadline := time.Now().Add(time.Minute); ; {
						st, err := supervisor.ReadState(m.dir)
						if err == nil && st.Crashes > before.Crashes && st.Status == supervisor.StatusRunning && st.RedisPID != before.RedisPID {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("the replica was not restarted through its hold: state %+v (%v)", st, err)
						}
						time.Sleep(50 * time.Millisecond)
					}
					if log, _ := os.ReadFile(filepath.Join(m.dir, supervisor.LogFileName)); !strings.Contains(string(log), "dataset was replaced") {
						t.Fatalf("the supervisor's log does not say why it killed the replica:\n%s", log)
					}
					m.adminDo(t, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
				},
				Config: masterConfig(m, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(testAddr, tfjsonpath.New("maxmemory_policy"), knownvalue.StringExact("noeviction")),
					plancheck.ExpectKnownValue(testAddr, tfjsonpath.New("replica_of"), knownvalue.StringExact("")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					m.expectConfig("maxmemory-policy", "noeviction"),
					m.expectRole("master"),
				),
			},
		},
	})
}

// TestAccMaster_crashHeldThenRestarted: SIGKILL of redis-server. The master is not
// reachable before the restart delay, is reachable after it, the hooks ran, and the lock
// written before the crash survived (appendfsync always).
func TestAccMaster_crashHeldThenRestarted(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	hooksFile := filepath.Join(t.TempDir(), "hooks.log")
	hook := func(event string) string {
		return fmt.Sprintf(`["/bin/sh", "-c", "echo %s $REDLOCK_EVENT $REDLOCK_MASTER_NAME $REDLOCK_RESTART_DELAY_MS >> %s"]`, event, hooksFile)
	}
	// A longer explicit delay leaves room to observe the hold with a terraform refresh.
	config := masterConfig(m, fmt.Sprintf(`
  restart_delay = "8s"
  hooks = {
    on_crash       = %s
    before_restart = %s
    after_restart  = %s
  }
`, hook("on_crash"), hook("before_restart"), hook("after_restart")))
	var crash *crashWatch
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{
			{Config: config, Check: m.capture()},
			{
				PreConfig: func() {
					crash = m.crash(t, false)
					waitStatus(t, m.dir, supervisor.StatusHolding)
				},
				RefreshState: true,
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(testAddr, "status", "holding"),
					resource.TestCheckResourceAttr(testAddr, "pid", "0"),
				),
			},
			{
				PreConfig: func() {
					crash.expectHeld(t, 8*time.Second-time.Second)
					m.expectLockSurvived(t, crash.key)
					waitFileLines(t, hooksFile, []string{
						"on_crash crash m1 8000", "before_restart before_restart m1 8000", "after_restart after_restart m1 8000"})
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					resource.TestCheckResourceAttrWith(testAddr, "pid", func(v string) error {
						if v == m.firstPID || v == "0" {
							return fmt.Errorf("pid %s: want the restarted redis-server, not %s", v, m.firstPID)
						}
						return nil
					}),
				),
			},
		},
	})
}

// TestAccMaster_supervisorAndMasterKilled: SIGKILL of the supervisor and redis-server
// together. Read removes the master, the next apply creates it again on the same data dir,
// and the new master stays down for the restart delay because the stop was unclean.
func TestAccMaster_supervisorAndMasterKilled(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	var crash *crashWatch
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(true),
		Steps: []resource.TestStep{
			{Config: masterConfig(m, ""), Check: m.capture()},
			{
				PreConfig: func() { crash = m.crash(t, true) },
				Config:    masterConfig(m, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					func(*terraform.State) error {
						t.Logf("after recreate: addr %s pid %d", m.addr, m.pid)
						crash.expectHeld(t, testDelay-time.Second)
						m.expectLockSurvived(t, crash.key)
						return nil
					},
				),
			},
			{
				// Keep the data on destroy: the AOF stays, nothing runs, the port is free.
				Config: masterConfig(m, "  keep_data_on_destroy = true\n"),
				Check:  resource.TestCheckResourceAttr(testAddr, "keep_data_on_destroy", "true"),
			},
		},
	})
}

// TestAccMaster_unsafeAppendfsyncOptOut: the explicit opt-out is honoured (with a warning
// at plan time), and turning it back off restores "always" in place.
func TestAccMaster_unsafeAppendfsyncOptOut(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{
			{
				Config: masterConfig(m, "  appendfsync = \"everysec\"\n  allow_unsafe_appendfsync = true\n"),
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					m.expectConfig("appendfsync", "everysec"),
				),
			},
			{
				Config: masterConfig(m, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate),
				}},
				Check: m.expectConfig("appendfsync", "always"),
			},
		},
	})
}

// TestAccMaster_dataDirRemovedWhileRunning: removing the data dir, or only the supervisor's
// files in it, under a running master does not leave it running beside a new one: the plan
// replaces it, and apply stops the old processes by their recorded pids before it creates
// the master again. The delete timeout is short so that a destroy that cannot reach the
// master fails the test at once instead of waiting 10 minutes for the port.
func TestAccMaster_dataDirRemovedWhileRunning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		remove func(t *testing.T, m *testMaster) error
	}{
		{"whole dir", func(_ *testing.T, m *testMaster) error { return removeAll(m.dir) }},
		{"supervisor files", func(_ *testing.T, m *testMaster) error {
			return removeFiles(m.dir, supervisor.ConfigFileName, supervisor.StateFileName)
		}},
		{"supervisor config", func(_ *testing.T, m *testMaster) error {
			return removeFiles(m.dir, supervisor.ConfigFileName)
		}},
		{"supervisor killed, config removed", func(t *testing.T, m *testMaster) error {
			// redis-server serves on alone, and nothing in data_dir proves it is the master's.
			mustKill(t, m.supervisorPID)
			return removeFiles(m.dir, supervisor.ConfigFileName)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMaster(t)
			conf := masterConfig(m, "  timeouts = { delete = \"30s\" }\n")
			var oldPID, oldSupervisor int
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviderFactories,
				CheckDestroy:             m.checkGone(false),
				Steps: []resource.TestStep{
					{Config: conf, Check: m.capture()},
					{
						PreConfig: func() {
							oldPID, oldSupervisor = m.pid, m.supervisorPID
							t.Cleanup(func() {
								for _, pid := range []int{oldPID, oldSupervisor} {
									if local.ProcessAlive(pid) && (local.CmdlineHas(pid, m.dir) || cwdIs(pid, m.dir) ||
										cwdIs(pid, m.dir+" (deleted)")) {
										_ = syscall.Kill(pid, syscall.SIGKILL)
									}
								}
							})
							if err := tc.remove(t, m); err != nil {
								t.Fatal(err)
							}
						},
						Config: conf,
						ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
							plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionDestroyBeforeCreate),
						}},
						Check: resource.ComposeAggregateTestCheckFunc(
							m.capture(),
							resource.TestCheckResourceAttr(testAddr, "status", "running"),
							func(*terraform.State) error {
								for _, pid := range []int{oldPID, oldSupervisor} {
									if local.ProcessAlive(pid) && pid != m.pid && pid != m.supervisorPID {
										return fmt.Errorf("pid %d of the master whose files were removed still runs", pid)
									}
								}
								return nil
							},
						),
					},
				},
			})
		})
	}
}

// removeAll removes dir as `rm -rf` run until it succeeds would: the running master creates
// files in it (the supervisor's metrics, the AOF's), so one pass can find it not empty.
func removeAll(dir string) error {
	var err error
	for range 100 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return err
}

func removeFiles(dir string, names ...string) error {
	for _, n := range names {
		if err := os.Remove(filepath.Join(dir, n)); err != nil {
			return err
		}
	}
	return nil
}

// crashWatch follows a master after a SIGKILL: the last time it was seen answering before
// the kill, and the first time it answered after.
type crashWatch struct {
	key       string
	lastAlive time.Time
	firstBack chan time.Time
}

// crash writes a lock, proves the master answers, SIGKILLs redis-server (and the supervisor
// too when both is set), and starts watching for the master to answer again.
func (m *testMaster) crash(t *testing.T, both bool) *crashWatch {
	t.Helper()
	ctx := ctxT(t)
	w := &crashWatch{key: fmt.Sprintf("lock-before-crash-%d", time.Now().UnixNano()), firstBack: make(chan time.Time, 1)}
	lc := m.lockClient()
	defer lc.Close()
	if ok, err := lc.SetNX(ctx, w.key, "token", time.Minute).Result(); err != nil || !ok {
		t.Fatalf("SET NX before the crash: %v %v", ok, err)
	}
	st, err := supervisor.ReadState(m.dir)
	if err != nil {
		t.Fatal(err)
	}
	admin := m.admin()
	defer admin.Close()
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING before the crash: %v", err)
	}
	w.lastAlive = time.Now()
	if both {
		mustKill(t, st.SupervisorPID)
	}
	mustKill(t, st.RedisPID)
	go func() {
		c := m.admin()
		defer c.Close()
		deadline := time.Now().Add(60 * time.Second) // bounded: the test fails if it never comes back
		for time.Now().Before(deadline) {
			pctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			err := c.Ping(pctx).Err()
			cancel()
			if err == nil {
				w.firstBack <- time.Now()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		close(w.firstBack)
	}()
	return w
}

// expectHeld waits for the master to answer again and asserts that it did not answer until
// at least min after it was last seen alive (restart_delay minus clock_drift_margin: the
// margin absorbs how late the supervisor noticed), nor before every lock granted until then
// had expired (lockValidity).
func (w *crashWatch) expectHeld(t *testing.T, min time.Duration) {
	t.Helper()
	back, ok := <-w.firstBack
	if !ok {
		t.Fatalf("the master did not answer again within a minute of the crash")
	}
	down := back.Sub(w.lastAlive)
	if down < min || down < lockValidity {
		t.Fatalf("the master answered %s after it was last seen alive: it must stay down for at least %s (and %s lock validity)", down, min, lockValidity)
	}
	t.Logf("master down for %s after it was last seen alive (at least %s required)", down, min)
}

func (m *testMaster) expectLockSurvived(t *testing.T, key string) {
	t.Helper()
	c := m.admin()
	defer c.Close()
	v, err := c.Get(ctxT(t), key).Result()
	if err != nil || v != "token" {
		t.Fatalf("lock %s written before the crash: %q, %v; want it replayed from the AOF", key, v, err)
	}
}

func mustKill(t *testing.T, pid int) {
	t.Helper()
	if !local.ProcessAlive(pid) {
		t.Fatalf("pid %d is not running", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL %d: %v", pid, err)
	}
	for deadline := time.Now().Add(10 * time.Second); local.ProcessAlive(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still alive 10s after SIGKILL", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitStatus(t *testing.T, dir, want string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		st, err := supervisor.ReadState(dir)
		if err == nil && st.Status == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("supervisor status %q (%v), want %q", st.Status, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFileLines waits (bounded) until file holds every wanted line: hooks run asynchronously.
func waitFileLines(t *testing.T, file string, want []string) {
	t.Helper()
	var got string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		raw, _ := os.ReadFile(file)
		got = string(raw)
		all := true
		for _, w := range want {
			all = all && strings.Contains(got, w+"\n")
		}
		if all {
			return
		}
	}
	t.Fatalf("hooks file %s:\n%s\nwant lines %q", file, got, want)
}

func (m *testMaster) adminDo(t *testing.T, args ...any) {
	t.Helper()
	c := m.admin()
	defer c.Close()
	if err := c.Do(ctxT(t), args...).Err(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
}

// expectAOFWritten: AOF is on and no rewrite is pending, so what is acknowledged now is on disk.
func (m *testMaster) expectAOFWritten() resource.TestCheckFunc {
	return func(*terraform.State) error {
		c := m.admin()
		defer c.Close()
		info, err := c.Info(context.Background(), "persistence").Result()
		if err != nil {
			return err
		}
		f := local.ParseInfo(info)
		if f["aof_enabled"] != "1" || f["aof_rewrite_in_progress"] != "0" || f["aof_rewrite_scheduled"] != "0" || f["aof_last_bgrewrite_status"] != "ok" {
			return fmt.Errorf("AOF not fully on: aof_enabled %s, rewrite in progress %s, scheduled %s, last rewrite %s",
				f["aof_enabled"], f["aof_rewrite_in_progress"], f["aof_rewrite_scheduled"], f["aof_last_bgrewrite_status"])
		}
		return nil
	}
}

func (m *testMaster) expectRole(want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		c := m.admin()
		defer c.Close()
		info, err := c.Info(context.Background(), "replication").Result()
		if err != nil {
			return err
		}
		if got := local.ParseInfo(info)["role"]; got != want {
			return fmt.Errorf("role %q, want %q", got, want)
		}
		return nil
	}
}

// closedPort returns a loopback port nothing listens on (for a REPLICAOF that goes nowhere).
func closedPort(t *testing.T) int {
	t.Helper()
	p, err := local.FreePort(testBind)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAccMaster_badInputs: every unsafe or impossible input fails with a message that names
// the attribute and the fix. Plan-time errors create nothing.
func TestAccMaster_badInputs(t *testing.T) {
	t.Parallel()
	notADir := filepath.Join(t.TempDir(), "regular-file")
	if err := os.WriteFile(notADir, []byte("in the way"), 0o600); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", net.JoinHostPort(testBind, "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	busyPort := busy.Addr().(*net.TCPAddr).Port

	cases := []struct {
		name  string
		extra string
		dir   string // data_dir; a fresh temp dir when empty
		apply bool   // the error comes at apply (create), not at plan
		want  string
	}{
		{name: "port out of range", extra: `port = 70000`, want: `port value must be between 0 and 65535, got: 70000`},
		{name: "negative port", extra: `port = -1`, want: `port value must be between 0 and 65535`},
		{name: "unknown server binary", extra: `server_binary = "no-such-redis-server"`, want: `server_binary: "no-such-redis-server" was not found on PATH`},
		{name: "restart_delay below max_lock_ttl", extra: `restart_delay = "1s"`, want: `restart_delay = 1s is less than max_lock_ttl \(2s\) \+ clock_drift_margin \(1s\) = 3s[\s\S]*at least "3s"`},
		{name: "restart_delay below ttl plus margin", extra: `restart_delay = "2500ms"`, want: `restart_delay = 2.5s is less than`},
		{name: "clock_drift_margin below drift", extra: `clock_drift_margin = "10ms"`, want: `clock_drift_margin = 10ms is less than 122ms`},
		{name: "bad duration max_lock_ttl", extra: `max_lock_ttl = "30 seconds"`, want: `Invalid Time Duration String Value[\s\S]*max_lock_ttl\s+= "30 seconds"`},
		{name: "bad duration restart_delay", extra: `restart_delay = "soon"`, want: `Invalid Time Duration String Value[\s\S]*restart_delay = "soon"`},
		{name: "zero max_lock_ttl", extra: `max_lock_ttl = "0s"`, want: `max_lock_ttl is 0s: it must be greater than zero`},
		{name: "appendfsync everysec", extra: `appendfsync = "everysec"`, want: `appendfsync = "everysec" lets a crash[\s\S]*allow_unsafe_appendfsync = true`},
		{name: "appendfsync unknown", extra: `appendfsync = "sometimes"`, want: `appendfsync value must be one of`},
		{name: "eviction policy", extra: `maxmemory_policy = "allkeys-lru"`, want: `maxmemory_policy = "allkeys-lru": any eviction policy silently drops live`},
		{name: "replica_of", extra: `replica_of = "127.0.0.1 6379"`, want: `replica_of = "127.0.0.1 6379": Redlock masters must be independent`},
		{name: "maxmemory unlimited", extra: `maxmemory = "0"`, want: `maxmemory is 0 bytes: set at least "1mb"`},
		{name: "maxmemory garbage", extra: `maxmemory = "plenty"`, want: `maxmemory: "plenty" is not a memory size`},
		{name: "non-loopback bind", extra: `bind = "10.1.2.3"`, want: `bind = "10.1.2.3" is reachable from the network[\s\S]*allow_non_loopback_bind = true`},
		{name: "bind not an address", extra: `bind = "localhost"`, want: `bind = "localhost" is not an IP address`},
		{name: "short admin password", extra: `admin_password = "secret"`, want: `admin_password string length must be at least 16`},
		{name: "hook program missing", extra: `hooks = { on_crash = ["/no/such/hook"] }`, want: `hooks.on_crash: "/no/such/hook" was not found`},
		{name: "relative data_dir", dir: "data/m1", want: `data_dir is "data/m1": use an absolute path, e.g. abspath`},
		{name: "data_dir under a regular file", dir: filepath.Join(notADir, "m1"), want: `data_dir: .*regular-file is a file, so .* cannot be created under it`},
		{name: "data_dir is a regular file", dir: notADir, want: `data_dir: .*regular-file exists and is not a directory`},
		{name: "server binary that cannot serve", extra: `server_binary = "/bin/false"`, apply: true, want: `Master did not start[\s\S]*redis-server exited right after it started`},
		{name: "port in use (refused at plan)", extra: fmt.Sprintf("port = %d", busyPort), want: fmt.Sprintf(`port %d on %s is already in use[\s\S]*choose another port`, busyPort, regexp.QuoteMeta(testBind))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMaster(t)
			if tc.dir != "" {
				m.dir = tc.dir
			}
			resource.Test(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviderFactories,
				CheckDestroy:             m.checkNothingStarted(tc.dir != ""),
				Steps: []resource.TestStep{{
					Config:      masterConfig(m, "  "+tc.extra+"\n"),
					PlanOnly:    !tc.apply,
					ExpectError: wrappedRegexp(tc.want),
				}},
			})
		})
	}
}

// wrappedRegexp matches pattern in terraform's output, which wraps long lines: every space
// in pattern matches any run of whitespace.
func wrappedRegexp(pattern string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(pattern, " ", `\s+`))
}

// checkNothingStarted: a refused configuration leaves nothing behind, not even the data dir.
func (m *testMaster) checkNothingStarted(foreignDir bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if foreignDir {
			return nil
		}
		if _, err := os.Stat(m.dir); err == nil {
			return fmt.Errorf("data dir %s was created although the configuration was refused", m.dir)
		}
		return nil
	}
}
