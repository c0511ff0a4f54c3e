package local

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// TestLoadReadsTheRecordFormat: a data dir written before the runtime moved here (the JSON
// below is what the provider wrote, supervisor.json included) still loads, with the values
// as they were written.
func TestLoadReadsTheRecordFormat(t *testing.T) {
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, RecordFileName), `{
  "name": "m1",
  "bind": "127.0.0.1",
  "allow_non_loopback_bind": false,
  "port": 0,
  "data_dir": "`+dir+`",
  "server_binary": "redis-server",
  "max_lock_ttl": "1m",
  "clock_drift_margin": "1s",
  "restart_delay": "61s",
  "maxmemory": "64mb",
  "appendfsync": "always",
  "allow_unsafe_appendfsync": false,
  "lock_user": "redlock",
  "lock_password": "lock-password-0123456789",
  "keep_data_on_destroy": true
}
`)
	writeTestFile(t, filepath.Join(dir, RedisConfFileName), "appendonly yes\nappendfsync always\n")
	// supervisor.json as earlier versions wrote it: the restart delay as restart_delay.
	writeTestFile(t, filepath.Join(dir, supervisor.ConfigFileName), `{
  "name": "m1",
  "server_binary": "/usr/bin/redis-server",
  "config_file": "`+filepath.Join(dir, RedisConfFileName)+`",
  "data_dir": "`+dir+`",
  "addr": "127.0.0.1:7001",
  "admin_password": "admin-password-0123456789",
  "restart_delay": "61s",
  "hooks": {
    "on_crash": [
      "/bin/true"
    ]
  }
}
`)
	if c, err := supervisor.LoadConfig(dir); err != nil || c.RestartDelay != 61*time.Second {
		t.Fatalf("supervisor.json of an earlier version: restart delay %v, %v; want 61s", c.RestartDelay, err)
	}
	l, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, s := l.Master, l.Master.Spec
	switch {
	case l.Addr != "127.0.0.1:7001" || s.Port != 7001 || !m.ZeroPort:
		t.Errorf("address %s, port %d, zero port %v: want 127.0.0.1:7001, 7001, true", l.Addr, s.Port, m.ZeroPort)
	case m.Written != Written{MaxLockTTL: "1m", ClockDriftMargin: "1s", RestartDelay: "61s"}:
		t.Errorf("written %+v: want the durations as the record has them", m.Written)
	case s.MaxLockTTL != time.Minute || s.ClockDriftMargin != time.Second || s.RestartDelay != 61*time.Second:
		t.Errorf("durations %s %s %s", s.MaxLockTTL, s.ClockDriftMargin, s.RestartDelay)
	case s.AdminPassword != "admin-password-0123456789" || s.LockPassword != "lock-password-0123456789" || s.Name != "m1":
		t.Errorf("name and passwords not loaded: %+v", s)
	case len(s.Hooks.OnCrash) != 1 || !m.KeepDataOnDestroy || s.ServerBinary != "redis-server":
		t.Errorf("hooks %v, keep data %v, server binary %q", s.Hooks, m.KeepDataOnDestroy, s.ServerBinary)
	case l.Startup != Safety{AppendOnly: "yes", AppendFsync: "always", NoAppendfsyncOnRewrite: "no", MaxMemoryPolicy: "noeviction"}:
		t.Errorf("startup settings %+v", l.Startup)
	}

	// Written back, the record is the same file.
	before, _ := os.ReadFile(filepath.Join(dir, RecordFileName))
	r := newRecord(m)
	r.DataDir = dir
	if got, want := r, mustParse(t, dir, before); !reflect.DeepEqual(got, want) {
		t.Errorf("record written back %+v, want %+v", got, want)
	}
}

func TestLoadRefusesADirWithoutRecord(t *testing.T) {
	if _, err := Load(t.TempDir()); !errors.Is(err, ErrNotAMaster) {
		t.Fatalf("Load of an empty dir: %v, want ErrNotAMaster", err)
	}
}

func mustParse(t *testing.T, dir string, raw []byte) record {
	t.Helper()
	r, err := parseRecord(dir, raw)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func writeTestFile(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
