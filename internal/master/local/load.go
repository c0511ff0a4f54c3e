package local

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// ErrNotAMaster marks a data dir that lacks the files Start writes.
var ErrNotAMaster = errors.New("not a redlock_master data dir")

// Loaded is a master rebuilt from the files in its data dir.
type Loaded struct {
	Master Master // Spec.Port is the port it listens on
	Addr   string // host:port it listens on, as supervisor.json has it
	// Startup is the safety settings its redis.conf starts it with. Refresh replaces them
	// with the live values when the master answers; for a held master nothing else is known.
	Startup Safety
}

// Load rebuilds the master in dir from redlock-master.json, supervisor.json and redis.conf
// (terraform import). The error wraps ErrNotAMaster when dir has no redlock-master.json.
func Load(dir string) (Loaded, error) {
	raw, err := os.ReadFile(filepath.Join(dir, RecordFileName))
	if err != nil {
		return Loaded{}, fmt.Errorf("%w: %s: %v (only data dirs created by redlock_master can be imported)", ErrNotAMaster, dir, err)
	}
	r, err := parseRecord(dir, raw)
	if err != nil {
		return Loaded{}, err
	}
	sc, err := supervisor.LoadConfig(dir)
	if err != nil {
		return Loaded{}, err
	}
	startup, err := startupSettings(filepath.Join(dir, RedisConfFileName))
	if err != nil {
		return Loaded{}, err
	}
	// The record holds what was configured; what a runtime needs parsed comes from it, and
	// name, admin password and hooks from supervisor.json, which the supervisor runs with.
	ttl, _ := time.ParseDuration(strings.TrimSpace(r.MaxLockTTL))
	margin, _ := time.ParseDuration(strings.TrimSpace(r.ClockDriftMargin))
	delay, _ := time.ParseDuration(strings.TrimSpace(r.RestartDelay))
	_, port := splitAddr(sc.Addr)
	var tlsMaterial *master.TLS
	if r.TLS {
		if tlsMaterial, err = readTLS(dir); err != nil {
			return Loaded{}, fmt.Errorf("the master serves TLS, but its TLS files cannot be read: %w", err)
		}
	}
	return Loaded{
		Master: Master{
			Spec: master.Spec{
				Name: sc.Name, Bind: r.Bind, Port: port, DataDir: dir, ServerBinary: r.ServerBinary,
				MaxLockTTL: ttl, ClockDriftMargin: margin, RestartDelay: delay,
				MaxMemory: r.MaxMemory, AppendFsync: r.AppendFsync,
				AllowUnsafeAppendFsync: r.AllowUnsafeAppendFsync, AllowNonLoopbackBind: r.AllowNonLoopbackBind,
				AdminPassword: sc.AdminPassword, LockUser: r.LockUser, LockPassword: r.LockPassword, LockUsers: r.lockUsers(), Hooks: sc.Hooks,
				MonitorUser: r.MonitorUser, MonitorPassword: r.MonitorPassword,
				TLS: tlsMaterial,
			},
			ZeroPort:          r.Port == 0,
			Written:           Written{MaxLockTTL: r.MaxLockTTL, ClockDriftMargin: r.ClockDriftMargin, RestartDelay: r.RestartDelay},
			KeepDataOnDestroy: r.KeepDataOnDestroy,
		},
		Addr:    sc.Addr,
		Startup: startup,
	}, nil
}

// startupSettings reads the safety settings a master starts with from its redis.conf: the
// last line of each wins, as in Redis, and a setting without a line has Redis's built-in
// default. replicaof is "host port" ("" when absent), as a live replica reports it.
func startupSettings(confPath string) (Safety, error) {
	raw, err := os.ReadFile(confPath)
	if err != nil {
		return Safety{}, fmt.Errorf("read the master's redis.conf: %w", err)
	}
	conf := map[string]string{"appendonly": "no", "appendfsync": "everysec", "no-appendfsync-on-rewrite": "no",
		"maxmemory-policy": "noeviction", "replicaof": ""}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		key := strings.ToLower(fields[0])
		if key == "slaveof" {
			key = "replicaof"
		}
		if _, ok := conf[key]; ok {
			conf[key] = strings.ToLower(strings.Trim(strings.Join(fields[1:], " "), `"'`))
		}
	}
	return Safety{AppendOnly: conf["appendonly"], AppendFsync: conf["appendfsync"],
		NoAppendfsyncOnRewrite: conf["no-appendfsync-on-rewrite"], MaxMemoryPolicy: conf["maxmemory-policy"],
		ReplicaOf: conf["replicaof"]}, sc.Err()
}
