package validation_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// TestConfigFromTerraform reads agent_config from a real root module's state with real
// terraform: the config comes back, a missing output (or no state: nothing applied) is
// ErrMissingOutput naming the output and saying to apply, and no error carries a password.
func TestConfigFromTerraform(t *testing.T) {
	if _, err := exec.LookPath("terraform"); err != nil {
		t.Skip("terraform is not on PATH")
	}
	dir := t.TempDir()
	const secret = "admin-secret-in-the-output"
	mainTF := `output "agent_config" {
  value     = jsonencode({ endpoints = ["127.0.0.1:7379"], username = "redlock", password = "lock-secret", admin_password = "` + secret + `", max_lock_ttl = "10s" })
  sensitive = true
}
output "not_json" {
  value     = "{\"password\": \"lock-secret\", "
  sensitive = true
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(mainTF), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := validation.ConfigFromTerraform(t.Context(), dir, "agent_config")
	if !errors.Is(err, validation.ErrMissingOutput) || !errors.Is(err, validation.ErrConfig) || !strings.Contains(err.Error(), "terraform apply") {
		t.Fatalf("before any apply: %v, want ErrMissingOutput saying to apply", err)
	}
	for _, args := range [][]string{{"init", "-input=false", "-no-color"}, {"apply", "-auto-approve", "-input=false", "-no-color"}} {
		cmd := exec.Command("terraform", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("terraform %s: %v\n%s", args[0], err, out)
		}
	}
	cfg, err := validation.ConfigFromTerraform(t.Context(), dir, "agent_config")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.AdminPassword != secret || cfg.Password != "lock-secret" || len(cfg.Endpoints) != 1 || cfg.MaxLockTTL.Duration.String() != "10s" {
		t.Fatalf("config read back wrong: endpoints %v, max_lock_ttl %v", cfg.Endpoints, cfg.MaxLockTTL)
	}
	_, err = validation.ConfigFromTerraform(t.Context(), dir, "client_cfg")
	if !errors.Is(err, validation.ErrMissingOutput) || !strings.Contains(err.Error(), "output client_cfg") {
		t.Fatalf("a missing output: %v, want ErrMissingOutput naming client_cfg", err)
	}
	_, err = validation.ConfigFromTerraform(t.Context(), dir, "not_json")
	if err == nil || !errors.Is(err, validation.ErrConfig) || strings.Contains(err.Error(), "lock-secret") {
		t.Fatalf("an output that is not the config: %v, want ErrConfig without its value", err)
	}
}

// TestParseConfigMissingOutput: what terratest's OutputE returns for an output a partial
// apply left unset ("<nil>"), or an empty or null one, is reported as a missing output.
func TestParseConfigMissingOutput(t *testing.T) {
	for _, raw := range []string{"<nil>", "", "null", " \n"} {
		_, err := validation.ParseConfig(raw)
		if !errors.Is(err, validation.ErrMissingOutput) || !errors.Is(err, validation.ErrConfig) ||
			!strings.Contains(err.Error(), "agent_config") || !strings.Contains(err.Error(), "terraform apply") {
			t.Errorf("ParseConfig(%q) = %v, want ErrMissingOutput naming agent_config and saying to apply", raw, err)
		}
	}
}
