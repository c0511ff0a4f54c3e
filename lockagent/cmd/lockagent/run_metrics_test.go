package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestRunMetricsFile: --metrics-file leaves the library's metrics of the run in the
// Prometheus text format: one acquisition and one release, both ok, and each master's votes.
func TestRunMetricsFile(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	path := filepath.Join(t.TempDir(), "lockagent.prom")
	code, _, stderr := runAgent(t, clusterEnv(cluster),
		args([]string{"run", "--key", "metrics-key", "--ttl", "10s", "--metrics-file", path}, sh("exit 0"))...)
	if code != 0 {
		t.Fatalf("run exited %d; stderr:\n%s", code, stderr)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s is not valid Prometheus text format: %v", path, err)
	}
	ops := map[string]float64{}
	for _, m := range families["redlock_operations_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		ops[labels["op"]+"/"+labels["result"]] += m.GetCounter().GetValue()
	}
	if ops["acquire/ok"] != 1 || ops["release/ok"] != 1 {
		t.Errorf("redlock_operations_total %v: want acquire/ok 1 and release/ok 1", ops)
	}
	// A round returns at its majority and a SET still queued for the last master then is
	// dropped, so only a majority is sure to have answered: count votes, not masters.
	masters, votes := map[string]bool{}, 0.0
	for _, m := range families["redlock_master_replies_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		masters[labels["master"]] = true
		if labels["op"] == "acquire" && labels["result"] == "vote" {
			votes += m.GetCounter().GetValue()
		}
	}
	if len(masters) < 2 || votes < 2 {
		t.Errorf("redlock_master_replies_total covers masters %v with %v acquire votes, want a majority of 3", masters, votes)
	}
}
