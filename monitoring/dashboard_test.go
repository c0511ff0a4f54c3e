package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/exportertest"
)

// grafanaVariables are replaced by values Prometheus accepts before an expression is parsed.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "1m", "$cluster", ".*")

// dashboardExprs returns every query of the dashboard's panels, Grafana variables replaced.
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("redlock.dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("redlock.dashboard.json: %v", err)
	}
	var exprs []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			exprs = append(exprs, grafanaVariables.Replace(tg.Expr))
		}
	}
	return exprs
}

// checkExprs has promtool parse exprs, as recording rules of a scratch rules file.
func checkExprs(t *testing.T, promtool string, exprs []string) error {
	t.Helper()
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range exprs {
		q, _ := json.Marshal(e) // a JSON string is a YAML string
		fmt.Fprintf(&b, "      - record: dashboard:query_%d\n        expr: %s\n", i, q)
	}
	path := filepath.Join(t.TempDir(), "dashboard.rules.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "check", "rules", path).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// TestDashboardQueriesParse: promtool parses every query of the dashboard, and every
// recording rule a query reads is defined in redlock.rules.yml. A query with a syntax error
// fails the same check (the control).
func TestDashboardQueriesParse(t *testing.T) {
	promtool := exportertest.Binary(t, "promtool")
	exprs := dashboardExprs(t)
	if err := checkExprs(t, promtool, exprs); err != nil {
		t.Errorf("promtool refuses a dashboard query: %v", err)
	}
	if err := checkExprs(t, promtool, append(exprs, `sum(rate(redis_up[1m])`)); err == nil {
		t.Error("control: promtool accepted an unbalanced query")
	}
	rules, err := os.ReadFile("redlock.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s*- record: (\S+)`).FindAllStringSubmatch(string(rules), -1) {
		recorded[m[1]] = true
	}
	for _, e := range exprs {
		for _, name := range regexp.MustCompile(`\bredlock:[a-z0-9_:]+`).FindAllString(e, -1) {
			if !recorded[name] {
				t.Errorf("the dashboard reads %s, which redlock.rules.yml does not record", name)
			}
		}
	}
	t.Logf("%d dashboard queries parse", len(exprs))
}
