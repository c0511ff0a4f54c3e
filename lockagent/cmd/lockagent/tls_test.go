package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// TestTLSDeployment: against TLS-only masters, validate is SAFE with the deployment's CA
// inline in agent.json or given with --cacert, run locks over TLS, and a plain-text client
// reaches no master.
func TestTLSDeployment(t *testing.T) {
	validateEnv(t)
	c := redistest.StartKit(t, redistest.Options{Masters: 5, TLS: true})
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, []byte(c.CACertPEM), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("validate with the CA in agent.json", func(t *testing.T) {
		cfg := writeAgentConfig(t, c, func(m map[string]any) { m["tls"], m["ca_cert_pem"] = true, c.CACertPEM })
		code, out, errOut := runValidateCmd(t, append([]string{"-c", cfg}, quick...)...)
		if code != validation.ExitSafe || !strings.Contains(out, "VERDICT: SAFE") {
			t.Fatalf("exit %d, want SAFE\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		// Each master's line gives its certificate's expiry (what an operator checks after a rotation).
		if n := strings.Count(out, "tls cert until "); n != 5 {
			t.Errorf("%d master lines give their certificate's expiry, want 5:\n%s", n, out)
		}
	})
	t.Run("validate --cacert", func(t *testing.T) {
		code, out, errOut := runValidateCmd(t, append([]string{"-c", writeAgentConfig(t, c, nil), "--cacert", caFile}, quick...)...)
		if code != validation.ExitSafe || !strings.Contains(out, "VERDICT: SAFE") {
			t.Fatalf("exit %d, want SAFE\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
	})
	t.Run("validate without TLS reaches no master", func(t *testing.T) {
		code, out, errOut := runValidateCmd(t, append([]string{"-c", writeAgentConfig(t, c, nil)}, quick...)...)
		if code == validation.ExitSafe || !strings.Contains(out, "EOF") {
			t.Fatalf("exit %d, want not SAFE with the masters closing the plain-text connections (EOF)\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		if strings.Contains(out, "tls cert until ") {
			t.Errorf("a certificate expiry without a TLS connection:\n%s", out)
		}
	})
	t.Run("validate refuses a CA without tls", func(t *testing.T) {
		cfg := writeAgentConfig(t, c, func(m map[string]any) { m["ca_cert_pem"] = c.CACertPEM })
		code, _, errOut := runValidateCmd(t, "-c", cfg)
		if code != validation.ExitUsage || !strings.Contains(errOut, "tls: a CA certificate is given") {
			t.Fatalf("exit %d, want a usage error naming tls\nstderr:\n%s", code, errOut)
		}
	})
	t.Run("run --cacert", func(t *testing.T) {
		code, _, stderr := runAgent(t, clusterEnv(c), args([]string{"run", "--cacert", caFile, "--key", "tls-key", "--ttl", "10s"}, sh("exit 0"))...)
		if code != 0 {
			t.Fatalf("run over TLS exited %d; stderr:\n%s", code, stderr)
		}
		if n := keyCopies(t, c, "tls-key"); n != 0 {
			t.Errorf("lock left on %d masters after the command ended", n)
		}
	})
	t.Run("run LOCKAGENT_CACERT", func(t *testing.T) {
		env := append(clusterEnv(c), "LOCKAGENT_CACERT="+caFile)
		code, _, stderr := runAgent(t, env, args([]string{"run", "--key", "tls-key-env", "--ttl", "10s"}, sh("exit 0"))...)
		if code != 0 {
			t.Fatalf("run over TLS exited %d; stderr:\n%s", code, stderr)
		}
	})
}
