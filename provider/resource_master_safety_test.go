package provider

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/master/local"
	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// These tests break a master in the ways that could make it grant a lock twice, and check
// that the provider (with its supervisor) still keeps every lock exclusive.

// grantLock takes a lock as the lock user and returns its key and the moment it has
// certainly expired (the TTL counted from before the request was sent).
func (m *testMaster) grantLock(t *testing.T, ttl time.Duration) (key string, expires time.Time) {
	t.Helper()
	key = fmt.Sprintf("lock-%d", time.Now().UnixNano())
	c := m.lockClient()
	defer c.Close()
	sent := time.Now()
	if ok, err := c.SetNX(ctxT(t), key, "token", ttl).Result(); err != nil || !ok {
		t.Fatalf("SET NX %s: %v %v", key, ok, err)
	}
	return key, sent.Add(ttl)
}

// expectBackAfter waits for the crashed master to answer again and fails when it answered
// before a lock it granted had expired.
func (w *crashWatch) expectBackAfter(t *testing.T, expires time.Time) {
	t.Helper()
	back, ok := <-w.firstBack
	if !ok {
		t.Fatal("the master did not answer again within a minute of the crash")
	}
	if back.Before(expires) {
		t.Fatalf("the master answered again at %v, %v before a lock it granted expired (%v)",
			back.Format(time.RFC3339Nano), expires.Sub(back), expires.Format(time.RFC3339Nano))
	}
	t.Logf("the master answered again %v after its last lock expired", back.Sub(expires))
}

// TestAccMaster_supervisorKilledWhileHolding: redis-server crashes, its supervisor holds it
// down and is then killed too. The next apply recreates the master in the same data dir:
// the new supervisor (not the state the dead one left) decides, it waits out the hold, and
// no second supervisor is left running.
func TestAccMaster_supervisorKilledWhileHolding(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	config := masterConfig(m, "  restart_delay = \"8s\"\n")
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
					mustKill(t, m.supervisorPID)
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					func(*terraform.State) error {
						crash.expectHeld(t, 8*time.Second-time.Second)
						m.expectLockSurvived(t, crash.key)
						if got := supervisor.Running(m.dir); !slices.Equal(got, []int{m.supervisorPID, m.pid}) {
							return fmt.Errorf("running in %s: %v, want only supervisor %d and redis-server %d", m.dir, got, m.supervisorPID, m.pid)
						}
						return nil
					},
				),
			},
		},
	})
}

// TestAccMaster_supervisorKilledAlone: SIGKILL of the supervisor only. redis-server keeps
// serving, unsupervised: Read keeps it in state as "unsupervised" with its real pid, and
// the plan replaces it. Apply stops the orphan cleanly (AOF complete: no hold, and with
// keep_data_on_destroy the locks survive) and supervises the master again. Destroying an
// unsupervised master stops it too.
func TestAccMaster_supervisorKilledAlone(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	config := masterConfig(m, "  keep_data_on_destroy = true\n")
	var key string
	var orphan int
	killSupervisor := func() {
		orphan = m.pid
		mustKill(t, m.supervisorPID)
		if !local.ProcessAlive(orphan) {
			t.Fatalf("redis-server pid %d died with its supervisor", orphan)
		}
	}
	unsupervised := resource.ComposeAggregateTestCheckFunc(
		m.capture(),
		resource.TestCheckResourceAttr(testAddr, "status", "unsupervised"),
		resource.TestCheckResourceAttr(testAddr, "supervisor_pid", "0"),
		resource.TestCheckResourceAttrWith(testAddr, "pid", func(v string) error {
			if v != fmt.Sprint(orphan) {
				return fmt.Errorf("pid %s, want the unsupervised redis-server %d", v, orphan)
			}
			return nil
		}),
	)
	replacePlanned := resource.RefreshPlanChecks{PostRefresh: []plancheck.PlanCheck{
		plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionDestroyBeforeCreate),
	}}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(true),
		Steps: []resource.TestStep{
			{Config: config, Check: m.capture()},
			{
				PreConfig: func() {
					key, _ = m.grantLock(t, time.Minute)
					killSupervisor()
				},
				RefreshState:       true,
				RefreshPlanChecks:  replacePlanned,
				ExpectNonEmptyPlan: true,
				Check:              unsupervised,
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					func(*terraform.State) error {
						if local.ProcessAlive(orphan) && cwdIs(orphan, m.dir) {
							return fmt.Errorf("the unsupervised redis-server pid %d still runs", orphan)
						}
						return nil
					},
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					func(*terraform.State) error {
						m.expectLockSurvived(t, key)
						st, err := supervisor.ReadState(m.dir)
						if err != nil {
							return err
						}
						if st.Restarts != 0 {
							return fmt.Errorf("the master was held back (restarts %d) although its orphan was stopped cleanly", st.Restarts)
						}
						return nil
					},
				),
			},
			{
				// Leave it unsupervised: the destroy that ends the test must stop it.
				PreConfig:          killSupervisor,
				RefreshState:       true,
				RefreshPlanChecks:  replacePlanned,
				ExpectNonEmptyPlan: true,
				Check:              unsupervised,
			},
		},
	})
}

// TestAccMaster_lowerMaxLockTTL: lowering max_lock_ttl (and with it restart_delay) in place,
// or recreating a master that died with its supervisor under a lower one, never lets the
// master rejoin before a lock it granted under the old, longer TTL has expired.
func TestAccMaster_lowerMaxLockTTL(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	longTTL := masterConfig(m, "  max_lock_ttl = \"7s\"\n") // restart_delay 8s
	shortTTL := masterConfig(m, "")                         // max_lock_ttl 2s, restart_delay 3s
	var crash *crashWatch
	var expires time.Time
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{
			{Config: longTTL, Check: m.capture()},
			{
				// A lock granted under the old max TTL, then the TTL is lowered in place.
				PreConfig: func() { _, expires = m.grantLock(t, 7*time.Second) },
				Config:    shortTTL,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(m.capture(),
					resource.TestCheckResourceAttr(testAddr, "restart_delay_ms", "3000")),
			},
			{
				PreConfig: func() {
					crash = m.crash(t, false)
					crash.expectBackAfter(t, expires)
					waitStatus(t, m.dir, supervisor.StatusRunning)
				},
				Config: shortTTL,
				Check:  resource.ComposeAggregateTestCheckFunc(m.capture(), resource.TestCheckResourceAttr(testAddr, "status", "running")),
			},
			{Config: longTTL, Check: m.capture()}, // raised in place: applies at once
			{
				// The supervisor and the master die together; the master is recreated with the
				// lower TTL by a new supervisor.
				PreConfig: func() {
					_, expires = m.grantLock(t, 7*time.Second)
					crash = m.crash(t, true)
				},
				Config: shortTTL,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(testAddr, plancheck.ResourceActionCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					func(*terraform.State) error { crash.expectBackAfter(t, expires); return nil },
				),
			},
		},
	})
}

// monitorLateLock watches the master's command stream (MONITOR, as admin) and, the moment
// destroy starts measuring the master's locks (its SCAN), tries to take a lock as the lock
// user. The result tells whether such a lock could outlive the destroy.
type monitorLateLock struct {
	attempted bool
	granted   bool
	expires   time.Time
	err       error
	done      chan struct{}
}

func (m *testMaster) watchDestroy(t *testing.T) *monitorLateLock {
	t.Helper()
	w := &monitorLateLock{done: make(chan struct{})}
	conn, err := net.DialTimeout("tcp", m.addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); <-w.done })
	fmt.Fprintf(conn, "*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n*1\r\n$7\r\nMONITOR\r\n", len(m.adminPassword), m.adminPassword)
	lc := m.lockClient()
	if err := lc.Ping(ctxT(t)).Err(); err != nil { // connected and authenticated before destroy
		t.Fatal(err)
	}
	go func() {
		defer close(w.done)
		defer lc.Close()
		rd := bufio.NewReader(conn)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return // the master shut down
			}
			if !strings.Contains(strings.ToLower(line), `"scan"`) || w.attempted {
				continue
			}
			w.attempted = true
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			sent := time.Now()
			w.granted, w.err = lc.SetNX(ctx, "late-lock", "token", 2*time.Second).Result()
			cancel()
			w.expires = sent.Add(2 * time.Second)
		}
	}()
	return w
}

// TestAccMaster_destroyRefusesLateLocks: destroy measures how long the master's locks stay
// valid and waits that long after the stop; a lock taken after the measurement would not be
// counted. So destroy shuts the lock user out first: an attempt made while it measures is
// refused, and nothing granted outlives the destroy.
func TestAccMaster_destroyRefusesLateLocks(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	var w *monitorLateLock
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(
			m.checkGone(false),
			func(*terraform.State) error {
				<-w.done
				switch {
				case !w.attempted:
					return fmt.Errorf("destroy never measured the master's locks (no SCAN seen)")
				case w.granted && time.Now().Before(w.expires):
					return fmt.Errorf("a lock granted while destroy measured is valid for %v after destroy returned", time.Until(w.expires))
				case w.granted:
					return fmt.Errorf("the lock user could still take a lock while destroy measured the master's locks")
				}
				t.Logf("lock attempt during the measurement refused: %v", w.err)
				return nil
			},
		),
		Steps: []resource.TestStep{{
			Config: masterConfig(m, ""),
			Check: resource.ComposeAggregateTestCheckFunc(m.capture(), func(*terraform.State) error {
				w = m.watchDestroy(t)
				return nil
			}),
		}},
	})
}

// TestAccMaster_destroyCutShortLeavesHold: when the delete timeout ends before the locks of a
// destroyed master have expired, the destroy fails (so Terraform creates no replacement),
// keeps a supervisor.state in data_dir that makes a master created there wait until they
// have, and keeps the resource in state; the next apply finishes the wait, then replaces it.
func TestAccMaster_destroyCutShortLeavesHold(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	var expires time.Time
	// The lock outlives the delete timeout by far more than the steps in between can take
	// on a loaded machine (a 12s lock was down to less than the 6s timeout there once).
	conf := masterConfig(m, "  max_lock_ttl = \"40s\"\n  timeouts = { delete = \"6s\" }\n")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{
			{
				Config: conf,
				Check: resource.ComposeAggregateTestCheckFunc(m.capture(), func(*terraform.State) error {
					_, expires = m.grantLock(t, 40*time.Second)
					return nil
				}),
			},
			{
				// The delete timeout ends during the wait for the lock: an error, not a warning.
				Config:      conf,
				Destroy:     true,
				ExpectError: regexp.MustCompile(`Destroy cut short`),
			},
			{
				// Stopped, held, and still in state: the re-run replaces it only after the
				// lock expired. (Wait until shortly before the hold ends, so that the
				// 6s delete timeout covers the rest.)
				PreConfig: func() {
					if left := supervisor.Running(m.dir); len(left) != 0 {
						t.Fatalf("pids %v still run after the destroy was cut short", left)
					}
					until, hold := supervisor.HoldUntil(m.dir, 0)
					if !hold || until.Before(expires) {
						t.Fatalf("after a destroy cut short, HoldUntil(%s) = %v, %v; want a hold until at least %v", m.dir, until, hold, expires)
					}
					time.Sleep(time.Until(until.Add(-2 * time.Second)))
				},
				Config: conf,
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					resource.TestCheckResourceAttr(testAddr, "status", "running"),
					func(*terraform.State) error {
						st, err := supervisor.ReadState(m.dir)
						if err != nil {
							return err
						}
						if st.LastAlive.Before(expires) {
							return fmt.Errorf("the new master started at %v, before the destroyed master's lock expired (%v)", st.LastAlive, expires)
						}
						return nil
					},
				),
			},
		},
	})
}

// TestAccMaster_adminPasswordChangedLast: when an update fails half-way, the master keeps the
// admin password Terraform's state has, so the next apply can still reach it.
func TestAccMaster_adminPasswordChangedLast(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	const first, second = "first-admin-password-0123456789", "second-admin-password-0123456789"
	conf := func(pw string) string {
		return masterConfig(m, fmt.Sprintf("  admin_password = %q\n  maxmemory = \"32mb\"\n", pw))
	}
	confPath := func() string { return filepath.Join(m.dir, "redis.conf") }
	accepts := func(pw string) error {
		c := redis.NewClient(&redis.Options{Addr: m.addr, Password: pw, MaxRetries: -1, DialTimeout: time.Second,
			ReadTimeout: time.Second, DisableIdentity: true})
		defer c.Close()
		return c.Ping(ctxT(t)).Err()
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(false),
		Steps: []resource.TestStep{
			{Config: masterConfig(m, fmt.Sprintf("  admin_password = %q\n", first)), Check: m.capture()},
			{
				// redis.conf cannot be replaced (a directory is in its way): the update fails
				// after the runtime changes.
				PreConfig: func() {
					if err := os.Rename(confPath(), confPath()+".saved"); err != nil {
						t.Fatal(err)
					}
					if err := os.MkdirAll(filepath.Join(confPath(), "in-the-way"), 0o700); err != nil {
						t.Fatal(err)
					}
				},
				Config:      conf(second),
				ExpectError: wrappedRegexp(`Cannot write redis.conf`),
			},
			{
				PreConfig: func() {
					if err := accepts(first); err != nil {
						t.Fatalf("after the failed update the master refuses the admin password in state: %v", err)
					}
					if err := os.RemoveAll(confPath()); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(confPath()+".saved", confPath()); err != nil {
						t.Fatal(err)
					}
				},
				Config: conf(second),
				Check: resource.ComposeAggregateTestCheckFunc(
					m.capture(),
					func(*terraform.State) error {
						if err := accepts(second); err != nil {
							return fmt.Errorf("new admin password refused: %v", err)
						}
						if accepts(first) == nil {
							return fmt.Errorf("the old admin password still works")
						}
						return nil
					},
					m.checkSupervisorSeesMaster(),
				),
			},
		},
	})
}

// TestAccMaster_importHeldMaster: importing a master that is held down (not answering) takes
// the safety settings from the redis.conf it will start with, never assumed defaults: a
// hand-edited eviction policy shows up, so the next plan repairs it.
func TestAccMaster_importHeldMaster(t *testing.T) {
	t.Parallel()
	m := newTestMaster(t)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviderFactories,
		CheckDestroy:             m.checkGone(true),
		Steps: []resource.TestStep{
			{Config: masterConfig(m, "  restart_delay = \"30s\"\n  keep_data_on_destroy = true\n"), Check: m.capture()},
			{
				PreConfig: func() {
					m.crash(t, false)
					waitStatus(t, m.dir, supervisor.StatusHolding)
					p := filepath.Join(m.dir, "redis.conf")
					raw, err := os.ReadFile(p)
					if err != nil {
						t.Fatal(err)
					}
					edited := strings.Replace(string(raw), "maxmemory-policy noeviction", "maxmemory-policy allkeys-lru", 1)
					if edited == string(raw) {
						t.Fatal("redis.conf has no maxmemory-policy noeviction line")
					}
					if err := os.WriteFile(p, []byte(edited), 0o600); err != nil {
						t.Fatal(err)
					}
				},
				ResourceName:  testAddr,
				ImportState:   true,
				ImportStateId: m.dir,
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					if len(states) != 1 {
						return fmt.Errorf("imported %d resources", len(states))
					}
					a := states[0].Attributes
					if a["status"] != "holding" || a["maxmemory_policy"] != "allkeys-lru" || a["replica_of"] != "" ||
						a["appendonly"] != "yes" || a["no_appendfsync_on_rewrite"] != "no" {
						return fmt.Errorf("imported status %q maxmemory_policy %q replica_of %q appendonly %q no_appendfsync_on_rewrite %q; "+
							"want holding and the values of redis.conf (allkeys-lru, \"\", yes, no)", a["status"], a["maxmemory_policy"],
							a["replica_of"], a["appendonly"], a["no_appendfsync_on_rewrite"])
					}
					return nil
				},
			},
		},
	})
}

// TestAccMaster_delaysCheckedAtApply: a restart_delay or max_lock_ttl that is unknown at plan
// time (computed from another resource) is checked when it is known, at apply.
func TestAccMaster_delaysCheckedAtApply(t *testing.T) {
	t.Parallel()
	const refused = `restart_delay = 1s is less than max_lock_ttl \(2s\) \+ clock_drift_margin \(1s\) = 3s`
	// terraform_data's id is generated at apply, so a value built from it is unknown at plan.
	computed := func(m *testMaster, extra string) string {
		return `
resource "terraform_data" "delay" {}
` + masterConfig(m, extra)
	}
	const unknownAtPlan = "  restart_delay = \"${substr(terraform_data.delay.id, 0, 0)}1s\"\n"
	t.Run("create", func(t *testing.T) {
		m := newTestMaster(t)
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProviderFactories,
			CheckDestroy:             m.checkNothingStarted(false),
			Steps: []resource.TestStep{{
				Config:      computed(m, unknownAtPlan),
				ExpectError: wrappedRegexp(refused),
			}},
		})
	})
	t.Run("update", func(t *testing.T) {
		m := newTestMaster(t)
		resource.Test(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProviderFactories,
			CheckDestroy:             m.checkGone(false),
			Steps: []resource.TestStep{
				{Config: computed(m, ""), Check: m.capture()},
				{
					Config:      computed(m, unknownAtPlan),
					ExpectError: wrappedRegexp(refused),
				},
				{
					Config: computed(m, ""),
					Check: resource.ComposeAggregateTestCheckFunc(
						resource.TestCheckResourceAttr(testAddr, "restart_delay_ms", "3000"),
						m.checkSupervisorConfig(testDelay, 0),
					),
				},
			},
		})
	})
}
