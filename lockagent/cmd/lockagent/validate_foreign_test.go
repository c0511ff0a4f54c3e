package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// TestValidateNamesForeignLocks: beside the kit's tenant, an allow_eval tenant (other
// Redlock clients) takes a lock of an hour. validate is SAFE before (its metrics file
// says 0 for that user on every master) and UNSAFE after, naming the key and the user,
// with the metrics file saying 1.
func TestValidateNamesForeignLocks(t *testing.T) {
	validateEnv(t)
	users := []redisconf.LockUser{
		{Name: "billing", Password: "billing-secret-0123456789", KeyPrefix: "billing:"},
		{Name: "orders", Password: "orders-secret-0123456789", KeyPrefix: "orders:", AllowEval: true},
	}
	c := redistest.StartKit(t, redistest.Options{Masters: 3, LockUsers: users})
	config := writeAgentConfig(t, c, func(cfg map[string]any) {
		cfg["username"], cfg["password"], cfg["key_prefix"] = users[0].Name, users[0].Password, users[0].KeyPrefix
	})
	metrics := filepath.Join(t.TempDir(), "redlock-audit.prom")
	validate := func(wantCode int) (stdout, metricsText string) {
		t.Helper()
		code, out, errOut := runValidateCmd(t, append([]string{"-c", config, "--metrics-file", metrics}, quick...)...)
		if code != wantCode {
			t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, wantCode, out, errOut)
		}
		b, err := os.ReadFile(metrics)
		if err != nil {
			t.Fatalf("--metrics-file: %v", err)
		}
		return out, string(b)
	}
	metricLine := func(addr string, n int) string {
		return fmt.Sprintf("redlock_audit_foreign_locks_unbounded{endpoint=%q,user=\"orders\"} %d\n", addr, n)
	}

	_, text := validate(validation.ExitSafe)
	for _, m := range c.Masters {
		if !strings.Contains(text, metricLine(m.Addr, 0)) {
			t.Errorf("metrics of a deployment without foreign locks lack %q:\n%s", metricLine(m.Addr, 0), text)
		}
	}

	for _, m := range c.Masters {
		r := m.ClientAs(users[1].Name, users[1].Password)
		err := r.SetNX(context.Background(), "orders:nightly", "node-redlock-token", time.Hour).Err()
		r.Close()
		if err != nil {
			t.Fatalf("SET NX PX 3600000 as orders on %s: %v", m.Addr, err)
		}
	}
	out, text := validate(validation.ExitUnsafe)
	for _, m := range c.Masters {
		if !strings.Contains(text, metricLine(m.Addr, 1)) {
			t.Errorf("metrics lack %q:\n%s", metricLine(m.Addr, 1), text)
		}
	}
	if !strings.Contains(out, `"orders:nightly" (user orders, PTTL`) {
		t.Errorf("the report does not name the key and the user:\n%s", out)
	}
	t.Logf("validate's report:\n%s", out)
}
