//go:build linux

package test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/terraform"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/hostlab"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// hostsDeployment is examples/hosts-five applied for five hosts of a hostlab, each booted
// from its rendered user-data. terraform and lockagent run in the lab's client namespace,
// the only place the hosts' addresses exist.
type hostsDeployment struct {
	lab          *hostlab.Lab
	opts         *terraform.Options
	userData     []string
	endpoints    []string
	restartDelay time.Duration
	adminPass    string
	lockUser     string
	lockPass     string
	agentConfig  string
	units        []string
	tls          *tls.Config // the deployment's CA when it serves TLS; nil otherwise
}

const hostsMaxLockTTL = 10 * time.Second

// TestHostsRunbook is the runbook for five masters on five hosts: deploy, validate, then
// crash, reboot, power loss, replacement, partitions, drift and a dataset replaced by
// replication, each observed from the client's side and healed; then, on the healed cluster, the monitoring runbook
// (hostsMonitoring) with a real Prometheus.
func TestHostsRunbook(t *testing.T) {
	started := time.Now()
	d := deployHostsFive(t, false)
	t.Logf("deployed: five hosts booted and serving after %s (includes the one restart_delay a new host waits)",
		time.Since(started).Round(100*time.Millisecond))

	t.Run("validate says SAFE and a second plan is empty", func(t *testing.T) {
		out, err := d.lockagent(context.Background(), "validate", "-c", d.agentConfig)
		if err != nil || !strings.Contains(out, "VERDICT: SAFE") {
			t.Fatalf("lockagent validate: %v\n%s", err, out)
		}
		d.planIsEmpty(t)
	})

	t.Run("the distribution's unit keeps its sandbox", func(t *testing.T) {
		h := d.lab.Hosts()[0]
		out, err := h.Systemctl(context.Background(), "show", d.units[0], "-p", "NoExecPaths", "-p", "ProtectSystem",
			"-p", "User", "-p", "PrivateDevices", "-p", "Restart", "-p", "StartLimitIntervalUSec")
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"NoExecPaths=/", "ProtectSystem=strict", "User=redis", "PrivateDevices=yes",
			"Restart=always", "StartLimitIntervalUSec=0"} {
			if !strings.Contains(out, want+"\n") {
				t.Errorf("%s on %s lacks %s:\n%s", d.units[0], h.Name(), want, out)
			}
		}
	})

	t.Run("one host runs valkey-server and locks work across both servers", func(t *testing.T) {
		h := d.lab.Hosts()[4]
		if out, err := h.Exec(context.Background(), "systemctl", "is-active", "valkey-server.service"); err != nil {
			t.Fatalf("valkey-server on %s: %v %s", h.Name(), err, out)
		}
		info, err := d.admin(4).Info(context.Background(), "server").Result()
		if err != nil || !strings.Contains(info, "server_name:valkey") {
			t.Fatalf("host 5 INFO server: %v\n%s", err, info)
		}
		c := d.lockClient(t)
		for i := 0; i < 20; i++ {
			l, err := c.Acquire(context.Background(), fmt.Sprintf("mixed:%d", i), 5*time.Second)
			if err != nil {
				t.Fatalf("acquire %d on the mixed cluster: %v", i, err)
			}
			if err := l.Release(context.Background()); err != nil {
				t.Fatalf("release %d: %v", i, err)
			}
		}
	})

	t.Run("kill -9 of redis-server: held for restart_delay, acknowledged keys kept", func(t *testing.T) {
		ctx := context.Background()
		h, i := d.lab.Hosts()[0], 0
		if err := d.admin(i).Set(ctx, "ack:kill", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		pid, err := h.MainPID(ctx, d.units[i])
		if err != nil {
			t.Fatal(err)
		}
		innerPID, err := h.Systemctl(ctx, "show", "--property=MainPID", "--value", d.units[i])
		if err != nil {
			t.Fatal(err)
		}
		killed := time.Now() // the kill is sent after this: downtime is measured from it
		if err := h.Kill(ctx, d.units[i], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Redlock goes on with four masters while this one is held down.
		if out, err := d.lockagent(ctx, "run", "-c", d.agentConfig, "--key", "during-kill", "--ttl", "5s", "--", "true"); err != nil {
			t.Fatalf("lockagent run with one master down: %v\n%s", err, out)
		}
		down := d.waitServing(t, i).Sub(killed)
		t.Logf("kill -9 -> first accepted connection: %s (restart_delay %s)", down.Round(time.Millisecond), d.restartDelay)
		if down < d.restartDelay {
			t.Fatalf("master served again %s after kill -9, before restart_delay %s", down, d.restartDelay)
		}
		if newPID, err := h.MainPID(ctx, d.units[i]); err != nil || newPID == pid {
			t.Fatalf("main pid after the restart: %d (was %d), %v", newPID, pid, err)
		}
		if v, err := d.admin(i).Get(ctx, "ack:kill").Result(); err != nil || v != "1" {
			t.Fatalf("acknowledged key after kill -9: %q, %v", v, err)
		}
		// The marker is no lock: delete it, or the audit reports a key of the lock user's
		// keyspace (every key) with no TTL or one above max_lock_ttl: no hold covers it.
		if err := d.admin(i).Del(ctx, "ack:kill").Err(); err != nil {
			t.Fatal(err)
		}
		crash, err := h.Exec(ctx, "cat", "/run/redlock-on-crash")
		if err != nil || !strings.Contains(crash, "REDLOCK_EVENT=crash") || !strings.Contains(crash, "REDLOCK_MASTER_ADDR="+d.endpoints[i]) ||
			!strings.Contains(crash, "REDLOCK_REDIS_PID="+strings.TrimSpace(innerPID)) {
			t.Errorf("on_crash hook: %v\n%s", err, crash)
		}
		// The hook runs after the start and may still be writing its file: wait for its event.
		var after string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if after, err = h.Exec(ctx, "cat", "/run/redlock-after-restart"); err == nil && strings.Contains(after, "REDLOCK_EVENT=after_restart") {
				break
			}
		}
		if !strings.Contains(after, "REDLOCK_EVENT=after_restart") || !strings.Contains(after, "REDLOCK_RESTART_DELAY_MS=11000") {
			t.Errorf("after_restart hook: %v\n%s", err, after)
		}
	})

	// Each of these restarts one host of its own and waits out its hold; they share no host,
	// so they run side by side (two at a time: go test's -parallel).
	t.Run("restarts of other hosts, each held for restart_delay", func(t *testing.T) {
		for _, i := range []int{1, 4} { // a redis-server host and the valkey-server host
			t.Run("clean reboot: held restart_delay (a clean marker counts in its own boot), released keys stay released: "+d.units[i], func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				h := d.lab.Hosts()[i]
				admin := d.admin(i)
				// A lock granted and then released the way lockagent releases by default: the DEL
				// is not written to the AOF. The clean stop rewrites the AOF, so it must not return.
				if err := admin.Set(ctx, "released", "tok", 10*time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
				if err := admin.Set(ctx, "kept", "1", 10*time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
				// The lock user runs the kit's release function (FCALL: the policy script loaded
				// the library at the start) and may run no Lua of its own.
				n, err := d.lockUserClient(i).FCall(ctx, redlock.FunctionLibrary().Function("release"), []string{"released"}, "tok", "", "tok").Int()
				if err != nil || n != 1 {
					t.Fatalf("unlogged release: %d, %v", n, err)
				}
				if err := d.lockUserClient(i).Eval(ctx, "while true do end", nil).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
					t.Fatalf("lock user EVAL of a busy loop: %v, want NOPERM", err)
				}
				rebooted := time.Now()
				if err := h.Reboot(ctx); err != nil {
					t.Fatal(err)
				}
				journal := d.requireHeldSince(t, i, rebooted, "clean reboot")
				// The container's boot id is new at every boot (systemd-nspawn), like a machine's.
				if !strings.Contains(journal, "the clean-stop marker does not count") {
					t.Fatalf("the gate did not hold a reboot as a marker of another boot:\n%s", journal)
				}
				if !strings.Contains(journal, "function library "+redlock.FunctionLibraryName+" loaded") {
					t.Fatalf("the start did not load the function library:\n%s", journal)
				}
				if n, err := admin.Exists(ctx, "released").Result(); err != nil || n != 0 {
					t.Fatalf("released key came back after a clean reboot (exists=%d, %v)", n, err)
				}
				if v, err := admin.Get(ctx, "kept").Result(); err != nil || v != "1" {
					t.Fatalf("held key after a clean reboot: %q, %v", v, err)
				}
				// The marker is no lock: delete it, or the audit reports a key of the lock user's
				// keyspace (every key) with no TTL or one above max_lock_ttl: no hold covers it.
				if err := admin.Del(ctx, "kept").Err(); err != nil {
					t.Fatal(err)
				}
			})
		}

		t.Run("power loss: held for restart_delay from boot, acknowledged keys kept", func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			h, i := d.lab.Hosts()[2], 2
			if err := d.admin(i).Set(ctx, "ack:power", "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := h.PowerOff(ctx); err != nil {
				t.Fatal(err)
			}
			poweredOn := time.Now()
			if err := h.Boot(ctx); err != nil {
				t.Fatal(err)
			}
			d.requireHeldSince(t, i, poweredOn, "power loss -> power-on")
			if v, err := d.admin(i).Get(ctx, "ack:power").Result(); err != nil || v != "1" {
				t.Fatalf("acknowledged key after a power loss: %q, %v", v, err)
			}
			// The marker is no lock: delete it, or the audit reports a key of the lock user's
			// keyspace (every key) with no TTL or one above max_lock_ttl: no hold covers it.
			if err := d.admin(i).Del(ctx, "ack:power").Err(); err != nil {
				t.Fatal(err)
			}
		})

		t.Run("replacement by an empty host: held for restart_delay before it grants", func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			h, i := d.lab.Hosts()[3], 3
			replaced := time.Now()
			if err := h.Replace(ctx, d.userData[i]); err != nil {
				t.Fatal(err)
			}
			d.requireHeldSince(t, i, replaced, "replacement")
			// Empty but for the deployment record every start writes.
			keys, _ := d.admin(i).Keys(ctx, "*").Result()
			if len(keys) != 1 || keys[0] != hold.DeploymentKey {
				t.Fatalf("replaced host is not empty: keys %q, want only %s", keys, hold.DeploymentKey)
			}
		})

		t.Run("a host cloned from a cleanly stopped host's disk: held for restart_delay", func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			h, i := d.lab.Hosts()[0], 0
			if err := d.admin(i).Set(ctx, "ack:clone", "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
			// Gone when this step ends, also when it fails: a marker left with no TTL in the
			// lock user's keyspace would fail the later steps' audits too.
			t.Cleanup(func() { _ = d.admin(i).Del(context.Background(), "ack:clone").Err() })
			// A clean stop writes the marker on the disk; the clone boots from a copy of it (an
			// image or a snapshot taken after the stop), with the same machine-id.
			cloned := time.Now()
			if err := h.ReplaceWithClone(ctx, d.userData[i]); err != nil {
				t.Fatal(err)
			}
			journal := d.requireHeldSince(t, i, cloned, "clean stop -> clone")
			// The marker names the source's machine and boot. On a loaded machine the source's
			// stop step may not see the server's exit logged within its bound (durable_exit)
			// and count the stop unclean: the clone is then held for the hold record that
			// stop left (from another boot), held all the same. The scenario table covers
			// each reason on its own.
			switch {
			case strings.Contains(journal, "the clean-stop marker does not count"):
			case strings.Contains(journal, "did not stop cleanly before a reboot"):
				t.Logf("the source's stop was counted unclean (busy machine): the clone was held for its hold record")
			default:
				t.Fatalf("the clone was held for neither the source's marker nor its hold record:\n%s", journal)
			}
			if v, err := d.admin(i).Get(ctx, "ack:clone").Result(); err != nil || v != "1" {
				t.Fatalf("acknowledged key on the clone: %q, %v", v, err)
			}
			// The marker is no lock: delete it, or the audit reports a key of the lock user's
			// keyspace (every key) with no TTL or one above max_lock_ttl: no hold covers it.
			if err := d.admin(i).Del(ctx, "ack:clone").Err(); err != nil {
				t.Fatal(err)
			}
		})
	})

	t.Run("partitions", func(t *testing.T) {
		ctx := context.Background()
		hosts := d.lab.Hosts()
		c := d.lockClient(t)
		t.Cleanup(func() { _ = d.lab.Heal() })

		if err := d.lab.Isolate(hosts[0]); err != nil {
			t.Fatal(err)
		}
		l, err := c.Acquire(ctx, "partition:one-host", 5*time.Second)
		if err != nil {
			t.Fatalf("acquire with one host cut off: %v", err)
		}
		_ = l.Release(ctx)
		if err := d.lab.Heal(); err != nil {
			t.Fatal(err)
		}

		if err := d.lab.CutClient(0, hosts[0], hosts[1], hosts[2]); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			l, err := c.TryAcquire(ctx, fmt.Sprintf("partition:minority:%d", i), 5*time.Second)
			if err == nil {
				_ = l.Release(ctx)
				t.Fatal("acquired with only two of five masters reachable")
			}
			if !errors.Is(err, redlock.ErrUnavailable) {
				t.Fatalf("acquire with three hosts cut off: %v, want ErrUnavailable", err)
			}
		}
		if err := d.lab.Heal(); err != nil {
			t.Fatal(err)
		}

		// One-way: the client's packets reach two hosts but their replies do not come back.
		for _, h := range hosts[3:] {
			if err := d.lab.OneWay(h.Address(), d.lab.ClientAddress(0)); err != nil {
				t.Fatal(err)
			}
		}
		l, err = c.Acquire(ctx, "partition:one-way", 5*time.Second)
		if err != nil {
			t.Fatalf("acquire with replies from two hosts dropped: %v", err)
		}
		_ = l.Release(ctx)
		if err := d.lab.OneWay(hosts[2].Address(), d.lab.ClientAddress(0)); err != nil {
			t.Fatal(err)
		}
		if l, err := c.TryAcquire(ctx, "partition:one-way-majority", 5*time.Second); err == nil {
			_ = l.Release(ctx)
			t.Fatal("acquired while replies from three of five hosts were dropped")
		} else if !errors.Is(err, redlock.ErrUnavailable) {
			t.Fatalf("one-way partition of a majority: %v, want ErrUnavailable", err)
		}

		if err := d.lab.Heal(); err != nil {
			t.Fatal(err)
		}
		out, err := d.lockagent(ctx, "validate", "-c", d.agentConfig)
		if err != nil || !strings.Contains(out, "VERDICT: SAFE") {
			t.Fatalf("validate after heal: %v\n%s", err, out)
		}
	})

	t.Run("drift: CONFIG SET appendfsync everysec is named by the check and by validate", func(t *testing.T) {
		ctx := context.Background()
		i := 3
		if err := d.admin(i).ConfigSet(ctx, "appendfsync", "everysec").Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.admin(i).ConfigSet(ctx, "appendfsync", "always").Err() })
		plan, err := terraform.PlanE(t, d.opts)
		if err != nil {
			t.Fatalf("plan: %v", err)
		}
		if !strings.Contains(plan, d.endpoints[i]) || !strings.Contains(plan, "appendfsync everysec") {
			t.Fatalf("the plan's check does not name %s and appendfsync everysec:\n%s", d.endpoints[i], plan)
		}
		out, err := d.lockagent(ctx, "validate", "-c", d.agentConfig)
		if err == nil || !strings.Contains(out, "appendfsync") || !strings.Contains(out, d.endpoints[i]) {
			t.Fatalf("validate with a drifted master: %v\n%s", err, out)
		}
		if err := d.admin(i).ConfigSet(ctx, "appendfsync", "always").Err(); err != nil {
			t.Fatal(err)
		}
		d.planIsEmpty(t)
	})

	// The host's state timer reads the replication state of the server the unit started
	// (what its start recorded in /run/redlock/repl); the test starts the timer's service
	// instead of waiting up to 30 s for a tick. The source's clean restart afterwards gives it
	// a record for its new replication id (a replica attached) and shows that a clean stop
	// still starts at once with the pidfile's token.
	t.Run("a dataset replaced while it serves: the state timer kills it, held restart_delay from the exit", func(t *testing.T) {
		ctx := context.Background()
		i, j := 2, 1
		h := d.lab.Hosts()[i]
		pid, err := h.MainPID(ctx, d.units[i])
		if err != nil {
			t.Fatal(err)
		}
		host, port, _ := net.SplitHostPort(d.endpoints[j])
		if err := d.admin(i).ConfigSet(ctx, "masterauth", d.adminPass).Err(); err != nil {
			t.Fatal(err)
		}
		if err := d.admin(i).Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
			t.Fatal(err)
		}
		// The host's own timer ticks every 30 s: on a busy machine the sync can outlast a tick,
		// which then kills the server while it is a replica (the same rule). Either way the
		// kill comes after this.
		before := time.Now()
		killedByTimer := false
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			info, _ := d.admin(i).Info(ctx, "replication").Result()
			if strings.Contains(info, "master_link_status:up") {
				break
			}
			// Killed (and maybe held and started again already: INFO then answers, from a
			// new server that never was a replica).
			if now, perr := h.MainPID(ctx, d.units[i]); perr == nil && now != pid {
				killedByTimer = true
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never synced from %s, nor was it killed:\n%s", d.endpoints[i], d.endpoints[j], info)
			}
		}
		if !killedByTimer {
			if err := d.admin(i).Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
				t.Fatal(err)
			}
			if out, err := h.Systemctl(ctx, "start", "redlock-state.service"); err != nil {
				t.Fatalf("the state timer's service: %v\n%s", err, out)
			}
		}
		t.Logf("killed by the host's own timer during the sync: %v", killedByTimer)
		down := d.waitServing(t, i).Sub(before)
		t.Logf("state tick -> serving again: %s (restart_delay %s)", down.Round(time.Millisecond), d.restartDelay)
		if down < d.restartDelay {
			t.Fatalf("the replaced master served again %s after the tick, before restart_delay %s", down, d.restartDelay)
		}
		if newPID, err := h.MainPID(ctx, d.units[i]); err != nil || newPID == pid {
			t.Fatalf("main pid after the tick: %d (was %d), %v: not killed", newPID, pid, err)
		}
		tick, _ := h.Exec(ctx, "journalctl", "-b", "-u", "redlock-state.service", "--no-pager", "-o", "cat")
		journal, _ := h.Exec(ctx, "journalctl", "-b", "-u", d.units[i], "--no-pager", "-o", "cat", "-n", "40")
		if !strings.Contains(tick, "its dataset was replaced") || !strings.Contains(journal, "the last run did not stop cleanly") {
			t.Fatalf("the tick or the gate did not say why:\n%s\n%s", tick, journal)
		}

		src := d.lab.Hosts()[j]
		restarted := fmt.Sprintf("@%d", time.Now().Unix()-1) // the hosts share the test's clock
		if _, err := src.Systemctl(ctx, "restart", d.units[j]); err != nil {
			t.Fatal(err)
		}
		d.waitServing(t, j)
		if journal, _ := src.Exec(ctx, "journalctl", "-u", d.units[j], "--since", restarted, "--no-pager", "-o", "cat"); !strings.Contains(journal, "last stop was clean: starting at once") {
			t.Fatalf("the source's clean restart did not start at once:\n%s", journal)
		}
		if out, err := d.lockagent(ctx, "validate", "-c", d.agentConfig); err != nil || !strings.Contains(out, "VERDICT: SAFE") {
			t.Fatalf("validate after the replaced master's restart: %v\n%s", err, out)
		}
	})
	t.Logf("runbook done in %s", time.Since(started).Round(time.Second))

	t.Run("monitoring: Prometheus sees the healthy hosts, a held master, a majority at risk", func(t *testing.T) {
		hostsMonitoring(t, d)
	})
}

// deployHostsFive creates the lab's network, applies examples/hosts-five for its five
// addresses from the client namespace (with tls = useTLS), and boots each host from its
// user_data.
func deployHostsFive(t *testing.T, useTLS bool) *hostsDeployment {
	t.Helper()
	specs := make([]hostlab.HostSpec, 5)
	for i := range specs {
		specs[i] = hostlab.HostSpec{Name: fmt.Sprintf("h%d", i+1)}
	}
	lab := hostlab.Start(t, hostlab.Options{Hosts: specs, Clients: 1, NoBoot: true})
	d := &hostsDeployment{lab: lab}

	root := copyTree(t, "modules/redlock-hosts", "examples/hosts-five")
	hosts := make([]map[string]interface{}, 5)
	for i, h := range lab.Hosts() {
		// One failure domain per host, as in production: without any, the plan warns that
		// independence is unchecked (and planIsEmpty fails on a warning).
		hosts[i] = map[string]interface{}{"name": h.Name(), "address": h.Address(), "failure_domain": "zone-" + h.Name()}
	}
	hosts[4]["server"] = "valkey-server"
	d.opts = terraformOptions(filepath.Join(root, "examples/hosts-five"), map[string]interface{}{
		"hosts":            hosts,
		"max_lock_ttl":     hostsMaxLockTTL.String(),
		"install_packages": false, // the lab's image has both packages
		"tls":              useTLS,
		"hooks": map[string]interface{}{
			"on_crash":      []string{"/bin/sh", "-c", "env | grep ^REDLOCK_ > /run/redlock-on-crash"},
			"after_restart": []string{"/bin/sh", "-c", "env | grep ^REDLOCK_ > /run/redlock-after-restart"},
		},
	})
	// terraform (and the audit its check block runs) in the client namespace.
	wrapper := filepath.Join(t.TempDir(), "terraform-in-client-netns")
	tf, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\nexec ip netns exec %s %s \"$@\"\n", lab.ClientNetns(0), tf)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	d.opts.TerraformBinary = wrapper
	t.Cleanup(func() {
		if _, err := terraform.DestroyE(t, d.opts); err != nil {
			t.Errorf("terraform destroy: %v", err)
		}
	})
	terraform.InitAndApply(t, d.opts)

	d.endpoints = terraform.OutputList(t, d.opts, "endpoints")
	d.units = terraform.OutputList(t, d.opts, "units")
	ms, err := strconv.Atoi(terraform.Output(t, d.opts, "restart_delay_ms"))
	if err != nil {
		t.Fatalf("restart_delay_ms: %v", err)
	}
	d.restartDelay = time.Duration(ms) * time.Millisecond
	if useTLS {
		if d.tls, err = pki.ClientConfig(terraform.Output(t, d.opts, "ca_cert_pem")); err != nil {
			t.Fatalf("ca_cert_pem: %v", err)
		}
	}
	var userData []string
	if err := json.Unmarshal([]byte(terraform.OutputJson(t, d.opts, "user_data")), &userData); err != nil {
		t.Fatalf("user_data: %v", err)
	}
	d.userData = userData
	d.agentConfig = filepath.Join(t.TempDir(), "agent.json")
	agent := secretOutput(t, d.opts, "agent_config")
	if err := os.WriteFile(d.agentConfig, []byte(agent), 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Username      string `json:"username"`
		Password      string `json:"password"`
		AdminPassword string `json:"admin_password"`
	}
	if err := json.Unmarshal([]byte(agent), &cfg); err != nil {
		t.Fatalf("agent_config: %v", err)
	}
	d.lockUser, d.lockPass, d.adminPass = cfg.Username, cfg.Password, cfg.AdminPassword
	var gzipped []string
	if err := json.Unmarshal([]byte(terraform.OutputJson(t, d.opts, "user_data_base64_gzip")), &gzipped); err != nil {
		t.Fatalf("user_data_base64_gzip: %v", err)
	}
	t.Logf("user_data: %d bytes (redis-server host), %d bytes (valkey-server host)", len(d.userData[0]), len(d.userData[4]))
	// What a cloud is given: the plain form while it fits EC2's 16 KiB, else the gzip form,
	// which must fit and which cloud-init unpacks itself (TLS puts the plain form over).
	for i, ud := range d.userData {
		gz, err := base64.StdEncoding.DecodeString(gzipped[i])
		if err != nil {
			t.Fatalf("user_data_base64_gzip of host %d: %v", i+1, err)
		}
		switch {
		case len(gz) > 16*1024:
			t.Errorf("user_data of host %d is %d bytes even gzipped, over EC2's 16 KiB", i+1, len(gz))
		case len(ud) > 16*1024:
			t.Logf("host %d: user_data is %d bytes, over 16 KiB: booting it with the %d-byte gzip form", i+1, len(ud), len(gz))
			d.userData[i] = string(gz)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	booted := time.Now()
	if err := lab.ProvisionAll(ctx, d.userData); err != nil {
		t.Fatal(err)
	}
	for _, h := range lab.Hosts() {
		if err := h.WaitCloudInit(ctx); err != nil {
			t.Fatalf("cloud-init on %s: %v", h.Name(), err)
		}
	}
	t.Logf("five hosts booted, cloud-init done: %s", time.Since(booted).Round(100*time.Millisecond))
	for i := range lab.Hosts() {
		d.waitServing(t, i)
	}
	t.Logf("five masters serving: %s after boot (a new host holds restart_delay %s first)",
		time.Since(booted).Round(100*time.Millisecond), d.restartDelay)
	return d
}

// planIsEmpty runs a plan and fails unless it changes nothing and its check passed. The
// exit code cannot tell: a check block's data source is a planned read, so
// -detailed-exitcode answers 2 even when nothing changes (hashicorp/terraform#35226).
func (d *hostsDeployment) planIsEmpty(t *testing.T) {
	t.Helper()
	out, err := terraform.PlanE(t, d.opts)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if !strings.Contains(out, "Plan: 0 to add, 0 to change, 0 to destroy.") && !strings.Contains(out, "No changes.") {
		t.Fatalf("plan is not empty:\n%s", out)
	}
	if strings.Contains(out, "Warning:") {
		t.Fatalf("plan warns (a failed check?):\n%s", out)
	}
}

func (d *hostsDeployment) client(i int, user, password string) *redis.Client {
	dial := pki.Dialer(d.lab.DialContext(0))
	if d.tls != nil {
		dial = pki.WrapDialer(dial, d.tls)
	}
	return redis.NewClient(&redis.Options{Addr: d.endpoints[i], Username: user, Password: password,
		Dialer: dial, DialTimeout: 500 * time.Millisecond, ReadTimeout: 2 * time.Second,
		ContextTimeoutEnabled: true, MaxRetries: -1})
}

func (d *hostsDeployment) admin(i int) *redis.Client { return d.client(i, "", d.adminPass) }

func (d *hostsDeployment) lockUserClient(i int) *redis.Client {
	return d.client(i, d.lockUser, d.lockPass)
}

// lockClient is a redlock Client over the five masters, dialling from the client namespace.
func (d *hostsDeployment) lockClient(t *testing.T) *redlock.Client {
	t.Helper()
	masters := make([]redis.UniversalClient, len(d.endpoints))
	for i := range d.endpoints {
		masters[i] = d.lockUserClient(i)
	}
	c, err := redlock.New(masters, redlock.Options{MaxTTL: hostsMaxLockTTL, NodeTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// lockagent runs the CLI in the client namespace.
func (d *hostsDeployment) lockagent(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	out, err := d.lab.ClientCommand(ctx, 0, lockagentBin, args...).CombinedOutput()
	return string(out), err
}

// waitServing polls master i from the client namespace (a new connection, AUTH and PING
// every 20 ms) until it answers, and returns when it first did.
func (d *hostsDeployment) waitServing(t *testing.T, i int) time.Time {
	t.Helper()
	start := time.Now()
	deadline := start.Add(d.restartDelay + 3*time.Minute)
	var last error
	for time.Now().Before(deadline) {
		c := d.admin(i)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		last = c.Ping(ctx).Err()
		cancel()
		_ = c.Close()
		if last == nil {
			return time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	// What the host says about it: the unit's journal (the gate's log) and its state.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	journal, _ := d.lab.Hosts()[i].Exec(ctx, "journalctl", "--no-pager", "-n", "60", "-u", d.units[i])
	status, _ := d.lab.Hosts()[i].Exec(ctx, "systemctl", "--no-pager", "status", d.units[i])
	t.Fatalf("master %s not serving after %s: %v\n%s\n%s", d.endpoints[i], time.Since(start).Round(time.Second), last, status, journal)
	return time.Time{}
}

// requireHeldSince waits until host i serves again after since (the test's reboot, power-on,
// replacement or clone; what names it), fails unless that took restart_delay at least and the
// gate logged a hold of restart_delay at least at this boot, and returns the unit's journal
// of this boot.
func (d *hostsDeployment) requireHeldSince(t *testing.T, i int, since time.Time, what string) (journal string) {
	t.Helper()
	down := d.waitServing(t, i).Sub(since)
	t.Logf("%s -> serving: %s (restart_delay %s)", what, down.Round(time.Millisecond), d.restartDelay)
	if down < d.restartDelay {
		t.Fatalf("%s: the master served %s after it, before restart_delay %s", what, down, d.restartDelay)
	}
	journal, _ = d.lab.Hosts()[i].Exec(context.Background(), "journalctl", "-b", "-u", d.units[i], "--no-pager", "-o", "cat")
	requireHeldForDelay(t, journal, d.restartDelay)
	return journal
}

// requireHeldForDelay fails unless the gate held this boot's start for restart_delay at least,
// as it logged the hold it decided ("holding the start for Nms", the first of this boot). The
// time from a test's reboot or power-on to serving also counts the boot, which hosts booting
// side by side lengthen; the logged hold does not depend on the machine's speed.
func requireHeldForDelay(t *testing.T, journal string, delay time.Duration) {
	t.Helper()
	const prefix = "holding the start for "
	i := strings.Index(journal, prefix)
	if i < 0 {
		t.Fatalf("the gate logged no hold at this boot (want one of restart_delay %s):\n%s", delay, journal)
	}
	digits := journal[i+len(prefix):]
	digits = digits[:len(digits)-len(strings.TrimLeft(digits, "0123456789"))]
	ms, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || !strings.HasPrefix(journal[i+len(prefix)+len(digits):], "ms") {
		t.Fatalf("unreadable hold in the gate's log %q:\n%s", journal[i:min(len(journal), i+60)], journal)
	}
	if ms < delay.Milliseconds() {
		t.Fatalf("the gate held the start for %dms, less than restart_delay %s:\n%s", ms, delay, journal)
	}
}
