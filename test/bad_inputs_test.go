package test

import (
	"fmt"
	"net"
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

// The hosts module refuses at plan time what would make its masters less than independent.
// Plans only: the credentials are unknown until apply, so nothing is read from the hosts.
func TestHostsModuleRefusesUnsafeInputs(t *testing.T) {
	t.Parallel()
	host := func(name, addr, extra string) string {
		return fmt.Sprintf(`{ name = %q, address = %q %s }`, name, addr, extra)
	}
	three := []string{host("a", "192.0.2.1", ""), host("b", "192.0.2.2", ""), host("c", "192.0.2.3", "")}
	cases := []struct {
		name, inputs, want string
	}{
		{"one host", `hosts = [` + three[0] + `]`, `Redlock needs an odd number of hosts, at least 3`},
		{"four hosts", `hosts = [` + strings.Join(three, ",") + `,` + host("d", "192.0.2.4", "") + `]`,
			`Redlock needs an odd number of hosts, at least 3`},
		{"duplicated address", `hosts = [` + three[0] + `,` + three[1] + `,` + host("c", "192.0.2.1", "") + `]`,
			`Two hosts share an address: 192.0.2.1 is the address of a and c.`},
		{"two masters in one failure domain", `hosts = [` + host("a", "192.0.2.1", `, failure_domain = "z1"`) + `,` +
			host("b", "192.0.2.2", `, failure_domain = "z1"`) + `,` + host("c", "192.0.2.3", `, failure_domain = "z2"`) + `]`,
			`Two masters share a failure_domain: z1 (hosts a, b).`},
		{"IPv6 address", `hosts = [` + host("a", "2001:db8::1", "") + `,` + three[1] + `,` + three[2] + `]`,
			`Not an IPv4 address: hosts[0] (a) address = "2001:db8::1".`},
		{"duplicated name", `hosts = [` + three[0] + `,` + three[1] + `,` + host("a", "192.0.2.4", "") + `]`,
			`Two hosts share a name: a (2 hosts).`},
		{"failure domain on some hosts only", `hosts = [` + host("a", "192.0.2.1", `, failure_domain = "z1"`) + `,` +
			three[1] + `,` + three[2] + `]`, `failure_domain is set on 1 of 3 hosts`},
		{"unknown server package", `server = "keydb"
  hosts = [` + strings.Join(three, ",") + `]`, `server must be "redis-server" or "valkey-server"`},
		{"max_lock_ttl not a duration", `max_lock_ttl = "30"
  hosts = [` + strings.Join(three, ",") + `]`, `max_lock_ttl must be a positive duration (Go syntax), such as "30s"`},
		{"zero max_lock_ttl", `max_lock_ttl = "0s"
  hosts = [` + strings.Join(three, ",") + `]`, `max_lock_ttl must be a positive duration`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := copyTree(t, "modules/redlock-hosts")
			dir := filepath.Join(root, "root")
			config := fmt.Sprintf("module \"hosts\" {\n  source = \"../modules/redlock-hosts\"\n  %s\n}\n", tc.inputs)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(config), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := terraform.InitAndPlanE(t, terraformOptions(dir, nil))
			if err == nil {
				t.Fatalf("plan succeeded, want an error containing %q:\n%s", tc.want, out)
			}
			if !strings.Contains(collapse(out+err.Error()), tc.want) {
				t.Fatalf("error does not name the fix %q:\n%s\n%v", tc.want, out, err)
			}
			// Once, however many hosts: not a precondition repeated for every host.
			if n := strings.Count(collapse(out), tc.want); n != 1 {
				t.Errorf("the error appears %d times in the plan's output, want once:\n%s", n, out)
			}
		})
	}
}

// planCluster plans a private copy of modules/redlock-cluster with inputs and returns the
// output, the data root (which a plan must leave empty) and the error.
func planCluster(t *testing.T, inputs string) (out, dataRoot string, err error) {
	t.Helper()
	root := copyTree(t, "modules/redlock-cluster")
	dir := filepath.Join(root, "root")
	dataRoot = filepath.Join(root, "data")
	config := fmt.Sprintf("module \"cluster\" {\n  source    = \"../modules/redlock-cluster\"\n  data_root = %q\n  %s\n}\n", dataRoot, inputs)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = terraform.InitAndPlanE(t, terraformOptions(dir, nil))
	return out, dataRoot, err
}

// A port something already listens on is refused at plan, naming the port and address.
func TestModuleRefusesAPortInUse(t *testing.T) {
	t.Parallel()
	addrs, port := uniqueLoopback(t)
	busy, err := net.Listen("tcp", net.JoinHostPort(addrs[2], fmt.Sprint(port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	out, dataRoot, err := planCluster(t, fmt.Sprintf("bind_addresses = [%q, %q, %q, %q, %q]\n  ports = [%d, %d, %d, %d, %d]",
		addrs[0], addrs[1], addrs[2], addrs[3], addrs[4], port, port, port, port, port))
	want := fmt.Sprintf("port %d on %s is already in use", port, addrs[2])
	if err == nil {
		t.Fatalf("plan succeeded, want an error containing %q:\n%s", want, out)
	}
	if !strings.Contains(collapse(out+err.Error()), want) {
		t.Fatalf("error does not name the busy port %q:\n%s\n%v", want, out, err)
	}
	if entries, _ := os.ReadDir(dataRoot); len(entries) > 0 {
		t.Fatalf("a refused plan created %d data dirs", len(entries))
	}
}

// A long max_lock_ttl plans, with a warning that says what it costs: how long a crashed
// master stays down, and that a majority down blocks every lock that long.
func TestModuleWarnsAboutALongMaxLockTTL(t *testing.T) {
	t.Parallel()
	addrs, port := uniqueLoopback(t) // free ports: plan refuses a port in use
	out, _, err := planCluster(t, fmt.Sprintf("bind_addresses = [%q, %q, %q, %q, %q]\n  ports = [%d, %d, %d, %d, %d]\n  max_lock_ttl = \"1h\"",
		addrs[0], addrs[1], addrs[2], addrs[3], addrs[4], port, port, port, port, port))
	if err != nil {
		t.Fatalf("plan with max_lock_ttl = 1h failed: %v\n%s", err, out)
	}
	for _, want := range []string{"Warning: Long max_lock_ttl: a crashed master stays down 1.0 hours",
		"stays down for restart_delay = 1h0m36.102s", "every lock is refused for that long"} {
		if !strings.Contains(collapse(out), want) {
			t.Errorf("plan output does not say %q:\n%s", want, out)
		}
	}
}
