package monitoring

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"go.yaml.in/yaml/v3"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/exportertest"
	"github.com/redlock-kit/redlock-kit/internal/hostconfig"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
	"github.com/redlock-kit/redlock-kit/lockagent/redlockprom"
)

// madeElsewhere are metrics the rules use that no kit component exports: Prometheus's own
// up, and the blackbox exporter's TLS probe (an alternative source of certificate expiry).
var madeElsewhere = map[string]bool{"up": true, "probe_ssl_earliest_cert_expiry": true}

// metricName matches the series names the rules select: exporters' and the kit's, not
// recording rules (they contain ':') nor functions or labels.
var metricName = regexp.MustCompile(`\b(?:redis|node|redlock|probe)_[a-zA-Z0-9_]*\b|\bup\b`)

// ruleMetrics returns every metric name the expressions of the rules file use.
func ruleMetrics(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Groups []struct {
			Rules []struct {
				Expr string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var exprs []string
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, r.Expr)
		}
	}
	return namesIn(exprs)
}

// namesIn returns the metric names used in exprs, sorted, without duplicates.
func namesIn(exprs []string) []string {
	seen := map[string]bool{}
	for _, e := range exprs {
		// Label matchers ({job="x"}) and strings hold no metric name.
		e = regexp.MustCompile(`"[^"]*"`).ReplaceAllString(e, `""`)
		for _, n := range metricName.FindAllString(e, -1) {
			seen[n] = true
		}
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// missing returns the names no source exports. A histogram's _bucket, _sum and _count series
// belong to its family.
func missing(names []string, exported map[string]bool) []string {
	var out []string
	for _, n := range names {
		family := regexp.MustCompile(`_(bucket|sum|count)$`).ReplaceAllString(n, "")
		if !exported[n] && !exported[family] && !madeElsewhere[n] {
			out = append(out, n)
		}
	}
	return out
}

// value is the value of the family's series whose labels include want ("" for any).
func value(fam *dto.MetricFamily, want map[string]string) (float64, bool) {
	if fam == nil {
		return 0, false
	}
next:
	for _, m := range fam.GetMetric() {
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
		return 0, true
	}
	return 0, false
}

// exportedMetrics gathers every metric name the kit's deployment exports, from real
// processes: redis_exporter logged in as the monitoring user with the hosts' flags,
// node_exporter reading the host's state file, and redlockprom's registry.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	redisExporter := exportertest.Binary(t, "prometheus-redis-exporter")
	nodeExporter := exportertest.Binary(t, "prometheus-node-exporter")
	c := redistest.Start(t, redistest.Options{Masters: 1, Monitor: true})
	m := c.Masters[0]
	ctx := context.Background()
	admin := m.Admin()
	// A slow command (over latency-monitor-threshold) and an OOM refusal, so that the series
	// that only exist after such events are in the scrape. The busy loop takes as long as the
	// machine makes it: its client waits for the reply as long as it takes (the admin
	// client's read timeout is for replies that are quick on any machine).
	slowOpts := *admin.Options()
	slowOpts.ReadTimeout, slowOpts.MaxRetries = -1, -1
	slow := redis.NewClient(&slowOpts)
	defer slow.Close()
	if err := slow.Eval(ctx, "local i = 0 while i < 20000000 do i = i + 1 end return i", nil).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Set(ctx, "oom", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM") {
		t.Fatalf("SET at maxmemory 1: %v, want OOM", err)
	}
	if err := admin.ConfigSet(ctx, "maxmemory", "64mb").Err(); err != nil {
		t.Fatal(err)
	}

	env := []string{"REDIS_ADDR=redis://" + m.Addr, "REDIS_USER=" + redistest.MonitorUser, "REDIS_PASSWORD=" + redistest.MonitorPassword}
	redisFams := exportertest.Scrape(t, exportertest.MetricsURL(exportertest.Start(t, redisExporter, "-web.listen-address", env, hostconfig.RedisExporterArgs("")...)))
	if v, ok := value(redisFams["redis_up"], nil); !ok || v != 1 {
		t.Fatalf("redis_exporter as the monitoring user: redis_up = %v (present %v), want 1", v, ok)
	}
	if v, ok := value(redisFams["redis_errors_total"], map[string]string{"err": "NOPERM"}); ok {
		t.Errorf("redis_exporter with the hosts' flags made %v NOPERM errors on the master: it runs a command the monitoring user may not", v)
	}
	for _, want := range []struct {
		family string
		labels map[string]string
	}{
		{"redis_instance_info", map[string]string{"maxmemory_policy": "noeviction", "role": "master"}},
		{"redis_latency_spike_duration_seconds", map[string]string{"event_name": "command"}},
		{"redis_latency_spike_last", map[string]string{"event_name": "command"}},
		{"redis_errors_total", map[string]string{"err": "OOM"}},
	} {
		if _, ok := value(redisFams[want.family], want.labels); !ok {
			t.Errorf("redis_exporter: no %s%v, which the rules select", want.family, want.labels)
		}
	}
	// Negative control: the exporter's default flags (CLIENT SETNAME, CONFIG GET) are refused
	// to the monitoring user, and the check above sees it.
	defaults := exportertest.Scrape(t, exportertest.MetricsURL(exportertest.Start(t, redisExporter, "-web.listen-address", env)))
	if _, ok := value(defaults["redis_errors_total"], map[string]string{"err": "NOPERM"}); !ok {
		t.Error("control: redis_exporter with its default flags made no NOPERM error: the check above cannot fail")
	}

	textfiles := t.TempDir()
	contract, err := os.ReadFile("testdata/redlock.prom")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(textfiles, "redlock.prom"), contract, 0o644); err != nil {
		t.Fatal(err)
	}
	writeAuditMetrics(t, c, filepath.Join(textfiles, "redlock-audit.prom"))
	nodeFams := exportertest.Scrape(t, exportertest.MetricsURL(exportertest.Start(t, nodeExporter, "--web.listen-address", nil,
		"--collector.textfile.directory="+textfiles)))
	if _, ok := value(nodeFams["redlock_audit_foreign_locks_unbounded"], map[string]string{"endpoint": m.Addr, "user": redistest.EvalUser}); !ok {
		t.Error("node_exporter: no redlock_audit_foreign_locks_unbounded for the EVAL user from lockagent validate's metrics file")
	}
	if v, ok := value(nodeFams["node_textfile_scrape_error"], nil); !ok || v != 0 {
		t.Errorf("node_exporter: node_textfile_scrape_error = %v (present %v): it does not accept the host's state file", v, ok)
	}
	if _, ok := value(nodeFams["node_textfile_mtime_seconds"], map[string]string{"file": filepath.Join(textfiles, "redlock.prom")}); !ok {
		t.Error("node_exporter: no node_textfile_mtime_seconds for redlock.prom")
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	contractFams, err := parser.TextToMetricFamilies(strings.NewReader(string(contract)))
	if err != nil {
		t.Fatal(err)
	}
	for name := range contractFams {
		if _, ok := nodeFams[name]; !ok {
			t.Errorf("node_exporter does not publish %s from the host's state file", name)
		}
	}

	reg := prometheus.NewRegistry()
	metrics, err := redlockprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	metrics.Operation(redlock.OperationEvent{Op: redlock.OpAcquire, Attempts: 1, Validity: time.Second})
	metrics.MasterReply(redlock.MasterEvent{Op: redlock.OpAcquire, Addr: m.Addr, Vote: true})
	clientFams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}

	exported := map[string]bool{}
	for _, fams := range []map[string]*dto.MetricFamily{redisFams, nodeFams} {
		for name := range fams {
			exported[name] = true
		}
	}
	for _, f := range clientFams {
		exported[f.GetName()] = true
	}
	return exported
}

// TestNamedMetricsExist: every metric the rules and the dashboard select is exported by the
// deployment, with the labels the rules match on; a name nothing exports is reported (the
// control).
func TestNamedMetricsExist(t *testing.T) {
	exported := exportedMetrics(t)
	for _, tc := range []struct {
		source string
		names  []string
	}{
		{"redlock.rules.yml", ruleMetrics(t, "redlock.rules.yml")},
		{"redlock.dashboard.json", namesIn(dashboardExprs(t))},
	} {
		t.Run(tc.source, func(t *testing.T) {
			if len(tc.names) < 5 {
				t.Fatalf("found only %d metric names: %v", len(tc.names), tc.names)
			}
			if gone := missing(tc.names, exported); len(gone) > 0 {
				t.Errorf("%s uses metrics nothing exports: %v", tc.source, gone)
			}
			t.Logf("%d metric names, all exported: %s", len(tc.names), strings.Join(tc.names, " "))
		})
	}
	if gone := missing([]string{"redis_up", "redis_not_a_metric"}, exported); fmt.Sprint(gone) != "[redis_not_a_metric]" {
		t.Errorf("control: missing(...) = %v, want [redis_not_a_metric]", gone)
	}
}

// TestRedisExporterOverTLS: with TLS the hosts' exporter reaches a TLS-only master with
// rediss:// and the deployment's CA (hostconfig's flags); without the CA it cannot (the
// control: the server's certificate is verified).
func TestRedisExporterOverTLS(t *testing.T) {
	redisExporter := exportertest.Binary(t, "prometheus-redis-exporter")
	c := redistest.Start(t, redistest.Options{Masters: 1, Monitor: true, TLS: true})
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, []byte(c.CACertPEM), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"REDIS_ADDR=rediss://" + c.Masters[0].Addr, "REDIS_USER=" + redistest.MonitorUser,
		"REDIS_PASSWORD=" + redistest.MonitorPassword}
	for _, tc := range []struct {
		name string
		args []string
		up   float64
	}{
		{"with the CA", hostconfig.RedisExporterArgs(caFile), 1},
		{"without the CA", hostconfig.RedisExporterArgs(""), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fams := exportertest.Scrape(t, exportertest.MetricsURL(exportertest.Start(t, redisExporter, "-web.listen-address", env, tc.args...)))
			if v, _ := value(fams["redis_up"], nil); v != tc.up {
				t.Errorf("redis_up = %v, want %v", v, tc.up)
			}
		})
	}
}

// writeAuditMetrics audits c as `lockagent validate` does and writes its foreign-lock
// metrics (what `validate --metrics-file` writes) to path.
func writeAuditMetrics(t *testing.T, c *redistest.Cluster, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := audit.Run(ctx, audit.Target{Endpoints: c.Addrs(), Username: "default", Password: redistest.AdminPassword,
		MaxLockTTL: 10 * time.Second, ClockInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteForeignLockMetrics(&b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
