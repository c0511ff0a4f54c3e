//go:build linux

package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/terraform"

	"github.com/redlock-kit/redlock-kit/internal/hostlab"
	"github.com/redlock-kit/redlock-kit/internal/pki"
)

// TestHostsTLSKeyOnHost: modules/redlock-hosts-write-only with tls = true on three systemd
// hosts. Booted from user-data that holds no private key, each master stays down, its journal
// naming the key file it waits for; once the operator's provisioning (here, a file written
// into each host) delivers the key from tls_server_key_files, each serves TLS, its key 0600
// and owned by the server's user.
func TestHostsTLSKeyOnHost(t *testing.T) {
	specs := make([]hostlab.HostSpec, 3)
	for i := range specs {
		specs[i] = hostlab.HostSpec{Name: fmt.Sprintf("k%d", i+1)}
	}
	lab := hostlab.Start(t, hostlab.Options{Hosts: specs, Clients: 1, NoBoot: true})
	root := copyTree(t, "modules/redlock-hosts-write-only")
	dir := filepath.Join(root, "key-on-host")
	secrets := filepath.Join(t.TempDir(), "secrets")
	var hosts []string
	for _, h := range lab.Hosts() {
		hosts = append(hosts, fmt.Sprintf("{ name = %q, address = %q }", h.Name(), h.Address()))
	}
	writeRoot(t, dir, fmt.Sprintf(`
module "hosts" {
  source           = "../modules/redlock-hosts-write-only"
  hosts            = [%s]
  max_lock_ttl     = "10s"
  install_packages = false # the lab's image has the packages
  tls              = true
  secrets_dir      = %q
}

output "user_data" {
  value     = module.hosts.user_data
  sensitive = true
}

output "endpoints" {
  value = module.hosts.endpoints
}

output "units" {
  value = module.hosts.units
}

output "restart_delay_ms" {
  value = module.hosts.restart_delay_ms
}

output "ca_cert_pem" {
  value = module.hosts.ca_cert_pem
}

output "tls_server_key_files" {
  value = module.hosts.tls_server_key_files
}
`, strings.Join(hosts, ", "), secrets))
	opts := terraformOptions(dir, nil)
	opts.TerraformBinary = terraformInClientNetns(t, lab, terraformAtLeast111(t))
	t.Cleanup(func() {
		if _, err := terraform.DestroyE(t, opts); err != nil {
			t.Errorf("terraform destroy: %v", err)
		}
	})
	terraform.InitAndApply(t, opts) // the hosts are not up: the audit's check only warns

	d := &hostsDeployment{lab: lab, opts: opts, endpoints: terraform.OutputList(t, opts, "endpoints"),
		units: terraform.OutputList(t, opts, "units")}
	ms, err := strconv.Atoi(terraform.Output(t, opts, "restart_delay_ms"))
	if err != nil {
		t.Fatal(err)
	}
	d.restartDelay = time.Duration(ms) * time.Millisecond
	if d.tls, err = pki.ClientConfig(terraform.Output(t, opts, "ca_cert_pem")); err != nil {
		t.Fatal(err)
	}
	var admin struct {
		AdminPassword string `json:"admin_password"`
	}
	if raw, err := os.ReadFile(filepath.Join(secrets, "admin.json")); err != nil || json.Unmarshal(raw, &admin) != nil {
		t.Fatalf("admin.json: %v", err)
	}
	d.adminPass = admin.AdminPassword
	keyFiles := terraform.OutputList(t, opts, "tls_server_key_files")
	if err := json.Unmarshal([]byte(terraform.OutputJson(t, opts, "user_data")), &d.userData); err != nil || len(d.userData) != 3 || len(keyFiles) != 3 {
		t.Fatalf("user_data: %d hosts (%v), %d key files; want 3 each", len(d.userData), err, len(keyFiles))
	}
	keys := make([]string, len(keyFiles))
	for i, f := range keyFiles {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		keys[i] = string(raw)
		if body := strings.Split(keys[i], "\n")[1]; strings.Contains(decodedWriteFiles(t, d.userData[i]), body) {
			t.Fatalf("host %d's user-data holds its server key", i+1)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	if err := lab.ProvisionAll(ctx, d.userData); err != nil {
		t.Fatal(err)
	}
	for _, h := range lab.Hosts() {
		if err := h.WaitCloudInit(ctx); err != nil {
			t.Fatalf("cloud-init on %s: %v", h.Name(), err)
		}
	}

	t.Run("without its key each master stays down, saying which file it waits for", func(t *testing.T) {
		const want = "no TLS key at /etc/redlock/tls-server.key"
		for i, h := range lab.Hosts() {
			var journal string
			for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
				if journal, _ = h.Exec(ctx, "journalctl", "--no-pager", "-o", "cat", "-u", d.units[i]); strings.Contains(journal, want) {
					break
				}
			}
			if !strings.Contains(journal, want) {
				t.Errorf("%s: the journal does not say %q:\n%s", h.Name(), want, journal)
			}
			c := d.admin(i)
			err := c.Ping(ctx).Err()
			_ = c.Close()
			if err == nil {
				t.Errorf("%s serves without its TLS key", h.Name())
			}
		}
	})

	t.Run("delivered, each key makes its master serve TLS", func(t *testing.T) {
		for i, h := range lab.Hosts() {
			if out, err := h.Exec(ctx, "sh", "-c", "umask 077 && cat >/etc/redlock/tls-server.key <<'EOF'\n"+keys[i]+"EOF\n"); err != nil {
				t.Fatalf("%s: delivering the key: %v %s", h.Name(), err, out)
			}
		}
		for i, h := range lab.Hosts() {
			d.waitServing(t, i)
			if out, err := h.Exec(ctx, "stat", "-c", "%a %U", "/etc/redlock/tls-server.key"); err != nil || strings.TrimSpace(out) != "600 redis" {
				t.Errorf("%s: the key file is %q (%v), want mode 600, owned by redis", h.Name(), strings.TrimSpace(out), err)
			}
		}
	})
}

// terraformInClientNetns is a wrapper that runs bin in the lab's client namespace, the only
// place the hosts' addresses exist (terraform and the audit its check block runs).
func terraformInClientNetns(t *testing.T, lab *hostlab.Lab, bin string) string {
	t.Helper()
	path, err := exec.LookPath(bin)
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(t.TempDir(), "terraform-in-client-netns")
	script := fmt.Sprintf("#!/bin/sh\nexec ip netns exec %s %s \"$@\"\n", lab.ClientNetns(0), path)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return wrapper
}
