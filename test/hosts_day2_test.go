package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/terraform"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/hostlab"
)

// day2Root is a root module over modules/redlock-hosts with tenants and live_users, as an
// operator writes it.
const day2Root = `
variable "hosts" {
  type = list(object({ name = string, address = string }))
}
variable "live_users" {
  type = bool
}
variable "tenants" {
  type = map(string)
}
module "redlock" {
  source           = "../modules/redlock-hosts"
  hosts            = var.hosts
  max_lock_ttl     = "2s"
  install_packages = false
  live_users       = var.live_users
  lock_users       = { for name, prefix in var.tenants : name => { key_prefix = prefix } }
}
output "user_data" {
  value     = module.redlock.user_data
  sensitive = true
}
output "client_configs" {
  value     = module.redlock.client_configs
  sensitive = true
}
`

// day2ClientConfig is what the test reads of a client_configs entry.
type day2ClientConfig struct {
	Endpoints []string `json:"endpoints"`
	Username  string   `json:"username"`
	Password  string   `json:"password"`
}

// TestHostsDay2: the Day 2 guide's procedures on three real hosts: the hosts boot from
// user-data without a password; with live_users a tenant is added to the running masters
// without new user-data reaching them; a tenant's password is rotated with an overlap
// (both work after the first apply, only the new one after the second); a removed tenant
// is locked out.
func TestHostsDay2(t *testing.T) {
	specs := []hostlab.HostSpec{{Name: "d1"}, {Name: "d2"}, {Name: "d3"}}
	lab := hostlab.Start(t, hostlab.Options{Hosts: specs, Clients: 1, NoBoot: true})
	root := copyTree(t, "modules/redlock-hosts")
	dir := filepath.Join(root, "day2")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(day2Root), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := make([]map[string]interface{}, len(specs))
	for i, h := range lab.Hosts() {
		hosts[i] = map[string]interface{}{"name": h.Name(), "address": h.Address()}
	}
	opts := terraformOptions(dir, map[string]interface{}{"hosts": hosts, "live_users": false,
		"tenants": map[string]string{"billing": "billing:"}})
	wrapper := filepath.Join(t.TempDir(), "terraform-in-client-netns")
	tf, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nexec ip netns exec %s %s \"$@\"\n", lab.ClientNetns(0), tf)), 0o755); err != nil {
		t.Fatal(err)
	}
	opts.TerraformBinary = wrapper
	t.Cleanup(func() {
		if _, err := terraform.DestroyE(t, opts); err != nil {
			t.Errorf("terraform destroy: %v", err)
		}
	})
	terraform.InitAndApply(t, opts)

	var userData []string
	if err := json.Unmarshal([]byte(terraform.OutputJson(t, opts, "user_data")), &userData); err != nil {
		t.Fatal(err)
	}
	configs := func() map[string]day2ClientConfig {
		var raw map[string]string
		if err := json.Unmarshal([]byte(secretOutputJSON(t, opts, "client_configs")), &raw); err != nil {
			t.Fatal(err)
		}
		out := map[string]day2ClientConfig{}
		for name, js := range raw {
			var c day2ClientConfig
			if err := json.Unmarshal([]byte(js), &c); err != nil {
				t.Fatal(err)
			}
			out[name] = c
		}
		return out
	}
	first := configs()
	for _, ud := range userData {
		if strings.Contains(decodedWriteFiles(t, ud), first["billing"].Password) { // gzipped files unpacked
			t.Fatal("the user-data holds the tenant's password")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := lab.ProvisionAll(ctx, userData); err != nil {
		t.Fatal(err)
	}
	dial := lab.DialContext(0)
	lockOn := func(endpoint, user, password, key string) error {
		c := redis.NewClient(&redis.Options{Addr: endpoint, Username: user, Password: password, Dialer: dial,
			DialTimeout: time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1, DisableIdentity: true})
		defer c.Close()
		cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
		defer ccancel()
		return c.Set(cctx, key, "v", time.Second).Err()
	}
	// everywhere checks a tenant can (want) or cannot lock under its prefix on every master;
	// it waits for masters that are still starting (the first boot holds restart_delay).
	everywhere := func(name, password, key string, want bool) {
		t.Helper()
		for _, ep := range first["billing"].Endpoints {
			deadline := time.Now().Add(3 * time.Minute)
			for {
				err := lockOn(ep, name, password, key)
				if (err == nil) == want && (want || strings.Contains(err.Error(), "WRONGPASS")) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s on %s: %v, want able to lock = %v", name, ep, err, want)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	everywhere("billing", first["billing"].Password, "billing:job", true)

	// Add a tenant live.
	opts.Vars["live_users"] = true
	opts.Vars["tenants"] = map[string]string{"billing": "billing:", "orders": "orders:"}
	terraform.Apply(t, opts)
	second := configs()
	everywhere("orders", second["orders"].Password, "orders:job", true)

	// Rotate billing's password: both work after the first apply, only the new after the next.
	if _, err := terraform.RunTerraformCommandE(t, opts, terraform.FormatArgs(opts, "apply", "-input=false", "-auto-approve",
		`-replace=module.redlock.redlock_credentials.tenant["billing"]`)...); err != nil {
		t.Fatalf("apply -replace: %v", err)
	}
	rotated := configs()
	if rotated["billing"].Password == first["billing"].Password {
		t.Fatal("-replace did not give billing a new password")
	}
	everywhere("billing", first["billing"].Password, "billing:job", true)
	everywhere("billing", rotated["billing"].Password, "billing:job", true)
	terraform.Apply(t, opts)
	everywhere("billing", first["billing"].Password, "billing:job", false)
	everywhere("billing", rotated["billing"].Password, "billing:job", true)

	// Remove orders.
	opts.Vars["tenants"] = map[string]string{"billing": "billing:"}
	terraform.Apply(t, opts)
	everywhere("orders", second["orders"].Password, "orders:job", false)
}
