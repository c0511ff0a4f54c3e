package supervisor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

// Files the supervisor owns inside a master's data dir.
const (
	ConfigFileName  = "supervisor.json"
	StateFileName   = "supervisor.state"
	LogFileName     = "supervisor.log"
	LockFileName    = "supervisor.lock"
	CleanMarkerName = "clean-shutdown"
)

// Hooks are the master's restart-policy hooks (master.Hooks: one definition for every
// runtime, same supervisor.json shape). The supervisor kills a hook after HookTimeout and
// writes its output to supervisor.log.
type Hooks = master.Hooks

// Config is what the supervisor of one master needs. The provider writes it with WriteConfig
// as <data_dir>/supervisor.json (mode 0600: it holds the admin password); SIGHUP makes a
// running supervisor reload it.
type Config struct {
	Name          string // master name, for logs and hooks
	ServerBinary  string // redis-server or valkey-server (path or name on PATH)
	ConfigFile    string // redis.conf the server is started with
	DataDir       string // the master's data dir; must be the dir the file lives in
	Addr          string // host:port the server listens on, for the PING health check
	AdminPassword string // password of the default user, for PING (and SHUTDOWN in Stop)
	// RestartDelay is how long a crashed master stays down, counted from the last moment it
	// was seen alive: a bit more than the largest lock TTL in use (max TTL + drift margin).
	RestartDelay time.Duration
	Hooks        Hooks
	// TLSCACertFile, when set, is the CA file of a master that serves TLS only: the health
	// check, SHUTDOWN and the AOF compaction connect with TLS trusting it.
	TLSCACertFile string
	// ConfigSHA256 is the hex sha256 of ConfigFile as the provider rendered it ("": not
	// checked). The supervisor compares the file on disk with it and publishes any drift in
	// the deployment record: the next start of the server would load the file on disk.
	ConfigSHA256 string
	// AddressRecords is the dir of the address records ("": /run/redlock-kit/addresses for
	// root, else /tmp/redlock-kit-<uid>/addresses). Every supervisor of the machine must use
	// the same one: a master is held for another data dir's master that served on its
	// address only when both write there.
	AddressRecords string
}

// configJSON is the file format. The restart delay is hold.FieldRestartDelayMS, whole
// milliseconds, the name and unit the host's master.conf and the deployment record use.
// Earlier versions wrote it as restart_delay, a duration string ("31s"): a file with only
// that key still loads, and keeps it while a supervisor runs (see keepLegacyDelay).
type configJSON struct {
	Name           string          `json:"name"`
	ServerBinary   string          `json:"server_binary"`
	ConfigFile     string          `json:"config_file"`
	DataDir        string          `json:"data_dir"`
	Addr           string          `json:"addr"`
	AdminPassword  string          `json:"admin_password"`
	RestartDelayMS json.RawMessage `json:"restart_delay_ms,omitempty"`
	ConfigSHA256   string          `json:"config_sha256,omitempty"`
	// LegacyRestartDelay is restart_delay as earlier versions wrote and read it.
	LegacyRestartDelay json.RawMessage `json:"restart_delay,omitempty"`
	Hooks              Hooks           `json:"hooks"`
	TLSCACertFile      string          `json:"tls_ca_cert_file,omitempty"`
	AddressRecords     string          `json:"address_records,omitempty"`
}

// legacyRestartDelayKey is the restart delay's key in the supervisor.json of earlier versions.
const legacyRestartDelayKey = "restart_delay"

// MarshalJSON writes the supervisor.json format.
func (c Config) MarshalJSON() ([]byte, error) { return encodeConfig(c, false) }

// encodeConfig is the supervisor.json format of c; withLegacyDelay adds the restart delay
// under the key earlier versions read too.
func encodeConfig(c Config, withLegacyDelay bool) ([]byte, error) {
	raw := configJSON{Name: c.Name, ServerBinary: c.ServerBinary, ConfigFile: c.ConfigFile,
		DataDir: c.DataDir, Addr: c.Addr, AdminPassword: c.AdminPassword,
		RestartDelayMS: json.RawMessage(strconv.FormatInt(delayMS(c.RestartDelay), 10)), Hooks: c.Hooks,
		TLSCACertFile: c.TLSCACertFile, ConfigSHA256: c.ConfigSHA256, AddressRecords: c.AddressRecords}
	if withLegacyDelay {
		legacy, err := json.Marshal(c.RestartDelay.String())
		if err != nil {
			return nil, err
		}
		raw.LegacyRestartDelay = legacy
	}
	return json.Marshal(raw)
}

// delayMS is d in whole milliseconds, rounded up: written to disk, a delay never shortens.
func delayMS(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// UnmarshalJSON reads the supervisor.json format: restart_delay_ms, else (a file written by
// an earlier version) restart_delay, "31s" or 31000 (ms).
func (c *Config) UnmarshalJSON(data []byte) error {
	var raw configJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	delay, err := parseDelayMS(raw.RestartDelayMS)
	if len(raw.RestartDelayMS) == 0 {
		delay, err = parseLegacyDelay(raw.LegacyRestartDelay)
	}
	if err != nil {
		return err
	}
	*c = Config{Name: raw.Name, ServerBinary: raw.ServerBinary, ConfigFile: raw.ConfigFile, DataDir: raw.DataDir,
		Addr: raw.Addr, AdminPassword: raw.AdminPassword, RestartDelay: delay, Hooks: raw.Hooks,
		TLSCACertFile: raw.TLSCACertFile, ConfigSHA256: raw.ConfigSHA256, AddressRecords: raw.AddressRecords}
	return nil
}

// parseDelayMS reads restart_delay_ms: a whole number of milliseconds.
func parseDelayMS(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s %s: want a whole number of milliseconds, e.g. 31000", hold.FieldRestartDelayMS, raw)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// parseLegacyDelay reads restart_delay as earlier versions wrote it.
func parseLegacyDelay(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("restart_delay %q: %w (use %s, a whole number of milliseconds)", s, err, hold.FieldRestartDelayMS)
		}
		return d, nil
	}
	var ms json.Number
	if err := json.Unmarshal(raw, &ms); err != nil {
		return 0, fmt.Errorf("restart_delay %s: want a duration string like \"31s\" (or use %s, a whole number of milliseconds)", raw, hold.FieldRestartDelayMS)
	}
	n, err := strconv.ParseInt(ms.String(), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("restart_delay %s: milliseconds must be a whole number", raw)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// Validate reports the first field that would stop the supervisor from doing its job, and how
// to fix it.
func (c Config) Validate() error {
	switch {
	case c.ServerBinary == "":
		return errors.New("supervisor config: server_binary is empty: set it to redis-server (or valkey-server)")
	case c.ConfigFile == "":
		return errors.New("supervisor config: config_file is empty: set it to the master's redis.conf")
	case c.DataDir == "":
		return errors.New("supervisor config: data_dir is empty: set it to the master's data dir")
	case !filepath.IsAbs(c.DataDir):
		return fmt.Errorf("supervisor config: data_dir %q is relative: use an absolute path", c.DataDir)
	case c.AdminPassword == "":
		return errors.New("supervisor config: admin_password is empty: the health check needs the admin password")
	case c.RestartDelay <= 0 || c.RestartDelay > hold.MaxRestartDelay:
		return fmt.Errorf("supervisor config: %s %d is missing or not in 1..%d: use max lock TTL + drift margin in whole milliseconds, e.g. 31000",
			hold.FieldRestartDelayMS, c.RestartDelay.Milliseconds(), hold.MaxRestartDelay.Milliseconds())
	}
	if _, port, err := net.SplitHostPort(c.Addr); err != nil || port == "" {
		return fmt.Errorf("supervisor config: addr %q is not host:port: set it to the address redis-server listens on", c.Addr)
	}
	for name, argv := range map[string][]string{"on_crash": c.Hooks.OnCrash,
		"before_restart": c.Hooks.BeforeRestart, "after_restart": c.Hooks.AfterRestart} {
		if len(argv) > 0 && argv[0] == "" {
			return fmt.Errorf("supervisor config: hooks.%s has an empty program name: give argv, e.g. [\"/bin/sh\",\"-c\",\"...\"]", name)
		}
	}
	return nil
}

// WriteConfig validates c and stores it as <dataDir>/supervisor.json (0600), replacing any
// previous file atomically. c.DataDir defaults to dataDir and must name the same dir.
func WriteConfig(dataDir string, c Config) error {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return fmt.Errorf("supervisor: data dir %q: %w", dataDir, err)
	}
	if c.DataDir == "" {
		c.DataDir = dir
	}
	if filepath.Clean(c.DataDir) != dir {
		return fmt.Errorf("supervisor config: data_dir %q differs from the dir the config is written to (%s): they must be the same", c.DataDir, dir)
	}
	if err := c.Validate(); err != nil {
		return err
	}
	data, err := encodeConfig(c, keepLegacyDelay(dir))
	if err != nil {
		return err
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, data, "", "  "); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, ConfigFileName), append(indented.Bytes(), '\n'))
}

// LoadConfig reads and validates <dataDir>/supervisor.json.
func LoadConfig(dataDir string) (Config, error) {
	path := filepath.Join(dataDir, ConfigFileName)
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("supervisor: read config: %w", err)
	}
	var c Config
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, fmt.Errorf("supervisor: %s: %w", path, err)
	}
	if c.DataDir == "" {
		if c.DataDir, err = filepath.Abs(dataDir); err != nil {
			return Config{}, fmt.Errorf("supervisor: data dir %q: %w", dataDir, err)
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// keepLegacyDelay reports whether the supervisor.json in the absolute dir has the restart
// delay under its earlier key while a supervisor runs there. That supervisor may be of an
// earlier version: it reloads the file on SIGHUP and reads only that key (a missing one is a
// delay of 0), so the replacement keeps the key, same value. Once none runs (the next start
// spawns one of this version), the key goes.
func keepLegacyDelay(dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, ConfigFileName))
	if err != nil {
		return false
	}
	var keys map[string]json.RawMessage
	if json.Unmarshal(data, &keys) != nil {
		return false
	}
	if _, ok := keys[legacyRestartDelayKey]; !ok {
		return false
	}
	st, _ := ReadState(dir)
	return len(supervisorPIDs(dir, st)) > 0
}
