package test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/terraform"
	"github.com/redis/go-redis/v9"
	"go.yaml.in/yaml/v3"

	"github.com/redlock-kit/redlock-kit/internal/pki"
)

// TestModuleStateSecrets applies each module as a user would (the hosts module with two
// tenants, TLS and exporters; examples/local-five with two tenants and TLS) and looks for
// every password and private key they generate in the raw state file and in `terraform show
// -json`. With today's modules every one is there, which this test asserts: it is the
// inventory of what the state holds (docs/guides/security.md), and the negative control of
// the same search in the write-only subtest, where it must find none.
func TestModuleStateSecrets(t *testing.T) {
	t.Parallel()
	t.Run("redlock-hosts", func(t *testing.T) {
		root := copyTree(t, "modules/redlock-hosts")
		dir := filepath.Join(root, "hosts-two-tenants")
		writeRoot(t, dir, `
module "hosts" {
  source = "../modules/redlock-hosts"
  hosts = [
    { name = "a", address = "127.66.7.11" },
    { name = "b", address = "127.66.7.12" },
    { name = "c", address = "127.66.7.13" },
  ]
  lock_users = {
    billing = { key_prefix = "billing:" }
    orders  = { key_prefix = "orders:" }
  }
  tls = true
}
`)
		opts := terraformOptions(dir, nil)
		t.Cleanup(func() { terraform.Destroy(t, opts) })
		terraform.InitAndApply(t, opts) // nothing serves there: the audit's check only warns
		found := secretsInStateAndShow(t, opts)
		// Four credential sets (the admin's, the monitoring user's, two tenants'), two
		// passwords each, the CA key and three server keys.
		requireEverySecretFound(t, found, 12)
		// The negative control of the write-only module's key search: here it finds each
		// server key in the state, terraform show -json and its host's user-data.
		keys := map[string]string{}
		for _, s := range found {
			if strings.Contains(s.what, "redlock_server_certificate.") {
				keys[s.what] = s.value
			}
		}
		var userData []string
		for i := 0; i < 3; i++ {
			userData = append(userData, userDataInState(t, opts, i))
		}
		if n := len(privateKeysFound(t, opts, keys, userData)); len(keys) != 3 || n != 3*3 {
			t.Errorf("the key search finds %d places for %d server keys, want 9 for 3 (state, show, user-data): it cannot fail", n, len(keys))
		}
	})
	t.Run("redlock-cluster", func(t *testing.T) {
		d := deployLocalFiveVars(t, "2s", map[string]interface{}{
			"lock_users": map[string]interface{}{
				"billing": map[string]interface{}{"key_prefix": "billing:"},
				"orders":  map[string]interface{}{"key_prefix": "orders:"},
			},
			"tls": true,
		})
		found := secretsInStateAndShow(t, d.opts)
		requireEverySecretFound(t, found, 14) // the same eight passwords, the CA key and five server keys
	})
	// Terraform >= 1.11, modules/redlock-hosts-write-only with two tenants: no password in the
	// state or the hosts' user-data, with exporters too (each host makes its exporter's
	// password), and no private key. The same search as above, over the passwords in the
	// secrets files and the keys in the key files.
	t.Run("redlock-hosts-write-only", func(t *testing.T) {
		// twoCAs: mid-way through a move to a new CA (tls_cas = ["1", "2"], the first host on
		// the new one): both CAs' keys stay in their files.
		for _, c := range []struct{ exporters, tls, twoCAs bool }{{false, false, false}, {true, false, false}, {false, true, false}, {false, true, true}} {
			exporters, useTLS, twoCAs := c.exporters, c.tls, c.twoCAs
			tlsCAs, hostCAs := `["1"]`, []string{"null", "null", "null"}
			caKeyFiles := []string{"ca.key"}
			if twoCAs {
				tlsCAs, hostCAs = `["1", "2"]`, []string{`"2"`, `"1"`, `"1"`}
				caKeyFiles = append(caKeyFiles, "ca-2.key")
			}
			t.Run(fmt.Sprintf("exporters=%v,tls=%v,two_cas=%v", exporters, useTLS, twoCAs), func(t *testing.T) {
				root := copyTree(t, "modules/redlock-hosts-write-only")
				dir := filepath.Join(root, "hosts-write-only")
				secrets := filepath.Join(t.TempDir(), "secrets")
				writeRoot(t, dir, fmt.Sprintf(`
module "hosts" {
  source = "../modules/redlock-hosts-write-only"
  hosts = [
    { name = "a", address = "127.66.7.21", tls_ca = %s },
    { name = "b", address = "127.66.7.22", tls_ca = %s },
    { name = "c", address = "127.66.7.23", tls_ca = %s },
  ]
  lock_users = {
    billing = { key_prefix = "billing:" }
    orders  = { key_prefix = "orders:" }
  }
  exporters   = %v
  tls         = %v
  tls_cas     = %s
  secrets_dir = %q
  live_users  = var.live_users
}

variable "live_users" {
  type    = bool
  default = false
}

output "user_data" {
  value     = module.hosts.user_data
  sensitive = true
}

output "tls_server_key_files" {
  value = module.hosts.tls_server_key_files
}
output "tls_server_cas" {
  value = module.hosts.tls_server_cas
}
`, hostCAs[0], hostCAs[1], hostCAs[2], exporters, useTLS, tlsCAs, secrets))
				opts := terraformOptions(dir, nil)
				opts.TerraformBinary = terraformAtLeast111(t)
				t.Cleanup(func() { terraform.Destroy(t, opts) })
				terraform.InitAndApply(t, opts) // nothing serves there: the audit's check only warns
				if out := terraform.Plan(t, opts); !strings.Contains(out, "No changes.") {
					t.Errorf("the plan after the apply is not empty:\n%s", out)
				}
				// live_users: redlock_users logs in with the admin password write-only; nothing
				// serves here, so this plans only.
				live := *opts
				live.Vars = map[string]interface{}{"live_users": true}
				if out := terraform.Plan(t, &live); !strings.Contains(out, "module.hosts.redlock_users.live[0] will be created") {
					t.Errorf("live_users = true does not plan redlock_users:\n%s", out)
				}
				// With exporters too: each host makes redis_exporter's password itself.
				inState := searchPasswordFiles(t, opts, secrets)
				if len(inState) != 0 {
					t.Errorf("passwords of the secrets files in the state: %v", inState)
				}
				if n := len(monitorPasswordsInState(t, opts)); n != 0 {
					t.Errorf("monitoring passwords in the state: %d, want 0", n)
				}
				// The hosts' user-data, every write_files entry decoded: no password, the
				// monitoring user's included.
				var userData []string
				if err := json.Unmarshal([]byte(terraform.OutputJson(t, opts, "user_data")), &userData); err != nil || len(userData) != 3 {
					t.Fatalf("user_data: %d hosts (%v), want 3", len(userData), err)
				}
				for _, f := range []string{"admin.json", "tenant-billing.json", "tenant-orders.json", "monitor.json"} {
					raw, err := os.ReadFile(filepath.Join(secrets, f))
					if err != nil {
						t.Fatal(err)
					}
					var c map[string]string
					_ = json.Unmarshal(raw, &c)
					for _, u := range userData {
						decoded := decodedWriteFiles(t, u)
						for _, k := range []string{"admin_password", "lock_password"} {
							if c[k] == "" || strings.Contains(decoded, c[k]) {
								t.Errorf("a host's user-data holds %s's %s (or it is empty)", f, k)
							}
						}
					}
				}
				if exporters {
					for i, u := range userData {
						if regexp.MustCompile(`(?m)^REDIS_PASSWORD=`).MatchString(decodedWriteFiles(t, u)) {
							t.Errorf("host %d's user-data gives redis_exporter a password", i)
						}
					}
				}
				// Private keys: with tls, the CA's and each host's server key are in their files
				// only: in no state, no terraform show -json and no user-data.
				for _, s := range secretsInStateAndShow(t, opts) {
					if strings.Contains(s.what, "redlock_ca.") || strings.Contains(s.what, "redlock_server_certificate.") {
						t.Errorf("a private key is in the state: %s", s.what)
					}
				}
				if useTLS {
					keys := map[string]string{}
					for _, f := range terraform.OutputList(t, opts, "tls_server_key_files") {
						raw, err := os.ReadFile(f)
						if err != nil || !strings.Contains(string(raw), "PRIVATE KEY") {
							t.Fatalf("server key file %s: %v", f, err)
						}
						keys[filepath.Base(f)] = string(raw)
					}
					if len(keys) != 3 {
						t.Errorf("%d server key files, want 3", len(keys))
					}
					if found := privateKeysFound(t, opts, keys, userData); len(found) != 0 {
						t.Errorf("server keys found outside their files: %v", found)
					}
				}
				if useTLS {
					caKeys := map[string]string{}
					for _, f := range caKeyFiles {
						key, err := os.ReadFile(filepath.Join(secrets, f))
						if err != nil || !strings.Contains(string(key), "PRIVATE KEY") {
							t.Errorf("the CA key is not in %s (%v)", filepath.Join(secrets, f), err)
							continue
						}
						if enc, _ := json.Marshal(string(key)); strings.Contains(terraform.Show(t, opts), strings.Trim(string(enc), `"`)) {
							t.Errorf("the CA key %s is in terraform show -json", f)
						}
						caKeys[f] = string(key)
					}
					if found := privateKeysFound(t, opts, caKeys, userData); len(found) != 0 {
						t.Errorf("CA keys found outside their files: %v", found)
					}
				}
				if twoCAs {
					if got := terraform.OutputList(t, opts, "tls_server_cas"); strings.Join(got, ",") != "2,1,1" {
						t.Errorf("tls_server_cas = %v, want [2 1 1]", got)
					}
				}
			})
		}
	})
	// Terraform >= 1.11, modules/redlock-cluster-write-only with two tenants: three local
	// masters given every password write-only (admin, monitoring, both tenants'), kept in
	// files under secrets_dir. The same search finds none of the 8 in the raw state or in
	// terraform show -json (and does find their hashes); the tenants log in to every master
	// with the passwords from their files, and the ephemeral audit finds the deployment safe.
	// With tls, the masters take their keys write-only: each server key is in its
	// redlock_server_certificate only, never in a redlock_master; the CA's is in its file.
	t.Run("redlock-cluster-write-only", func(t *testing.T) {
		for _, useTLS := range []bool{false, true} {
			t.Run(fmt.Sprintf("tls=%v", useTLS), func(t *testing.T) {
				root := copyTree(t, "modules/redlock-cluster-write-only")
				dir := filepath.Join(root, "cluster-write-only")
				addrs, port := uniqueLoopback(t)
				secrets := filepath.Join(t.TempDir(), "secrets")
				writeRoot(t, dir, fmt.Sprintf(`
module "cluster" {
  source         = "../modules/redlock-cluster-write-only"
  masters        = 3
  name_prefix    = "cwo"
  bind_addresses = [%q, %q, %q]
  ports          = [%d, %d, %d]
  data_root      = %q
  max_lock_ttl   = "2s"
  lock_users = {
    billing = { key_prefix = "billing:" }
    orders  = { key_prefix = "orders:" }
  }
  tls         = %v
  secrets_dir = %q
}

output "endpoints" {
  value = module.cluster.endpoints
}

output "ca_cert_pem" {
  value = module.cluster.ca_cert_pem
}
`, addrs[0], addrs[1], addrs[2], port, port, port, filepath.Join(t.TempDir(), "data"), useTLS, secrets))
				opts := terraformOptions(dir, nil)
				opts.TerraformBinary = terraformAtLeast111(t)
				t.Cleanup(func() { terraform.Destroy(t, opts) })
				if out := terraform.InitAndApply(t, opts); strings.Contains(out, "not safe") {
					t.Errorf("the ephemeral audit finds the deployment unsafe:\n%s", out)
				}
				if out := terraform.Plan(t, opts); !strings.Contains(out, "No changes.") {
					t.Errorf("the plan after the apply is not empty:\n%s", out)
				}
				if inState := searchPasswordFiles(t, opts, secrets); len(inState) != 0 {
					t.Errorf("passwords of the secrets files in the state: %v", inState)
				}
				var tlsConfig *tls.Config
				if useTLS {
					var err error
					if tlsConfig, err = pki.ClientConfig(terraform.Output(t, opts, "ca_cert_pem")); err != nil {
						t.Fatal(err)
					}
				}
				endpoints := terraform.OutputList(t, opts, "endpoints")
				for _, tenant := range []string{"billing", "orders"} {
					raw, err := os.ReadFile(filepath.Join(secrets, "tenant-"+tenant+".json"))
					if err != nil {
						t.Fatal(err)
					}
					var c struct {
						LockPassword string `json:"lock_password"`
					}
					if err := json.Unmarshal(raw, &c); err != nil || c.LockPassword == "" {
						t.Fatalf("%s: no lock_password (%v)", tenant, err)
					}
					for _, ep := range endpoints {
						if err := authAs(ep, tlsConfig, tenant, c.LockPassword); err != nil {
							t.Errorf("%s on %s with the password from its file: %v", tenant, ep, err)
						}
						if err := authAs(ep, tlsConfig, tenant, c.LockPassword+"x"); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
							t.Errorf("%s on %s with a wrong password: %v, want WRONGPASS", tenant, ep, err)
						}
					}
				}
				var serverKeys int
				for _, s := range secretsInStateAndShow(t, opts) {
					switch {
					case strings.Contains(s.what, "redlock_ca."):
						t.Errorf("the CA key is in the state: %s", s.what)
					case strings.Contains(s.what, "redlock_server_certificate."):
						serverKeys++
					}
					for _, addr := range s.inState {
						if strings.Contains(addr, "redlock_master.") {
							t.Errorf("%s is in %s's state", s.what, addr)
						}
					}
				}
				if want := map[bool]int{false: 0, true: 3}[useTLS]; serverKeys != want {
					t.Errorf("%d server keys in the state, want %d", serverKeys, want)
				}
				t.Logf("tls=%v: %d server keys in the state, each in its redlock_server_certificate only", useTLS, serverKeys)
			})
		}
	})
	// Terraform >= 1.11: three masters whose passwords are kept in a credentials file (the
	// state gets their hashes), read back by the ephemeral redlock_credentials into the
	// masters' write-only arguments and the ephemeral audit. The same search finds none of
	// them in the raw state or in terraform show -json, and does find their hashes.
	t.Run("write-only", func(t *testing.T) {
		addrs, port := uniqueLoopback(t)
		dir := filepath.Join(t.TempDir(), "write-only")
		dataRoot := filepath.Join(t.TempDir(), "data")
		secretsFile := filepath.Join(t.TempDir(), "secrets", "cluster.json")
		writeRoot(t, dir, fmt.Sprintf(writeOnlyRoot, secretsFile, addrs[0], addrs[1], addrs[2], port, dataRoot))
		opts := terraformOptions(dir, nil)
		opts.TerraformBinary = terraformAtLeast111(t)
		t.Cleanup(func() { terraform.Destroy(t, opts) })
		terraform.InitAndApply(t, opts)
		raw, err := os.ReadFile(secretsFile)
		if err != nil {
			t.Fatal(err)
		}
		var creds struct {
			AdminPassword string `json:"admin_password"`
			LockPassword  string `json:"lock_password"`
		}
		if err := json.Unmarshal(raw, &creds); err != nil || creds.AdminPassword == "" || creds.LockPassword == "" {
			t.Fatalf("%s: no passwords (%v)", secretsFile, err)
		}
		state, err := os.ReadFile(filepath.Join(dir, "terraform.tfstate"))
		if err != nil {
			t.Fatal(err)
		}
		show := terraform.Show(t, opts)
		for name, v := range map[string]string{"admin password": creds.AdminPassword, "lock password": creds.LockPassword} {
			if strings.Contains(string(state), v) || strings.Contains(show, v) {
				t.Errorf("the %s is in the state or in terraform show -json", name)
			}
			if h := sha256Hex(v); !strings.Contains(string(state), h) || !strings.Contains(show, h) {
				t.Errorf("the %s's hash is not in the state and terraform show -json: the search did not read them", name)
			}
		}
		t.Logf("write-only path: 0 of 2 passwords in the raw state and terraform show -json (their hashes are)")
	})
}

// searchPasswordFiles returns, for every password in the redlock_credentials files under dir,
// where it is found in the raw state or `terraform show -json`; it fails the test when it
// cannot find each password's hash there (then it did not read what it searched).
func searchPasswordFiles(t *testing.T, opts *terraform.Options, dir string) []string {
	t.Helper()
	state, err := os.ReadFile(filepath.Join(opts.TerraformDir, "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	show := terraform.Show(t, opts)
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no secrets files in %s (%v)", dir, err)
	}
	var found []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c map[string]any
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"admin_password", "lock_password"} {
			v, _ := c[k].(string)
			if v == "" {
				t.Fatalf("%s has no %s", f, k)
			}
			if strings.Contains(string(state), v) || strings.Contains(show, v) {
				found = append(found, filepath.Base(f)+" "+k)
			}
			if k == "lock_password" && (!strings.Contains(string(state), sha256Hex(v)) || !strings.Contains(show, sha256Hex(v))) {
				t.Errorf("%s: the hash of its %s is not in the state and terraform show -json: the search did not read them", f, k)
			}
		}
	}
	t.Logf("%d passwords in %d secrets files; %d of them in the raw state or terraform show -json", 2*len(files), len(files), len(found))
	return found
}

// decodedWriteFiles is every write_files entry of a #cloud-config user-data, decoded
// (gz+b64 entries unpacked as cloud-init does), one after another.
func decodedWriteFiles(t *testing.T, userData string) string {
	t.Helper()
	var doc struct {
		WriteFiles []struct {
			Path, Encoding, Content string
		} `yaml:"write_files"`
	}
	if err := yaml.Unmarshal([]byte(userData), &doc); err != nil || len(doc.WriteFiles) == 0 {
		t.Fatalf("user-data is not cloud-config with write_files (%v)", err)
	}
	var b strings.Builder
	for _, f := range doc.WriteFiles {
		switch f.Encoding {
		case "":
			b.WriteString(f.Content)
		case "gz+b64":
			raw, err := base64.StdEncoding.DecodeString(f.Content)
			if err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
			b.Write(plain)
		default:
			t.Fatalf("%s: encoding %q", f.Path, f.Encoding)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// privateKeysFound returns where each private key (PEM, by name) is found: the raw state,
// `terraform show -json`, the decoded user-data of a host. It searches for the key's body
// lines, which no escaping of the PEM's newlines changes.
func privateKeysFound(t *testing.T, opts *terraform.Options, keys map[string]string, userData []string) []string {
	t.Helper()
	state, err := os.ReadFile(filepath.Join(opts.TerraformDir, "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	places := map[string]string{"the raw state": string(state), "terraform show -json": terraform.Show(t, opts)}
	for i, u := range userData {
		places[fmt.Sprintf("host %d's user-data", i)] = decodedWriteFiles(t, u)
	}
	var found []string
	for name, key := range keys {
		lines := strings.Split(strings.TrimSpace(key), "\n")
		if len(lines) < 3 {
			t.Fatalf("%s is not a PEM key", name)
		}
		for place, text := range places {
			for _, l := range lines[1 : len(lines)-1] {
				if strings.Contains(text, l) {
					found = append(found, name+" in "+place)
					break
				}
			}
		}
	}
	sort.Strings(found)
	t.Logf("%d private keys searched for in %d places: found %d times", len(keys), len(places), len(found))
	return found
}

// userDataInState is the user_data of module.hosts' i-th redlock_host_config, from the state.
func userDataInState(t *testing.T, opts *terraform.Options, i int) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(opts.TerraformDir, "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	var st rawState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Resources {
		if r.Mode == "data" && r.Type == "redlock_host_config" && i < len(r.Instances) {
			if u, ok := r.Instances[i].Attributes["user_data"].(string); ok {
				return u
			}
		}
	}
	t.Fatalf("no user_data of redlock_host_config[%d] in the state", i)
	return ""
}

// monitorPasswordsInState returns the monitoring user's passwords the state holds.
func monitorPasswordsInState(t *testing.T, opts *terraform.Options) []string {
	t.Helper()
	var found []string
	for _, s := range secretsInStateAndShow(t, opts) {
		if strings.Contains(s.what, "redlock_credentials.monitor.lock_password") {
			found = append(found, s.what)
		}
	}
	return found
}

// writeOnlyRoot is three write-only masters and their ephemeral audit: the credentials file,
// three bind addresses, the port, the data root.
const writeOnlyRoot = `
resource "redlock_credentials" "cluster" {
  file = %q
}

ephemeral "redlock_credentials" "cluster" {
  file    = redlock_credentials.cluster.file
  version = redlock_credentials.cluster.version
}

locals {
  binds = [%q, %q, %q]
}

resource "redlock_master" "m" {
  count        = 3
  name         = "wo-${count.index}"
  bind         = local.binds[count.index]
  port         = %d
  data_dir     = "%s/wo-${count.index}"
  max_lock_ttl = "2s"

  admin_password_wo   = ephemeral.redlock_credentials.cluster.admin_password
  lock_password_wo    = ephemeral.redlock_credentials.cluster.lock_password
  password_wo_version = redlock_credentials.cluster.version
}

ephemeral "redlock_audit" "cluster" {
  endpoints     = redlock_master.m[*].address
  password      = ephemeral.redlock_credentials.cluster.admin_password
  lock_username = "redlock"
  lock_password = ephemeral.redlock_credentials.cluster.lock_password
  max_lock_ttl  = "2s"
}

resource "terraform_data" "audited" {
  lifecycle {
    precondition {
      condition     = ephemeral.redlock_audit.cluster.safe
      error_message = "The Redlock deployment is not safe: see the warning of ephemeral.redlock_audit.cluster."
    }
  }
}
`

// terraformAtLeast111 is a terraform that has write-only arguments: the one on PATH when it
// is >= 1.11, else bin/terraform-1.11.4 (make test-deps builds it). It fails the test, never
// skips it, when there is none.
func terraformAtLeast111(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{"terraform", filepath.Join(repoRoot, "bin", "terraform-1.11.4")} {
		out, err := exec.Command(bin, "version", "-json").Output()
		if err != nil {
			continue
		}
		var v struct {
			Version string `json:"terraform_version"`
		}
		if json.Unmarshal(out, &v) == nil && versionAtLeast(v.Version, 1, 11) {
			return bin
		}
	}
	t.Fatal("no terraform >= 1.11 (on PATH or bin/terraform-1.11.4): run make test-deps")
	return ""
}

// versionAtLeast reports whether "major.minor.patch" is at least major.minor.
func versionAtLeast(v string, major, minor int) bool {
	var a, b int
	if _, err := fmt.Sscanf(v, "%d.%d", &a, &b); err != nil {
		return false
	}
	return a > major || a == major && b >= minor
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// writeRoot writes a root module that finds the provider in the offline mirror.
func writeRoot(t *testing.T, dir, body string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	head := `terraform {
  required_providers {
    redlock = { source = "redlock-kit/redlock" }
  }
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(head+body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// stateSecret is one generated secret and where it was found.
type stateSecret struct {
	what    string // e.g. module.hosts.redlock_credentials.tenant["billing"].lock_password
	value   string
	inState []string // addresses (and root outputs) whose values contain it in the raw state
	inShow  bool     // whether `terraform show -json` contains it
}

// generatedSecrets are the attributes that hold what the provider generates: every password
// of a redlock_credentials and every private key.
var generatedSecrets = map[string][]string{
	"redlock_credentials":        {"admin_password", "lock_password"},
	"redlock_ca":                 {"private_key_pem"},
	"redlock_server_certificate": {"private_key_pem"},
}

type rawState struct {
	Outputs   map[string]struct{ Value any } `json:"outputs"`
	Resources []struct {
		Module, Mode, Type, Name string
		Instances                []struct {
			IndexKey   any            `json:"index_key"`
			Attributes map[string]any `json:"attributes"`
		}
	} `json:"resources"`
}

// secretsInStateAndShow reads the raw state file, takes every generated secret from it and
// lists, for each, every resource and root output whose values contain it, and whether
// `terraform show -json` does.
func secretsInStateAndShow(t *testing.T, opts *terraform.Options) []stateSecret {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(opts.TerraformDir, "terraform.tfstate"))
	if err != nil {
		t.Fatal(err)
	}
	var st rawState
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	show := terraform.Show(t, opts) // terraform show -json
	type holder struct {
		addr   string
		values string
	}
	var holders []holder
	var secrets []stateSecret
	values := map[string]string{}
	for _, r := range st.Resources {
		for _, in := range r.Instances {
			addr := r.Type + "." + r.Name
			if r.Mode == "data" {
				addr = "data." + addr
			}
			if r.Module != "" {
				addr = r.Module + "." + addr
			}
			if in.IndexKey != nil {
				key, _ := json.Marshal(in.IndexKey)
				addr += "[" + string(key) + "]"
			}
			b, _ := json.Marshal(in.Attributes)
			holders = append(holders, holder{addr, string(b)})
			for _, name := range generatedSecrets[r.Type] {
				if v, ok := in.Attributes[name].(string); ok && v != "" && r.Mode == "managed" {
					secrets = append(secrets, stateSecret{what: addr + "." + name})
					values[addr+"."+name] = v
				}
			}
		}
	}
	for name, o := range st.Outputs {
		b, _ := json.Marshal(o.Value)
		holders = append(holders, holder{"output." + name, string(b)})
	}
	for i := range secrets {
		v := values[secrets[i].what]
		secrets[i].value = v
		// JSON escapes a PEM's newlines: search for its encoded form as well.
		enc, _ := json.Marshal(v)
		needle := strings.Trim(string(enc), `"`)
		for _, h := range holders {
			if strings.Contains(h.values, needle) || strings.Contains(h.values, v) {
				secrets[i].inState = append(secrets[i].inState, h.addr)
			}
		}
		secrets[i].inShow = strings.Contains(show, needle) || strings.Contains(show, v)
		sort.Strings(secrets[i].inState)
	}
	sort.Slice(secrets, func(i, j int) bool { return secrets[i].what < secrets[j].what })
	return secrets
}

// requireEverySecretFound asserts want secrets were generated and every one is in both the
// raw state and `terraform show -json`, and logs where.
func requireEverySecretFound(t *testing.T, found []stateSecret, want int) {
	t.Helper()
	if len(found) != want {
		t.Errorf("%d generated secrets in the state, want %d", len(found), want)
	}
	for _, s := range found {
		t.Logf("%s: in the raw state at %s; in terraform show -json: %v", s.what, strings.Join(s.inState, ", "), s.inShow)
		if len(s.inState) == 0 || !s.inShow {
			t.Errorf("%s was not found in the raw state or in terraform show -json: the search cannot see secrets", s.what)
		}
	}
	fmt.Fprintf(os.Stderr, "state secrets: %d generated, all %d found in the raw state and terraform show -json\n", len(found), len(found))
}

// authAs runs AUTH user password on a fresh connection to addr (over TLS when tlsConfig is
// not nil).
func authAs(addr string, tlsConfig *tls.Config, user, password string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second,
		DisableIdentity: true, TLSConfig: tlsConfig})
	defer c.Close()
	return c.Do(context.Background(), "AUTH", user, password).Err()
}
