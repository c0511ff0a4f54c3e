package supervisor

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

func validConfig(dir string) Config {
	return Config{Name: "m1", ServerBinary: "redis-server", ConfigFile: dir + "/redis.conf", DataDir: dir,
		Addr: "127.0.0.1:7000", AdminPassword: "pw", RestartDelay: 31 * time.Second,
		Hooks: Hooks{OnCrash: []string{"/bin/true"}}}
}

func TestConfigRestartDelayJSON(t *testing.T) {
	tests := []struct {
		name, key, json string
		want            time.Duration
		wantErr         string
	}{
		{name: "milliseconds", key: hold.FieldRestartDelayMS, json: `31000`, want: 31 * time.Second},
		{name: "absent means zero", key: hold.FieldRestartDelayMS, json: `null`, want: 0},
		{name: "fractional milliseconds refused", key: hold.FieldRestartDelayMS, json: `1.5`, wantErr: "restart_delay_ms 1.5: want a whole number"},
		{name: "duration string refused", key: hold.FieldRestartDelayMS, json: `"31s"`, wantErr: "restart_delay_ms"},
		// The key earlier versions wrote.
		{name: "earlier key: duration string", key: "restart_delay", json: `"31s"`, want: 31 * time.Second},
		{name: "earlier key: fractional duration string", key: "restart_delay", json: `"1.5s"`, want: 1500 * time.Millisecond},
		{name: "earlier key: milliseconds as a number", key: "restart_delay", json: `31000`, want: 31 * time.Second},
		{name: "earlier key: unit-less string refused", key: "restart_delay", json: `"31"`, wantErr: "restart_delay"},
		{name: "earlier key: fractional milliseconds refused", key: "restart_delay", json: `1.5`, wantErr: "whole number"},
		{name: "earlier key: boolean refused", key: "restart_delay", json: `true`, wantErr: "restart_delay"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Config
			err := json.Unmarshal([]byte(`{"name":"m","`+tt.key+`":`+tt.json+`}`), &c)
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
	t.Run("both keys: restart_delay_ms wins", func(t *testing.T) {
		var c Config
		if err := json.Unmarshal([]byte(`{"restart_delay":"5s","restart_delay_ms":7000}`), &c); err != nil {
			t.Fatal(err)
		}
		if c.RestartDelay != 7*time.Second {
			t.Fatalf("RestartDelay = %v, want 7s (restart_delay_ms)", c.RestartDelay)
		}
	})
}

// supervisorJSONKeys returns the keys of the supervisor.json in dir.
func supervisorJSONKeys(t *testing.T, dir string) map[string]json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ConfigFileName))
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		t.Fatal(err)
	}
	return keys
}

func TestWriteConfigSpellsTheDelayAsTheHostDoes(t *testing.T) {
	dir := t.TempDir()
	c := validConfig(dir)
	c.RestartDelay = 31*time.Second + 500*time.Microsecond
	if err := WriteConfig(dir, c); err != nil {
		t.Fatal(err)
	}
	keys := supervisorJSONKeys(t, dir)
	// Rounded up: written to disk, a delay never gets shorter.
	if got := string(keys[hold.FieldRestartDelayMS]); got != "31001" {
		t.Fatalf("%s = %q, want 31001 (whole milliseconds, rounded up)", hold.FieldRestartDelayMS, got)
	}
	if _, ok := keys["restart_delay"]; ok {
		t.Fatal("a new supervisor.json has the earlier key restart_delay too: one spelling per setting")
	}
}

// A supervisor.json exactly as earlier versions wrote it.
const earlierSupervisorJSON = `{
  "name": "m1",
  "server_binary": "/usr/bin/redis-server",
  "config_file": "%[1]s/redis.conf",
  "data_dir": "%[1]s",
  "addr": "127.0.0.1:7000",
  "admin_password": "pw",
  "restart_delay": "31s",
  "hooks": {}
}
`

func TestLoadConfigWrittenByAnEarlierVersion(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ConfigFileName), []byte(fmt.Sprintf(earlierSupervisorJSON, dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.RestartDelay != 31*time.Second || c.Addr != "127.0.0.1:7000" || c.ServerBinary != "/usr/bin/redis-server" {
		t.Fatalf("LoadConfig = %+v, want restart delay 31s from restart_delay", c)
	}
}

func TestWriteConfigKeepsTheEarlierKeyWhileASupervisorRuns(t *testing.T) {
	writeEarlier := func(t *testing.T) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, ConfigFileName), []byte(fmt.Sprintf(earlierSupervisorJSON, dir)), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Run("no supervisor runs: the earlier key goes", func(t *testing.T) {
		dir := writeEarlier(t)
		if err := WriteConfig(dir, validConfig(dir)); err != nil {
			t.Fatal(err)
		}
		if _, ok := supervisorJSONKeys(t, dir)["restart_delay"]; ok {
			t.Fatal("restart_delay kept with no supervisor running")
		}
	})
	t.Run("a supervisor runs: the earlier key stays, same value", func(t *testing.T) {
		dir := writeEarlier(t)
		// A process whose command line reads "supervise <dir>", named by the lock file,
		// stands in for a supervisor of an earlier version (it reads only restart_delay).
		sup := exec.Command("/bin/sh", "-c", "read -r _", "supervise", dir)
		stdin, err := sup.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := sup.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = stdin.Close(); _ = sup.Process.Kill(); _ = sup.Wait() })
		if err := os.WriteFile(filepath.Join(dir, LockFileName), []byte(strconv.Itoa(sup.Process.Pid)), 0o600); err != nil {
			t.Fatal(err)
		}
		c := validConfig(dir)
		c.RestartDelay = 45 * time.Second
		if err := WriteConfig(dir, c); err != nil {
			t.Fatal(err)
		}
		keys := supervisorJSONKeys(t, dir)
		earlier, err := parseLegacyDelay(keys["restart_delay"])
		if err != nil || earlier != c.RestartDelay {
			t.Fatalf("restart_delay = %s (%v, %v), want %v: an earlier supervisor would reload a wrong delay", keys["restart_delay"], earlier, err, c.RestartDelay)
		}
		if got, err := LoadConfig(dir); err != nil || got.RestartDelay != c.RestartDelay {
			t.Fatalf("LoadConfig = %v, %v; want restart delay %v", got.RestartDelay, err, c.RestartDelay)
		}
	})
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
