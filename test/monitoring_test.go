package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/terraform"

	"github.com/redlock-kit/redlock-kit/internal/exportertest"
	"github.com/redlock-kit/redlock-kit/internal/hostconfig"
)

// TestMonitoringAlertsFireAndClear is the monitoring runbook on the main job, with a real
// Prometheus (Debian's package) evaluating monitoring/redlock.rules.yml: five supervised
// masters, one redis_exporter per master logged in as the monitoring user, node_exporter
// reading the supervisors' metrics files. Healthy: no alert. Two masters killed -9: each is
// reported held (with its name), never down; after a minute at the quorum the majority is at
// risk; once they serve again every alert clears.
func TestMonitoringAlertsFireAndClear(t *testing.T) {
	// Parallel: its masters are on loopback addresses of its own (deployLocalFive), its
	// exporters and Prometheus on free ports, and the healthy check leaves out
	// RedlockFsyncSlow, the one alert other tests' writes on the shared disk can fire.
	t.Parallel()
	bins := map[string]string{}
	for _, name := range []string{"prometheus", "prometheus-redis-exporter", "prometheus-node-exporter"} {
		bins[name] = exportertest.Binary(t, name)
	}
	// The hold must outlast RedlockMajorityAtRisk's one minute.
	d := deployLocalFive(t, "75s")
	user, password := terraform.Output(t, d.opts, "monitor_user"), secretOutput(t, d.opts, "monitor_password")
	dataDirs := d.dataDirs(t)

	var redisTargets []string
	textfiles := t.TempDir()
	names := make([]string, len(dataDirs))
	for i, dir := range dataDirs {
		names[i] = filepath.Base(dir) // the master's name (name_prefix-i) is its data dir's name
		addr := exportertest.Start(t, bins["prometheus-redis-exporter"], "-web.listen-address",
			[]string{"REDIS_ADDR=redis://" + d.endpoints[i], "REDIS_USER=" + user, "REDIS_PASSWORD=" + password},
			hostconfig.RedisExporterArgs("")...)
		redisTargets = append(redisTargets, fmt.Sprintf("{targets: [%q], labels: {master: %q}}", addr, names[i]))
		if err := os.Symlink(filepath.Join(dir, "metrics.prom"), filepath.Join(textfiles, names[i]+".prom")); err != nil {
			t.Fatal(err)
		}
	}
	nodeAddr := exportertest.Start(t, bins["prometheus-node-exporter"], "--web.listen-address", nil,
		"--collector.textfile.directory="+textfiles)

	rules, err := filepath.Abs("../monitoring/redlock.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	promDir := t.TempDir()
	config := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
  - job_name: redlock-redis
    static_configs: [%s]
  - job_name: redlock-node
    honor_labels: true
    static_configs: [{targets: [%q]}]
`, rules, strings.Join(redisTargets, ", "), nodeAddr)
	if err := os.WriteFile(filepath.Join(promDir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	prom := promAPI{http: http.DefaultClient}
	prom.base = "http://" + exportertest.Start(t, bins["prometheus"], "--web.listen-address", nil,
		"--config.file="+filepath.Join(promDir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(promDir, "data"))

	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	waitFor(ctx, t, "Prometheus sees five masters serving and holding none", func() (bool, string) {
		serving := prom.query(ctx, `redlock:masters_serving:sum`)
		held := prom.query(ctx, `count(redlock_master_holding == 0)`)
		return serving == "5" && held == "5", "serving " + serving + ", not holding " + held
	})
	// Every alert but RedlockFsyncSlow must be quiet (withoutDiskAlerts).
	if firing := withoutDiskAlerts(prom.firing(ctx)); len(firing) > 0 {
		t.Fatalf("healthy cluster: alerts firing: %v", firing)
	}

	killed := time.Now()
	for _, i := range []int{0, 1} {
		kill(t, d.state(t, i).RedisPID)
	}
	want := map[string]bool{"RedlockMasterHeld master=" + names[0]: true, "RedlockMasterHeld master=" + names[1]: true}
	never := func(firing []string) {
		for _, a := range firing {
			if strings.HasPrefix(a, "RedlockMasterDown") || strings.HasPrefix(a, "RedlockNoMajority") {
				t.Fatalf("%s fired: held masters are not down, and three of five still serve (firing: %v)", a, firing)
			}
		}
	}
	var heldAfter, atRiskAfter time.Duration
	waitFor(ctx, t, "RedlockMasterHeld for both killed masters", func() (bool, string) {
		firing := prom.firing(ctx)
		never(firing)
		n := 0
		for _, a := range firing {
			if want[a] {
				n++
			}
		}
		heldAfter = time.Since(killed)
		return n == 2, fmt.Sprint(firing)
	})
	waitFor(ctx, t, "RedlockMajorityAtRisk", func() (bool, string) {
		firing := prom.firing(ctx)
		never(firing)
		atRiskAfter = time.Since(killed)
		return slices.Contains(firing, "RedlockMajorityAtRisk"), fmt.Sprint(firing)
	})
	waitFor(ctx, t, "every alert clears once the masters serve again", func() (bool, string) {
		firing := prom.firing(ctx)
		never(firing)
		firing = withoutDiskAlerts(firing)
		return len(firing) == 0, fmt.Sprint(firing)
	})
	t.Logf("kill -9 of two of five masters (restart delay %v): RedlockMasterHeld firing after %v, RedlockMajorityAtRisk after %v, all clear after %v",
		d.restartDelay, heldAfter.Round(time.Millisecond), atRiskAfter.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
}

// promAPI talks to a Prometheus server's HTTP API (through a lab client's namespace when
// the client's transport dials there).
type promAPI struct {
	base string
	http *http.Client
}

// getJSON GETs an API path into v; false while Prometheus does not answer yet.
func (p promAPI) getJSON(ctx context.Context, path string, v any) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	resp, err := p.http.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

// query returns the value of a one-sample instant query, or "" when there is none.
func (p promAPI) query(ctx context.Context, expr string) string {
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if !p.getJSON(ctx, "/api/v1/query?query="+url.QueryEscape(expr), &r) || len(r.Data.Result) != 1 {
		return ""
	}
	return fmt.Sprint(r.Data.Result[0].Value[1])
}

// withoutDiskAlerts is firing without RedlockFsyncSlow: on one machine the five masters
// share the disk of a test run that loads it, and one real fsync above 50 ms fires that
// alert for the next 5 minutes (its rule is proven by the promtool tests in monitoring/).
// It says how the disk was, not whether the masters serve.
func withoutDiskAlerts(firing []string) []string { return withoutAlert(firing, "RedlockFsyncSlow") }

// withoutAlert is firing without the alerts named name.
func withoutAlert(firing []string, name string) []string {
	var kept []string
	for _, f := range firing {
		if !strings.HasPrefix(f, name+" ") && f != name {
			kept = append(kept, f)
		}
	}
	return kept
}

// firing lists the firing alerts as "Name master=x" (or "Name" without a master), sorted.
func (p promAPI) firing(ctx context.Context) []string {
	var r struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string `json:"labels"`
				State  string            `json:"state"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if !p.getJSON(ctx, "/api/v1/alerts", &r) {
		return nil
	}
	var out []string
	for _, a := range r.Data.Alerts {
		if a.State != "firing" {
			continue
		}
		s := a.Labels["alertname"]
		if m := a.Labels["master"]; m != "" {
			s += " master=" + m
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// waitFor polls cond every 200 ms until it holds, failing the test with its last report
// when ctx ends.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	for {
		ok, last := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: never happened; last: %s", what, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
