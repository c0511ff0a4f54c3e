package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// validateEnv clears LOCKAGENT_* so the machine's environment cannot change a test.
func validateEnv(t *testing.T) {
	for _, v := range []string{"ENDPOINTS", "USERNAME", "PASSWORD", "ADMIN_USERNAME", "ADMIN_PASSWORD", "TLS", "CACERT", "MAX_LOCK_TTL", "RESTART_DELAY"} {
		t.Setenv("LOCKAGENT_"+v, "")
	}
}

// writeAgentConfig writes the agent.json the redlock-cluster module would for c.
func writeAgentConfig(t *testing.T, c *redistest.Cluster, edit func(map[string]any)) string {
	t.Helper()
	cfg := map[string]any{
		"endpoints": c.Addrs(), "username": redistest.LockUser, "password": redistest.LockPassword,
		"admin_username": "default", "admin_password": redistest.AdminPassword,
		"max_lock_ttl": "10s", "restart_delay": "11s", "quorum": len(c.Masters)/2 + 1,
	}
	if edit != nil {
		edit(cfg)
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agent.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// quick keeps the phases short: the suite checks behaviour, not endurance. The node timeout
// replaces the one derived from the 10s TTL (50ms): the tests share a busy machine whose
// fsyncs outlast it, and a verdict of INCONCLUSIVE because a healthy master answered late
// is not what they are about (the paused-masters tests stop masters for good).
var quick = []string{"--clients", "4", "--duration", "1s", "--clock-interval", "200ms", "--node-timeout", "250ms"}

func runValidateCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runValidateHooked(t, nil, args...)
}

// runValidateHooked runs validate in-process with hook called at its named points
// (validateHook).
func runValidateHooked(t *testing.T, hook func(point string), args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if hook != nil {
		ctx = context.WithValue(ctx, validateHookKey{}, hook)
	}
	var out, errOut bytes.Buffer
	code = lockagent(ctx, append([]string{"validate"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestValidateSafeDeployment(t *testing.T) {
	validateEnv(t)
	c := redistest.StartKit(t, redistest.Options{Masters: 5})
	code, out, errOut := runValidateCmd(t, append([]string{"-c", writeAgentConfig(t, c, nil)}, quick...)...)
	if code != validation.ExitSafe {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	t.Logf("report:\n%s", out)
	for _, want := range []string{"[1/4] Audit", "audit: no problems", "[2/4] Redlock behaviour", "[3/4] Contention",
		"violations 0", "VERDICT: SAFE"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	for _, check := range []string{"acquire", "exclusion", "release", "expiry", "owner-only release", "extend", "fencing"} {
		if !strings.Contains(out, "ok   "+check) {
			t.Errorf("behaviour check %q not reported ok:\n%s", check, out)
		}
	}
	for _, m := range c.Masters {
		if !strings.Contains(out, m.Addr) {
			t.Errorf("report does not list master %s", m.Addr)
		}
	}
	assertNoValidateKeys(t, c)
}

func TestValidateJSON(t *testing.T) {
	validateEnv(t)
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	code, out, errOut := runValidateCmd(t, append([]string{"-c", writeAgentConfig(t, c, nil), "--json"}, quick...)...)
	if code != validation.ExitSafe {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	var doc struct {
		Verdict  string   `json:"verdict"`
		Safe     bool     `json:"safe"`
		Problems []string `json:"problems"`
		Audit    struct {
			Quorum  int `json:"quorum"`
			Masters []struct {
				Endpoint    string  `json:"endpoint"`
				AppendFsync string  `json:"appendfsync"`
				RTTMS       float64 `json:"rtt_ms"`
			} `json:"masters"`
		} `json:"audit"`
		Behaviour []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"behaviour"`
		Contention struct {
			Clients      int     `json:"clients"`
			Acquisitions int     `json:"acquisitions"`
			Violations   int     `json:"violations"`
			P50          float64 `json:"latency_p50_ms"`
			P99          float64 `json:"latency_p99_ms"`
		} `json:"contention"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	if doc.Verdict != "SAFE" || !doc.Safe || len(doc.Problems) != 0 {
		t.Errorf("verdict %q safe %v problems %q", doc.Verdict, doc.Safe, doc.Problems)
	}
	if doc.Audit.Quorum != 2 || len(doc.Audit.Masters) != 3 || doc.Audit.Masters[0].AppendFsync != "always" || doc.Audit.Masters[0].RTTMS <= 0 {
		t.Errorf("audit section: %+v", doc.Audit)
	}
	if len(doc.Behaviour) != 7 {
		t.Errorf("want 7 behaviour checks, got %+v", doc.Behaviour)
	}
	for _, b := range doc.Behaviour {
		if !b.OK {
			t.Errorf("behaviour check %s failed", b.Name)
		}
	}
	if doc.Contention.Clients != 4 || doc.Contention.Acquisitions == 0 || doc.Contention.Violations != 0 || doc.Contention.P99 < doc.Contention.P50 {
		t.Errorf("contention section: %+v", doc.Contention)
	}
	if !strings.Contains(errOut, "[1/4] Audit") {
		t.Errorf("progress did not go to stderr with --json:\n%s", errOut)
	}
	assertNoValidateKeys(t, c)
}

// TestValidateUnsafe breaks one thing per subtest and expects exit 1 with the reason.
func TestValidateUnsafe(t *testing.T) {
	validateEnv(t)
	tests := []struct {
		name string
		// breakIt returns extra args and the substrings the UNSAFE report must contain.
		breakIt func(t *testing.T, c *redistest.Cluster) (args []string, want []string)
	}{
		{"appendfsync everysec on one master", func(t *testing.T, c *redistest.Cluster) ([]string, []string) {
			if err := c.Masters[0].Admin().ConfigSet(context.Background(), "appendfsync", "everysec").Err(); err != nil {
				t.Fatal(err)
			}
			return nil, []string{c.Masters[0].Addr, "appendfsync everysec"}
		}},
		{"restart delay shorter than the max TTL", func(t *testing.T, c *redistest.Cluster) ([]string, []string) {
			return []string{"--restart-delay", "2s"}, []string{"restart delay 2s is shorter than the max lock TTL 10s"}
		}},
		{"one master is a replica of another", func(t *testing.T, c *redistest.Cluster) ([]string, []string) {
			ctx := context.Background()
			r, p := c.Masters[0], c.Masters[1]
			if err := r.Admin().ConfigSet(ctx, "masterauth", redistest.AdminPassword).Err(); err != nil {
				t.Fatal(err)
			}
			if err := r.Admin().ReplicaOf(ctx, p.Host, fmt.Sprint(p.Port)).Err(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = r.Admin().ReplicaOf(context.Background(), "NO", "ONE").Err() })
			return nil, []string{r.Addr + " is a slave of " + p.Addr, "not an independent master"}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := redistest.StartKit(t, redistest.Options{Masters: 3})
			extra, want := tc.breakIt(t, c)
			args := append(append([]string{"-c", writeAgentConfig(t, c, nil)}, quick...), extra...)
			code, out, errOut := runValidateCmd(t, args...)
			if code != validation.ExitUnsafe {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, validation.ExitUnsafe, out, errOut)
			}
			verdict := out[strings.LastIndex(out, "VERDICT:"):]
			if !strings.HasPrefix(verdict, "VERDICT: UNSAFE") {
				t.Fatalf("no UNSAFE verdict:\n%s", out)
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// One master of three down is what Redlock survives: the verdict is SAFE (exit 0), marked
// degraded, and the report names the missing master; every Redlock phase still runs.
func TestValidateMinorityDownIsSafeButDegraded(t *testing.T) {
	validateEnv(t)
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	if err := c.Masters[2].Kill(); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runValidateCmd(t, append([]string{"-c", writeAgentConfig(t, c, nil)}, quick...)...)
	if code != validation.ExitSafe {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, validation.ExitSafe, out, errOut)
	}
	for _, want := range []string{"VERDICT: SAFE, degraded", c.Masters[2].Addr, "unreachable", "ok   fencing"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestValidateUsageErrors(t *testing.T) {
	validateEnv(t)
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	tests := []struct {
		name string
		args func() []string
		want string
	}{
		{"no endpoints", func() []string { return []string{"--max-lock-ttl", "5s"} }, "endpoints: none given"},
		{"even number of endpoints", func() []string {
			return []string{"--endpoints", strings.Join(c.Addrs()[:2], ","), "--max-lock-ttl", "5s", "--password", "x", "--admin-password", "y"}
		}, "odd number"},
		{"no max lock ttl", func() []string {
			return []string{"-c", writeAgentConfig(t, c, func(m map[string]any) { delete(m, "max_lock_ttl") })}
		}, "max_lock_ttl: not set"},
		{"no admin password", func() []string {
			return []string{"-c", writeAgentConfig(t, c, func(m map[string]any) { delete(m, "admin_password") })}
		}, "admin_password: not set"},
		{"no lock password", func() []string {
			return []string{"-c", writeAgentConfig(t, c, func(m map[string]any) { delete(m, "password") })}
		}, "password: the restricted lock user's password is not set"},
		{"quorum disagrees with endpoints", func() []string {
			return []string{"-c", writeAgentConfig(t, c, func(m map[string]any) { m["quorum"] = 3 })}
		}, "quorum: the config says 3"},
		{"one client cannot contend", func() []string {
			return []string{"-c", writeAgentConfig(t, c, nil), "--clients", "1"}
		}, "--clients 1"},
		{"unknown flag", func() []string { return []string{"--no-such-flag"} }, "no-such-flag"},
		{"stray argument", func() []string { return []string{"-c", writeAgentConfig(t, c, nil), "extra"} }, `unexpected argument "extra"`},
		{"missing config file", func() []string { return []string{"-c", filepath.Join(t.TempDir(), "none.json")} }, "none.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runValidateCmd(t, tc.args()...)
			if code != validation.ExitUsage {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, validation.ExitUsage, out, errOut)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Fatalf("stderr lacks %q:\n%s", tc.want, errOut)
			}
			if strings.Contains(out, "VERDICT") {
				t.Fatalf("a usage error printed a verdict:\n%s", out)
			}
		})
	}
}

// TestValidateEnvAndFlags: secrets from LOCKAGENT_*, endpoints from a flag, no config file.
func TestValidateEnvAndFlags(t *testing.T) {
	validateEnv(t)
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	t.Setenv("LOCKAGENT_PASSWORD", redistest.LockPassword)
	t.Setenv("LOCKAGENT_ADMIN_PASSWORD", redistest.AdminPassword)
	t.Setenv("LOCKAGENT_MAX_LOCK_TTL", "10s")
	code, out, errOut := runValidateCmd(t, append([]string{"--endpoints", strings.Join(c.Addrs(), ",")}, quick...)...)
	if code != validation.ExitSafe {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// No restart delay in the config: the one the masters publish is still read and checked.
	if !strings.Contains(out, "restart delay in the config not given") || !strings.Contains(out, "hold 11s (local-supervisor)") {
		t.Errorf("report does not say the restart delay came from the masters:\n%s", out)
	}
}

func TestValidateHelp(t *testing.T) {
	code, out, errOut := runValidateCmd(t, "--help")
	if code != validation.ExitSafe {
		t.Fatalf("exit %d, want 0", code)
	}
	help := out + errOut
	for _, want := range []string{"Exit codes:", "0   SAFE", "1   UNSAFE", "64  usage", "70  validation could not finish",
		"75  INCONCLUSIVE", "77  DENIED", "--clients", "-log-level", "LOCKAGENT_ADMIN_PASSWORD"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
}

// assertNoValidateKeys proves the run cleaned up: no redlock-kit:validate:* key is left.
func assertNoValidateKeys(t *testing.T, c *redistest.Cluster) {
	t.Helper()
	for _, m := range c.Masters {
		keys, err := m.Admin().Keys(context.Background(), "redlock-kit:validate:*").Result()
		if err != nil {
			t.Fatalf("%s: %v", m.Addr, err)
		}
		if len(keys) != 0 {
			t.Errorf("%s: validate left keys behind: %v", m.Addr, keys)
		}
	}
}

// TestValidateInterrupted: a cancelled run gives no verdict and its own exit code.
func TestValidateInterrupted(t *testing.T) {
	validateEnv(t)
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := validateMain(ctx, []string{"-c", writeAgentConfig(t, c, nil)}, &out, &errOut)
	if code != validation.ExitFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, validation.ExitFailed, out.String(), errOut.String())
	}
	if strings.Contains(out.String(), "VERDICT") || !strings.Contains(errOut.String(), "context canceled") {
		t.Fatalf("want no verdict and the reason on stderr\nstdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
}
