package test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gruntwork-io/terratest/modules/terraform"
)

// The main job, as a platform team runs it: apply, read the outputs, validate, and find
// that a second plan has nothing to do. Destroy (in cleanup) must leave nothing behind.
func TestLocalFiveDeployValidateIdempotent(t *testing.T) {
	t.Parallel()
	d := deployLocalFive(t, "5s")

	t.Run("outputs", func(t *testing.T) {
		if len(d.endpoints) != 5 {
			t.Fatalf("endpoints = %v, want 5", d.endpoints)
		}
		if q := terraform.Output(t, d.opts, "quorum"); q != "3" {
			t.Errorf("quorum = %s, want 3", q)
		}
		for _, name := range []string{"pids", "supervisor_pids", "data_dirs"} {
			if got := terraform.OutputList(t, d.opts, name); len(got) != 5 {
				t.Errorf("%s = %v, want 5 entries", name, got)
			}
		}
		for i, pid := range terraform.OutputList(t, d.opts, "pids") {
			p, _ := strconv.Atoi(pid)
			if !processOf(p, d.dataRoot) {
				t.Errorf("master %d: pid %s from outputs is not a running redis-server of this deployment", i, pid)
			}
		}
		if d.maxLockTTL.Milliseconds() != 5000 {
			t.Errorf("max_lock_ttl_ms = %d, want 5000", d.maxLockTTL.Milliseconds())
		}
		if d.restartDelay <= d.maxLockTTL {
			t.Errorf("restart_delay_ms %d must exceed max_lock_ttl_ms %d", d.restartDelay.Milliseconds(), d.maxLockTTL.Milliseconds())
		}
		if d.lockUser == "" || d.lockUser == "default" || len(d.lockPassword) < 32 {
			t.Errorf("lock credentials: user %q, password of %d chars", d.lockUser, len(d.lockPassword))
		}
	})

	t.Run("lock user is restricted", func(t *testing.T) {
		for i, c := range d.lockClients(t) {
			if err := c.ConfigGet(t.Context(), "requirepass").Err(); err == nil {
				t.Errorf("master %d: the lock user may run CONFIG GET", i)
			}
		}
	})

	t.Run("lockagent validate passes", func(t *testing.T) {
		out, err := d.validate(t)
		if err != nil {
			t.Fatalf("lockagent validate: %v\n%s", err, out)
		}
		if !strings.Contains(out, "SAFE") {
			t.Errorf("validate report has no SAFE verdict:\n%s", out)
		}
	})

	t.Run("client config holds the lock user only and runs a command under a lock", func(t *testing.T) {
		raw := secretOutput(t, d.opts, "client_config")
		var cfg map[string]any
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			t.Fatalf("client_config is not JSON: %v", err)
		}
		for _, secret := range []string{"admin_password", "admin_username"} {
			if _, ok := cfg[secret]; ok {
				t.Errorf("client_config carries %s; application hosts must get the lock user only", secret)
			}
		}
		path := filepath.Join(t.TempDir(), "client.json")
		if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(lockagentBin, "run", "-c", path, "--key", "e2e:client-config", "--ttl", "5s", "--",
			"sh", "-c", `test -n "$LOCKAGENT_FENCE"`).CombinedOutput()
		if err != nil {
			t.Fatalf("lockagent run -c client.json: %v\n%s", err, out)
		}
	})

	t.Run("second plan is empty", func(t *testing.T) {
		if code := terraform.PlanExitCode(t, d.opts); code != 0 {
			t.Fatalf("terraform plan -detailed-exitcode = %d after apply, want 0 (no changes)", code)
		}
	})
}
