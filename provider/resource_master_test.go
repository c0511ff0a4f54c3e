package provider

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/local"
	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// Short TTLs keep every restart delay at about three seconds (2s + the 1s default margin).
const (
	testTTL   = "2s"
	testDelay = 3 * time.Second
	testAddr  = "redlock_master.m"
)

// testMaster is what a test learns about its master from the state, for checks that talk
// to the processes and for cleanup.
type testMaster struct {
	dir                  string
	addr                 string
	adminPassword        string
	lockUser, lockPass   string
	pid, supervisorPID   int
	firstPID, firstRunID string
	tls                  *tls.Config // a TLS master's CA (tls_ca_cert_pem); nil without TLS
}

// newTestMaster reserves a data dir and registers the cleanup that stops whatever runs
// there, by pid, even when the test fails half-way.
func newTestMaster(t *testing.T) *testMaster {
	t.Helper()
	m := &testMaster{dir: filepath.Join(t.TempDir(), "m")}
	t.Cleanup(func() {
		stopDataDir(t, m.dir)
		for _, pid := range []int{m.pid, m.supervisorPID} {
			if local.ProcessAlive(pid) && (local.CmdlineHas(pid, m.dir) || cwdIs(pid, m.dir)) {
				t.Errorf("cleanup: pid %d still alive: killing it", pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return m
}

func cwdIs(pid int, dir string) bool {
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	return err == nil && filepath.Clean(cwd) == filepath.Clean(dir)
}

func masterConfig(m *testMaster, extra string) string {
	ttl := fmt.Sprintf("  max_lock_ttl = %q\n", testTTL)
	if strings.Contains(extra, "max_lock_ttl") {
		ttl = ""
	}
	return fmt.Sprintf(`
resource "redlock_master" "m" {
  name     = "m1"
  data_dir = %q
%s%s
}
`, m.dir, ttl, extra)
}

// capture records the state's values in m; use it in every step's Check.
func (m *testMaster) capture() resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[testAddr]
		if !ok {
			return fmt.Errorf("%s not in state", testAddr)
		}
		a := rs.Primary.Attributes
		m.addr, m.adminPassword = a["address"], a["admin_password"]
		m.lockUser, m.lockPass = a["lock_user"], a["lock_password"]
		if ca := a["tls_ca_cert_pem"]; ca != "" {
			m.tls = master.ClientTLS(ca)
		}
		m.pid, _ = strconv.Atoi(a["pid"])
		m.supervisorPID, _ = strconv.Atoi(a["supervisor_pid"])
		if m.firstPID == "" {
			m.firstPID, m.firstRunID = a["pid"], a["run_id"]
		}
		return nil
	}
}

func (m *testMaster) admin() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: m.addr, Password: m.adminPassword, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: time.Second, DisableIdentity: true, TLSConfig: m.tls})
}

func (m *testMaster) lockClient() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: m.addr, Username: m.lockUser, Password: m.lockPass, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: time.Second, DisableIdentity: true, TLSConfig: m.tls})
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// configValue is CONFIG GET name on the live master.
func (m *testMaster) configValue(ctx context.Context, name string) (string, error) {
	c := m.admin()
	defer c.Close()
	v, err := c.ConfigGet(ctx, name).Result()
	if err != nil {
		return "", err
	}
	return v[name], nil
}

func (m *testMaster) expectConfig(name, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got, err := m.configValue(context.Background(), name)
		if err != nil {
			return fmt.Errorf("CONFIG GET %s: %w", name, err)
		}
		if got != want {
			return fmt.Errorf("live %s = %q, want %q", name, got, want)
		}
		return nil
	}
}

// checkGone is the CheckDestroy of every test: no process of the master is left, its port
// is free, and its data dir is gone unless kept.
func (m *testMaster) checkGone(keepData bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, pid := range []int{m.pid, m.supervisorPID} {
			if pid > 0 && local.ProcessAlive(pid) && (local.CmdlineHas(pid, m.dir) || cwdIs(pid, m.dir)) {
				return fmt.Errorf("pid %d still runs after destroy", pid)
			}
		}
		if m.addr != "" {
			l, err := net.Listen("tcp", m.addr)
			if err != nil {
				return fmt.Errorf("port of %s still in use after destroy: %v", m.addr, err)
			}
			l.Close()
		}
		_, err := os.Stat(m.dir)
		switch {
		case keepData && err != nil:
			return fmt.Errorf("data dir %s removed despite keep_data_on_destroy: %v", m.dir, err)
		case !keepData && err == nil:
			return fmt.Errorf("data dir %s still exists after destroy", m.dir)
		}
		return nil
	}
}

func fileMode(p string, want os.FileMode) resource.TestCheckFunc {
	return func(*terraform.State) error {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if got := fi.Mode().Perm(); got != want {
			return fmt.Errorf("%s has mode %o, want %o", p, got, want)
		}
		return nil
	}
}

// TestAccMaster_lifecycle: create, read, import, update in place, destroy.
func TestAccMaster_lifecycle(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	hooksFile := filepath.Join(t.TempDir(), "hooks.log")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{
			{
				Config: masterConfig(m, ""),
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "id", m.dir),
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					resource.TestCheckResourceAttr(testAddr, "bind", testBind),
					resource.TestCheckResourceAttr(testAddr, "server_binary", "redis-server"),
					resource.TestCheckResourceAttr(testAddr, "appendfsync", "always"),
					resource.TestCheckResourceAttr(testAddr, "maxmemory", "64mb"),
					resource.TestCheckResourceAttr(testAddr, "maxmemory_policy", "noeviction"),
					resource.TestCheckResourceAttr(testAddr, "replica_of", ""),
					resource.TestCheckResourceAttr(testAddr, "lock_user", "redlock"),
					resource.TestCheckResourceAttr(testAddr, "clock_drift_margin", "1s"),
					resource.TestCheckResourceAttr(testAddr, "restart_delay", "3s"),
					resource.TestCheckResourceAttr(testAddr, "restart_delay_ms", "3000"),
					resource.TestCheckResourceAttr(testAddr, "config_file", filepath.Join(m.dir, "redis.conf")),
					resource.TestMatchResourceAttr(testAddr, "address", regexp.MustCompile(`^`+regexp.QuoteMeta(testBind)+`:[1-9][0-9]*$`)),
					resource.TestMatchResourceAttr(testAddr, "port", regexp.MustCompile(`^[1-9][0-9]*$`)),
					resource.TestMatchResourceAttr(testAddr, "pid", regexp.MustCompile(`^[1-9][0-9]*$`)),
					resource.TestMatchResourceAttr(testAddr, "supervisor_pid", regexp.MustCompile(`^[1-9][0-9]*$`)),
					resource.TestMatchResourceAttr(testAddr, "run_id", regexp.MustCompile(`^[0-9a-f]{40}$`)),
					resource.TestMatchResourceAttr(testAddr, "admin_password", regexp.MustCompile(`^[0-9a-f]{64}$`)),
					resource.TestMatchResourceAttr(testAddr, "lock_password", regexp.MustCompile(`^[0-9a-f]{64}$`)),
					fileMode(m.dir, 0o700),
					fileMode(filepath.Join(m.dir, "redis.conf"), 0o600),
					m.expectConfig("appendfsync", "always"),
					m.expectConfig("maxmemory-policy", "noeviction"),
					m.expectConfig("appendonly", "yes"),
					m.checkLockUser(),
					m.checkMinimalEnvironment(),
				),
			},
			{
				ResourceName:      testAddr,
				ImportState:       true,
				ImportStateId:     m.dir,
				ImportStateVerify: true,
			},
			{
				// In place: same pid and run_id (no restart), new live values.
				Config: masterConfig(m, fmt.Sprintf(`
  maxmemory     = "32mb"
  restart_delay = "4s"
  lock_password  = "a-new-lock-password-0123456789"
  lock_user      = "locker"
  admin_password = "a-new-admin-password-0123456789"
  hooks = {
    on_crash = ["/bin/sh", "-c", "echo crash >> %s"]
  }
`, hooksFile)),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttrWith(testAddr, "pid", func(v string) error {
						if v != m.firstPID {
							return fmt.Errorf("pid changed from %s to %s: the update restarted the master", m.firstPID, v)
						}
						return nil
					}),
					resource.TestCheckResourceAttrWith(testAddr, "run_id", func(v string) error {
						if v != m.firstRunID {
							return fmt.Errorf("run_id changed: the update restarted the master")
						}
						return nil
					}),
					resource.TestCheckResourceAttr(testAddr, "restart_delay_ms", "4000"),
					m.expectConfig("maxmemory", strconv.Itoa(32<<20)),
					m.checkLockUser(),
					m.checkSupervisorConfig(4*time.Second, 1),
					resource.TestCheckResourceAttr(testAddr, "lock_user", "locker"),
					m.checkOnlyLockUser("locker"),
					m.checkSupervisorSeesMaster(),
				),
			},
		},
	})
}

// checkLockUser proves the lock user can take a lock and cannot administer the server.
func (m *testMaster) checkLockUser() resource.TestCheckFunc {
	return func(*terraform.State) error {
		ctx := context.Background()
		c := m.lockClient()
		defer c.Close()
		key := fmt.Sprintf("check-lock-%d", time.Now().UnixNano())
		ok, err := c.SetNX(ctx, key, "token", 5*time.Second).Result()
		if err != nil || !ok {
			return fmt.Errorf("lock user SET NX PX: %v, %v", ok, err)
		}
		if err := c.ConfigGet(ctx, "appendfsync").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			return fmt.Errorf("lock user may run CONFIG GET (err %v): the ACL is not restricted", err)
		}
		return nil
	}
}

// checkSupervisorConfig reads supervisor.json: the restart delay and hooks reached it.
func (m *testMaster) checkSupervisorConfig(delay time.Duration, onCrashArgs int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		c, err := supervisor.LoadConfig(m.dir)
		if err != nil {
			return err
		}
		if c.RestartDelay != delay || len(c.Hooks.OnCrash) != onCrashArgs*3 {
			raw, _ := json.Marshal(c.Hooks)
			return fmt.Errorf("supervisor.json: restart_delay %s hooks %s; want %s and on_crash set", c.RestartDelay, raw, delay)
		}
		return nil
	}
}

// checkOnlyLockUser: after a rename the old lock user is gone and the new one exists.
func (m *testMaster) checkOnlyLockUser(want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		c := m.admin()
		defer c.Close()
		users, err := c.Do(context.Background(), "ACL", "USERS").StringSlice()
		if err != nil {
			return err
		}
		if strings.Join(users, ",") != "default,"+want {
			return fmt.Errorf("ACL USERS = %v, want default and %s only", users, want)
		}
		return nil
	}
}

// checkSupervisorSeesMaster: after the admin password changed, the supervisor (which PINGs
// with it) still sees the master alive: LastAlive moves past the update.
func (m *testMaster) checkSupervisorSeesMaster() resource.TestCheckFunc {
	return func(*terraform.State) error {
		after := time.Now()
		for deadline := after.Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			st, err := supervisor.ReadState(m.dir)
			if err == nil && st.Status == supervisor.StatusRunning && st.LastAlive.After(after) {
				return nil
			}
		}
		return fmt.Errorf("the supervisor has not seen the master alive since the update: it lost the admin password")
	}
}

// checkMinimalEnvironment: the supervisor, which outlives terraform, does not carry its
// environment (TF_ACC stands for TF_VAR_* values and cloud credentials here).
func (m *testMaster) checkMinimalEnvironment() resource.TestCheckFunc {
	return func(*terraform.State) error {
		if os.Getenv("TF_ACC") == "" {
			return fmt.Errorf("TF_ACC is not set in the test's environment")
		}
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(m.supervisorPID) + "/environ")
		if err != nil {
			return err
		}
		env := strings.Split(string(raw), "\x00")
		if slices.ContainsFunc(env, func(v string) bool { return strings.HasPrefix(v, "TF_ACC=") }) ||
			!slices.ContainsFunc(env, func(v string) bool { return strings.HasPrefix(v, "PATH=") }) {
			return fmt.Errorf("supervisor %d environment %q: want PATH and nothing of terraform's", m.supervisorPID, env)
		}
		return nil
	}
}
