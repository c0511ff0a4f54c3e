package supervisor

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func validConfig(dir string) Config {
	return Config{Name: "m1", ServerBinary: "redis-server", ConfigFile: dir + "/redis.conf", DataDir: dir,
		Addr: "127.0.0.1:7000", AdminPassword: "pw", RestartDelay: 31 * time.Second,
		Hooks: Hooks{OnCrash: []string{"/bin/true"}}}
}

func TestConfigRestartDelayJSON(t *testing.T) {
	tests := []struct {
		name, json string
		want       time.Duration
		wantErr    string
	}{
		{name: "duration string", json: `"31s"`, want: 31 * time.Second},
		{name: "fractional duration string", json: `"1.5s"`, want: 1500 * time.Millisecond},
		{name: "milliseconds as a number", json: `31000`, want: 31 * time.Second},
		{name: "absent means zero", json: `null`, want: 0},
		{name: "unit-less string refused", json: `"31"`, wantErr: "restart_delay"},
		{name: "fractional milliseconds refused", json: `1.5`, wantErr: "whole number"},
		{name: "boolean refused", json: `true`, wantErr: "restart_delay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Config
			err := json.Unmarshal([]byte(`{"name":"m","restart_delay":`+tt.json+`}`), &c)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.RestartDelay != tt.want {
				t.Fatalf("RestartDelay = %v, want %v", c.RestartDelay, tt.want)
			}
		})
	}
}

func TestWriteConfigRoundTrips(t *testing.T) {
	dir := t.TempDir()
	want := validConfig(dir)
	if err := WriteConfig(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.RestartDelay != want.RestartDelay || got.Addr != want.Addr || got.AdminPassword != want.AdminPassword ||
		got.DataDir != want.DataDir || strings.Join(got.Hooks.OnCrash, " ") != "/bin/true" {
		t.Fatalf("LoadConfig = %+v, want %+v", got, want)
	}
	st, err := statMode(dir + "/" + ConfigFileName)
	if err != nil || st != 0o600 {
		t.Fatalf("supervisor.json mode = %o (%v), want 600: it holds the admin password", st, err)
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		field  string
	}{
		{"no server binary", func(c *Config) { c.ServerBinary = "" }, "server_binary"},
		{"no config file", func(c *Config) { c.ConfigFile = "" }, "config_file"},
		{"relative data dir", func(c *Config) { c.DataDir = "data" }, "data_dir"},
		{"no admin password", func(c *Config) { c.AdminPassword = "" }, "admin_password"},
		{"negative delay", func(c *Config) { c.RestartDelay = -time.Second }, "restart_delay"},
		{"addr without port", func(c *Config) { c.Addr = "127.0.0.1" }, "addr"},
		{"hook without program", func(c *Config) { c.Hooks.AfterRestart = []string{""} }, "hooks.after_restart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig("/var/lib/redlock/m1")
			tt.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tt.field)
			}
		})
	}
	t.Run("valid", func(t *testing.T) {
		if err := validConfig("/var/lib/redlock/m1").Validate(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("write refuses a data_dir other than the target dir", func(t *testing.T) {
		c := validConfig("/somewhere/else")
		if err := WriteConfig(t.TempDir(), c); err == nil || !strings.Contains(err.Error(), "data_dir") {
			t.Fatalf("WriteConfig = %v, want an error naming data_dir", err)
		}
	})
}
