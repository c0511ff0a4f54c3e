package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gruntwork-io/terratest/modules/terraform"
)

// Unsafe or wrong inputs to the module fail at plan time with a message that names the
// fix; nothing is created.
func TestModuleRefusesUnsafeInputs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		inputs string
		want   string
	}{
		{"even number of masters", `masters = 4`, `masters must be an odd whole number >= 3`},
		{"single master", `masters = 1`, `masters must be an odd whole number >= 3`},
		{"duplicated ports", `masters = 3
  bind_addresses = ["127.0.0.1"]
  ports = [PORT, PORT, PORT + 1]`, `Two masters would listen on the same address and port`},
		{"zero max_lock_ttl", `max_lock_ttl = "0s"`, `max_lock_ttl must be a positive duration`},
		{"server binary missing", `server_binary = "/nonexistent/redis-server"`, `was not found on PATH or is not executable: install it or give its full path`},
		{"ports count mismatch", `masters = 3
  ports = [PORT]`, `ports has 1 entries but masters = 3`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := copyTree(t, "modules/redlock-cluster")
			dir := filepath.Join(root, "root")
			_, port := uniqueLoopback(t)
			inputs := strings.ReplaceAll(tc.inputs, "PORT", fmt.Sprint(port))
			config := fmt.Sprintf(`module "cluster" {
  source    = "../modules/redlock-cluster"
  data_root = %q
  base_port = %d
  %s
}
`, filepath.Join(root, "data"), port, inputs)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			opts := terraformOptions(dir, nil)
			out, err := terraform.InitAndPlanE(t, opts)
			if err == nil {
				t.Fatalf("plan succeeded, want an error containing %q:\n%s", tc.want, out)
			}
			if !strings.Contains(collapse(out+err.Error()), tc.want) {
				t.Fatalf("error does not name the fix %q:\n%s\n%v", tc.want, out, err)
			}
			if entries, _ := os.ReadDir(filepath.Join(root, "data")); len(entries) > 0 {
				t.Fatalf("a refused plan created %d data dirs", len(entries))
			}
		})
	}
}

// collapse joins terraform's wrapped error lines ("│ ...") so a message can be matched whole.
func collapse(s string) string {
	s = strings.ReplaceAll(s, "│", " ")
	return strings.Join(strings.Fields(s), " ")
}
