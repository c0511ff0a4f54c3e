package test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/terraform"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestLocalFiveTLS: examples/local-five with tls = true. The five masters serve TLS only,
// `lockagent validate` with the module's agent config (which carries the CA) says SAFE, the
// client config carries the CA and no private key, a plain-text client is refused, a
// second plan is empty, and destroy (in cleanup, over TLS) leaves nothing running.
func TestLocalFiveTLS(t *testing.T) {
	t.Parallel()
	d := deployLocalFiveVars(t, "5s", map[string]interface{}{"tls": true})

	t.Run("lockagent validate says SAFE over TLS", func(t *testing.T) {
		out, err := d.validate(t)
		if err != nil || !strings.Contains(out, "VERDICT: SAFE") {
			t.Fatalf("lockagent validate: %v\n%s", err, out)
		}
	})

	t.Run("client config carries the CA, no private key, and locks over TLS", func(t *testing.T) {
		raw := secretOutput(t, d.opts, "client_config")
		ca := terraform.Output(t, d.opts, "ca_cert_pem")
		if !strings.HasPrefix(ca, "-----BEGIN CERTIFICATE-----") || !strings.Contains(raw, `"tls":true`) {
			t.Fatalf("ca_cert_pem %.40q, client_config without tls = true", ca)
		}
		if strings.Contains(raw, "PRIVATE KEY") || strings.Contains(secretOutput(t, d.opts, "agent_config"), "PRIVATE KEY") {
			t.Fatal("a client config carries a private key")
		}
		path := filepath.Join(t.TempDir(), "client.json")
		if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(lockagentBin, "run", "-c", path, "--key", "e2e:tls", "--ttl", "5s", "--", "true").CombinedOutput()
		if err != nil {
			t.Fatalf("lockagent run -c client.json over TLS: %v\n%s", err, out)
		}
	})

	t.Run("a plain-text client is refused", func(t *testing.T) {
		for i, ep := range d.endpoints {
			c := redis.NewClient(&redis.Options{Addr: ep, Username: d.lockUser, Password: d.lockPassword,
				DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
			err := c.Ping(context.Background()).Err()
			_ = c.Close()
			if !redistest.IsPlainTextRefused(err) {
				t.Errorf("plain-text PING to master %d (%s): %v, want the connection closed (EOF or reset)", i, ep, err)
			}
		}
	})

	t.Run("second plan is empty", func(t *testing.T) {
		if code := terraform.PlanExitCode(t, d.opts); code != 0 {
			t.Fatalf("terraform plan -detailed-exitcode = %d after apply, want 0 (no changes)", code)
		}
	})
}
