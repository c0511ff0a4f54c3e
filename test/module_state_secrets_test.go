package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gruntwork-io/terratest/modules/terraform"
)

// TestModuleStateSecrets applies each module as a user would (the hosts module with two
// tenants, TLS and exporters; examples/local-five with two tenants and TLS) and looks for
// every password and private key they generate in the raw state file and in `terraform show
// -json`. With today's modules every one is there, which this test asserts: it is the
// inventory of what the state holds (docs/guides/security.md), and the negative control of
// the same search run where secrets must be absent (provider: TestAccCredentials_file).
func TestModuleStateSecrets(t *testing.T) {
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
	what    string   // e.g. module.hosts.redlock_credentials.tenant["billing"].lock_password
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
