package supervisor

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape parses <dir>/metrics.prom with the Prometheus text parser, as an exporter does, and
// returns each metric's value for master name; it fails the test on a malformed file.
func scrape(t *testing.T, dir, name string) map[string]float64 {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, MetricsFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s is not valid Prometheus text format: %v", MetricsFileName, err)
	}
	values := map[string]float64{}
	for fname, fam := range families {
		if len(fam.GetMetric()) != 1 {
			t.Fatalf("%s: %d series, want one per master", fname, len(fam.GetMetric()))
		}
		m := fam.GetMetric()[0]
		if got := labelValue(m, "master"); got != name {
			t.Fatalf("%s: master label %q, want %q", fname, got, name)
		}
		switch fam.GetType() {
		case dto.MetricType_COUNTER:
			values[fname] = m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			values[fname] = m.GetGauge().GetValue()
		default:
			t.Fatalf("%s: type %v, want counter or gauge", fname, fam.GetType())
		}
		if m.TimestampMs != nil {
			t.Fatalf("%s has a timestamp: the textfile collector refuses those", fname)
		}
	}
	return values
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// waitMetrics scrapes until cond holds (the file follows the state file by a moment).
func (m *testMaster) waitMetrics(what string, cond func(map[string]float64) bool) map[string]float64 {
	m.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		v := scrape(m.t, m.dir, m.cfg.Name)
		if cond(v) {
			return v
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("waited for metrics: %s; %s:\n%s", what, MetricsFileName, readFile(m.t, filepath.Join(m.dir, MetricsFileName)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readFile(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A kill -9 of a supervised master shows in metrics.prom: the crash is counted, the hold is
// visible with its end, and the restart is counted once the master answers again.
func TestMetricsRecordCrashHoldAndRestart(t *testing.T) {
	t.Parallel()
	const delay = 2 * time.Second
	m := newMaster(t, delay)
	pid := m.spawn()
	st := m.waitReady(pid)

	up := m.waitMetrics("master up", func(v map[string]float64) bool { return v["redlock_master_up"] == 1 })
	for name, want := range map[string]float64{
		"redlock_master_crashes_total": 0, "redlock_master_restarts_total": 0, "redlock_master_holding": 0,
		"redlock_master_hold_until_seconds": 0, "redlock_master_last_exit_seconds": 0,
		"redlock_master_restart_delay_seconds": delay.Seconds(), "redlock_master_supervised": 1,
	} {
		if got, ok := up[name]; !ok || got != want {
			t.Errorf("before the crash: %s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if info, err := os.Stat(filepath.Join(m.dir, MetricsFileName)); err != nil {
		t.Error(err)
	} else if info.Mode().Perm() != 0o644 {
		t.Errorf("%s: mode %v, want 0644 (read by an exporter running as another user)", MetricsFileName, info.Mode())
	}

	beforeKill := time.Now()
	m.killRedis(st.RedisPID) // kill -9
	held := m.waitState("status holding", func(s State) bool { return s.Status == StatusHolding })
	during := m.waitMetrics("holding", func(v map[string]float64) bool { return v["redlock_master_holding"] == 1 })
	if during["redlock_master_crashes_total"] != 1 || during["redlock_master_up"] != 0 ||
		during["redlock_master_restarts_total"] != 0 {
		t.Errorf("during the hold: crashes %v, up %v, restarts %v; want 1, 0, 0", during["redlock_master_crashes_total"],
			during["redlock_master_up"], during["redlock_master_restarts_total"])
	}
	if until := during["redlock_master_hold_until_seconds"]; math.Abs(until-float64(held.RestartAt.UnixNano())/1e9) > 0.001 {
		t.Errorf("hold_until_seconds %v, want RestartAt %v (%v)", until, held.RestartAt, float64(held.RestartAt.UnixNano())/1e9)
	}
	if exit := during["redlock_master_last_exit_seconds"]; exit < float64(beforeKill.UnixNano())/1e9 ||
		exit > float64(held.RestartAt.UnixNano())/1e9 {
		t.Errorf("last_exit_seconds %v: want the observed exit, after the kill (%v)", exit, beforeKill)
	}

	m.waitReady(pid)
	after := m.waitMetrics("restart counted", func(v map[string]float64) bool { return v["redlock_master_restarts_total"] == 1 })
	if after["redlock_master_holding"] != 0 || after["redlock_master_up"] != 1 || after["redlock_master_crashes_total"] != 1 ||
		after["redlock_master_hold_until_seconds"] != 0 {
		t.Errorf("after the restart: %v; want holding 0, up 1, crashes 1, hold_until 0", after)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := Stop(ctx, m.dir); err != nil {
		t.Fatal(err)
	}
	stopped := scrape(t, m.dir, m.cfg.Name)
	if stopped["redlock_master_supervised"] != 0 || stopped["redlock_master_up"] != 0 ||
		stopped["redlock_master_crashes_total"] != 1 || stopped["redlock_master_restarts_total"] != 1 {
		t.Errorf("after a clean stop: %v; want supervised 0, up 0, the counters kept", stopped)
	}
}

// The text parses whatever the master's name holds, and identical HELP lines let several
// masters' files share one textfile-collector directory.
func TestMetricsTextEscapesTheName(t *testing.T) {
	name := "odd \"name\" \\ with\nnewline"
	text := metricsText(name, State{Status: StatusHolding, RestartAt: time.Unix(1700000000, 500_000_000), Crashes: 3},
		Config{RestartDelay: 1500 * time.Millisecond})
	dir := t.TempDir()
	if err := writeMetrics(dir, text); err != nil {
		t.Fatal(err)
	}
	v := scrape(t, dir, name)
	if v["redlock_master_hold_until_seconds"] != 1700000000.5 || v["redlock_master_crashes_total"] != 3 ||
		v["redlock_master_restart_delay_seconds"] != 1.5 || v["redlock_master_holding"] != 1 {
		t.Fatalf("values %v", v)
	}
	other := metricsText("other", State{}, Config{})
	helps := func(s string) (out []string) {
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "# ") {
				out = append(out, l)
			}
		}
		return out
	}
	if a, b := helps(text), helps(other); strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("HELP/TYPE lines differ between masters:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}
