package redlock_test

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// clientFileJSON is a client file as the modules write it (client_config), never dialled.
func clientFileJSON(change func(map[string]any)) map[string]any {
	f := map[string]any{
		"endpoints": []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}, "tls": false, "ca_cert_pem": nil,
		"max_lock_ttl": "30s", "restart_delay": "31000ms", "quorum": 2,
		"username": "app1", "password": "secret", "key_prefix": "app1:",
	}
	if change != nil {
		change(f)
	}
	return f
}

func writeClientFile(t *testing.T, f map[string]any) string {
	t.Helper()
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "client.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenRefusesBadClientFiles: each mistake in a client file, or an option that leaves
// what the deployment allows, is refused before a master is dialled, naming the field and
// the fix.
func TestOpenRefusesBadClientFiles(t *testing.T) {
	for _, tt := range []struct {
		name    string
		change  func(map[string]any)
		opts    redlock.Options
		mention []string
	}{
		{"a misspelt field", func(f map[string]any) { f["key_prefx"] = "app1:" }, redlock.Options{}, []string{`unknown field "key_prefx"`}},
		{"four endpoints", func(f map[string]any) { f["endpoints"] = []string{"a:1", "b:1", "c:1", "d:1"}; f["quorum"] = 3 },
			redlock.Options{}, []string{"endpoints: 4 masters given; Redlock needs an odd number >= 3"}},
		{"an endpoint dropped by hand", func(f map[string]any) { f["quorum"] = 3 }, redlock.Options{},
			[]string{"quorum: the config says 3, but its 3 endpoints make a quorum of 2"}},
		{"no user", func(f map[string]any) { delete(f, "username") }, redlock.Options{}, []string{"username: empty", "admin"}},
		{"the admin user default", func(f map[string]any) { f["username"], f["key_prefix"] = "default", "" }, redlock.Options{},
			[]string{`username: "default" is the deployment's admin user`, "client_config"}},
		{"the file's admin user", func(f map[string]any) { f["admin_username"], f["admin_password"] = "app1", "secret" }, redlock.Options{},
			[]string{`username: "app1" is the deployment's admin user`, "client_configs"}},
		{"no password", func(f map[string]any) { delete(f, "password") }, redlock.Options{},
			[]string{`password: empty for user "app1"`, "credentials_files"}},
		{"no max_lock_ttl", func(f map[string]any) { delete(f, "max_lock_ttl") }, redlock.Options{}, []string{"max_lock_ttl: missing"}},
		{"MaxTTL above max_lock_ttl", nil, redlock.Options{MaxTTL: time.Minute},
			[]string{"Options.MaxTTL 1m0s is above the deployment's max_lock_ttl 30s", "leave Options.MaxTTL zero"}},
		{"KeyPrefix outside the user's prefix", nil, redlock.Options{KeyPrefix: "app2:"},
			[]string{`Options.KeyPrefix "app2:" does not start with key_prefix "app1:"`, "NOPERM"}},
		{"a CA without TLS", func(f map[string]any) { f["ca_cert_pem"] = "x" }, redlock.Options{}, []string{"tls:", `"tls": true`}},
		{"a CA that is not one", func(f map[string]any) { f["tls"], f["ca_cert_pem"] = true, "not a certificate" }, redlock.Options{},
			[]string{"ca_cert_pem:", "PEM certificate of the deployment's CA"}},
		{"a negative option", nil, redlock.Options{NodeTimeout: -1}, []string{"Options.NodeTimeout"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeClientFile(t, clientFileJSON(tt.change))
			c, err := redlock.Open(path, tt.opts)
			if err == nil {
				_ = c.Close()
				t.Fatal("Open accepted it")
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("Open: %q does not name the file", err)
			}
			if tt.name != "a misspelt field" && !errors.Is(err, redlock.ErrInvalid) {
				t.Errorf("Open: %v, want ErrInvalid", err)
			}
			for _, m := range tt.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("Open: %q does not mention %q", err, m)
				}
			}
		})
	}
	t.Run("no file", func(t *testing.T) {
		_, err := redlock.Open(filepath.Join(t.TempDir(), "client.json"), redlock.Options{})
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Open: %v, want fs.ErrNotExist", err)
		}
	})
}

// TestOpenTakesTheDeploymentsSettings: the key prefix and max TTL come from the file
// unless the options narrow them; the go-redis clients have MasterOptions and the lock
// user; Close closes them.
func TestOpenTakesTheDeploymentsSettings(t *testing.T) {
	for _, tt := range []struct {
		name   string
		opts   redlock.Options
		prefix string
		maxTTL time.Duration
	}{
		{"from the file", redlock.Options{}, "app1:", 30 * time.Second},
		{"narrowed", redlock.Options{KeyPrefix: "app1:reports:", MaxTTL: 10 * time.Second}, "app1:reports:", 10 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := redlock.Open(writeClientFile(t, clientFileJSON(nil)), tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if prefix, maxTTL := redlock.KeyPrefixAndMaxTTL(c); prefix != tt.prefix || maxTTL != tt.maxTTL {
				t.Errorf("KeyPrefix %q, MaxTTL %v; want %q, %v", prefix, maxTTL, tt.prefix, tt.maxTTL)
			}
			if c.Quorum() != 2 {
				t.Errorf("Quorum() = %d, want 2", c.Quorum())
			}
			owned := redlock.OwnedClients(c)
			if len(owned) != 3 {
				t.Fatalf("%d go-redis clients, want 3", len(owned))
			}
			for i, rdb := range owned {
				o, want := rdb.Options(), redlock.MasterOptions("127.0.0.1:"+string(rune('1'+i)))
				if o.Addr != want.Addr || o.Username != "app1" || o.Password != "secret" || o.TLSConfig != nil ||
					o.MaxRetries != 0 /* go-redis keeps -1 as 0 */ || !o.ContextTimeoutEnabled || o.DialerRetries != 1 ||
					!o.DisableIdentity || o.MaintNotificationsConfig == nil || o.MaintNotificationsConfig.Mode != want.MaintNotificationsConfig.Mode {
					t.Errorf("client %d options: %+v", i, o)
				}
			}
			if err := c.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			for i, rdb := range owned {
				if err := rdb.Ping(context.Background()).Err(); !errors.Is(err, redis.ErrClosed) {
					t.Errorf("client %d after Close: %v, want redis.ErrClosed", i, err)
				}
			}
		})
	}
}
