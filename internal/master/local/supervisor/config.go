package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master"
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
}

// configJSON is the file format. restart_delay is written as a duration string ("31s") and
// read as either a duration string or a number of milliseconds.
type configJSON struct {
	Name          string          `json:"name"`
	ServerBinary  string          `json:"server_binary"`
	ConfigFile    string          `json:"config_file"`
	DataDir       string          `json:"data_dir"`
	Addr          string          `json:"addr"`
	AdminPassword string          `json:"admin_password"`
	RestartDelay  json.RawMessage `json:"restart_delay"`
	Hooks         Hooks           `json:"hooks"`
	TLSCACertFile string          `json:"tls_ca_cert_file,omitempty"`
}

// MarshalJSON writes the supervisor.json format.
func (c Config) MarshalJSON() ([]byte, error) {
	delay, err := json.Marshal(c.RestartDelay.String())
	if err != nil {
		return nil, err
	}
	return json.Marshal(configJSON{Name: c.Name, ServerBinary: c.ServerBinary, ConfigFile: c.ConfigFile,
		DataDir: c.DataDir, Addr: c.Addr, AdminPassword: c.AdminPassword, RestartDelay: delay, Hooks: c.Hooks,
		TLSCACertFile: c.TLSCACertFile})
}

// UnmarshalJSON reads the supervisor.json format; restart_delay may be "31s" or 31000 (ms).
func (c *Config) UnmarshalJSON(data []byte) error {
	var raw configJSON
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	delay, err := parseDelay(raw.RestartDelay)
	if err != nil {
		return err
	}
	*c = Config{Name: raw.Name, ServerBinary: raw.ServerBinary, ConfigFile: raw.ConfigFile, DataDir: raw.DataDir,
		Addr: raw.Addr, AdminPassword: raw.AdminPassword, RestartDelay: delay, Hooks: raw.Hooks,
		TLSCACertFile: raw.TLSCACertFile}
	return nil
}

func parseDelay(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("restart_delay %q: %w (use a duration like \"31s\" or milliseconds as a number)", s, err)
		}
		return d, nil
	}
	var ms json.Number
	if err := json.Unmarshal(raw, &ms); err != nil {
		return 0, fmt.Errorf("restart_delay %s: want a duration string like \"31s\" or milliseconds as a number", raw)
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
	case c.RestartDelay < 0:
		return fmt.Errorf("supervisor config: restart_delay %v is negative: use max lock TTL + drift margin", c.RestartDelay)
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
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, ConfigFileName), append(data, '\n'))
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
