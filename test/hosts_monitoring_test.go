package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/terraform"

	"github.com/redlock-kit/redlock-kit/internal/exportertest"
	"github.com/redlock-kit/redlock-kit/internal/hostlab"
)

// hostsMonitoring is the monitoring runbook on the five systemd hosts of a hostsDeployment
// (examples/hosts-five, exporters on by default), run by TestHostsRunbook once its faults
// have healed: every host's redis_exporter answers as the monitoring user and node_exporter
// runs; a real Prometheus (Debian's package) in the client namespace scrapes the module's
// scrape_targets and evaluates monitoring/redlock.rules.yml. Healthy: no alert. A master
// killed -9 is reported held, by name (from the host's state file), and clears. Two hosts
// partitioned away: RedlockMajorityAtRisk fires (never RedlockNoMajority); healed: every
// alert clears.
func hostsMonitoring(t *testing.T, d *hostsDeployment) {
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("REDLOCK_REQUIRE_EXPORTERS") == "1" {
			t.Fatal("prometheus not found: apt-get install prometheus")
		}
		t.Skip("prometheus not installed (apt-get install prometheus; REDLOCK_REQUIRE_EXPORTERS=1 makes this a failure)")
	}
	lab := d.lab
	web := &http.Client{Transport: &http.Transport{DialContext: lab.DialContext(0)}, Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	var targets struct {
		Redis []json.RawMessage `json:"redis"`
		Node  []json.RawMessage `json:"node"`
	}
	if err := json.Unmarshal([]byte(terraform.OutputJson(t, d.opts, "scrape_targets")), &targets); err != nil {
		t.Fatalf("scrape_targets: %v", err)
	}
	if len(targets.Redis) != 5 || len(targets.Node) != 5 {
		t.Fatalf("scrape_targets: %d redis and %d node groups, want 5 each", len(targets.Redis), len(targets.Node))
	}

	// The runbook before this one left errors (the audit's NOPERM probes of the lock user) and
	// fsync latency spikes (its restarts on a loaded machine) in each server's statistics,
	// which redis_exporter reports. Reset them: the monitoring runbook starts, as on a fresh
	// deployment, from servers with a clean record, so that what it reads is its own doing.
	for i, ep := range d.endpoints {
		admin := d.admin(i)
		err := admin.ConfigResetStat(ctx).Err()
		if err == nil {
			err = admin.Do(ctx, "LATENCY", "RESET").Err()
		}
		_ = admin.Close()
		if err != nil {
			t.Fatalf("%s: reset the statistics: %v", ep, err)
		}
	}

	t.Run("every host's exporters answer, redis_exporter as the monitoring user", func(t *testing.T) {
		for _, h := range lab.Hosts() {
			// Two scrapes: a command of the first that the server refused is counted in the
			// statistics the second reads, whichever order the exporter runs them in.
			url := "http://" + net.JoinHostPort(h.Address(), "9121") + "/metrics"
			exportertest.ScrapeText(ctx, t, web, url)
			redis := "\n" + exportertest.ScrapeText(ctx, t, web, url)
			if !strings.Contains(redis, "\nredis_up 1\n") {
				t.Errorf("%s: redis_exporter does not reach the master (redis_up is not 1)", h.Name())
			}
			if strings.Contains(redis, `err="NOPERM"`) {
				t.Errorf("%s: redis_exporter's commands were refused (NOPERM): it runs something the monitoring user may not", h.Name())
			}
			node := "\n" + exportertest.ScrapeText(ctx, t, web, "http://"+net.JoinHostPort(h.Address(), "9100")+"/metrics")
			if !strings.Contains(node, "\nnode_textfile_scrape_error 0\n") {
				t.Errorf("%s: node_exporter's textfile collector is not running cleanly", h.Name())
			}
		}
	})

	dir := t.TempDir()
	for name, groups := range map[string][]json.RawMessage{"redis.json": targets.Redis, "node.json": targets.Node} {
		raw, _ := json.Marshal(groups)
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rules, err := filepath.Abs("../monitoring/redlock.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 900ms, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: redlock-redis
    file_sd_configs: [{files: [%q]}]
  - job_name: redlock-node
    honor_labels: true
    file_sd_configs: [{files: [%q]}]
`, rules, filepath.Join(dir, "redis.json"), filepath.Join(dir, "node.json"))
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	listen := net.JoinHostPort(lab.ClientAddress(0), "9090")
	startInClient(t, lab, promBin, "--web.listen-address="+listen, "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"))
	prom := promAPI{base: "http://" + listen, http: web}

	waitFor(ctx, t, "Prometheus sees five masters serving", func() (bool, string) {
		s := prom.query(ctx, `redlock:masters_serving:sum`)
		return s == "5", "serving " + s
	})
	// quiet: the firing alerts but RedlockFsyncSlow (withoutDiskAlerts: the five hosts
	// share this machine's disk), which it logs.
	var fsyncSlow []string
	quiet := func() []string {
		firing := prom.firing(ctx)
		for _, a := range firing {
			if strings.HasPrefix(a, "RedlockFsyncSlow ") && !slices.Contains(fsyncSlow, a) {
				fsyncSlow = append(fsyncSlow, a)
			}
		}
		return withoutDiskAlerts(firing)
	}
	defer func() {
		if len(fsyncSlow) > 0 {
			t.Logf("fired on a slow disk (left out of the checks): %v", fsyncSlow)
		}
	}()
	// The runbook's earlier steps (a drift repaired, restarts) may leave a first scrape
	// that predates their repair: wait until the healthy hosts' alerts are quiet.
	quietFrom := time.Now()
	waitFor(ctx, t, "no alert firing on the healthy hosts", func() (bool, string) {
		firing := quiet()
		return len(firing) == 0, fmt.Sprintf("firing %v", firing)
	})
	t.Logf("no alert firing on the healthy hosts after %v", time.Since(quietFrom).Round(time.Second))

	hosts := lab.Hosts()
	t.Run("kill -9 of a master: held, by name, then clear", func(t *testing.T) {
		// The host's restart policy publishes its state (docs/monitoring.md): serving, every
		// host says not holding and appendfsync always; the hold below is seen through it.
		waitFor(ctx, t, "every host's state file: not holding, appendfsync always", func() (bool, string) {
			holding := prom.query(ctx, `count(redlock_master_holding{master=~"h[1-5]"} == 0)`)
			always := prom.query(ctx, `count(redlock_master_appendfsync_always{master=~"h[1-5]"} == 1)`)
			return holding == "5" && always == "5", "not holding " + holding + ", appendfsync always " + always
		})
		killed := time.Now()
		if err := hosts[0].Kill(ctx, d.units[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		var heldAfter time.Duration
		waitFor(ctx, t, "RedlockMasterHeld master=h1", func() (bool, string) {
			firing := prom.firing(ctx)
			heldAfter = time.Since(killed)
			return slices.Contains(firing, "RedlockMasterHeld master=h1"), fmt.Sprint(firing)
		})
		waitFor(ctx, t, "every alert clears once h1 serves again", func() (bool, string) {
			firing := quiet()
			if slices.Contains(firing, "RedlockMasterDown master=h1") {
				t.Fatalf("a held master was reported down: %v", firing)
			}
			return len(firing) == 0, fmt.Sprint(firing)
		})
		t.Logf("kill -9 of h1 (restart delay %v): RedlockMasterHeld firing after %v, all clear after %v",
			d.restartDelay, heldAfter.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	})

	cut := time.Now()
	for _, h := range hosts[3:] {
		if err := lab.Isolate(h); err != nil {
			t.Fatal(err)
		}
	}
	var atRiskAfter time.Duration
	waitFor(ctx, t, "RedlockMajorityAtRisk", func() (bool, string) {
		firing := prom.firing(ctx)
		for _, a := range firing {
			if a == "RedlockNoMajority" {
				t.Fatalf("RedlockNoMajority fired with three of five hosts serving: %v", firing)
			}
		}
		atRiskAfter = time.Since(cut)
		for _, a := range firing {
			if a == "RedlockMajorityAtRisk" {
				return true, ""
			}
		}
		return false, fmt.Sprint(firing)
	})
	down := prom.firing(ctx)
	if err := lab.Heal(); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	waitFor(ctx, t, "every alert clears once the partition heals", func() (bool, string) {
		firing := quiet()
		return len(firing) == 0, fmt.Sprint(firing)
	})
	t.Logf("two of five hosts partitioned: RedlockMajorityAtRisk firing after %v (firing then: %v); healed: all clear after %v",
		atRiskAfter.Round(time.Millisecond), down, time.Since(healed).Round(time.Millisecond))
}

// startInClient runs a command in the lab's first client namespace until the test ends
// (stopped by its pid).
func startInClient(t *testing.T, lab *hostlab.Lab, bin string, args ...string) {
	t.Helper()
	exportertest.Run(t, filepath.Base(bin), lab.ClientCommand(context.Background(), 0, bin, args...))
}
