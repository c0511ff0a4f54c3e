// Package agentconfig reads the JSON the redlock-cluster module writes (its agent_config
// output) and overlays LOCKAGENT_* environment variables, so every lockagent command and
// every test reads a deployment the same way.
package agentconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config describes a deployment to lock against and to audit.
type Config struct {
	// Endpoints are the masters, "host:port" each. Required; odd count >= 3 for Redlock.
	Endpoints []string `json:"endpoints"`
	// Username/Password: the restricted lock user every lock client uses.
	Username string `json:"username"`
	Password string `json:"password"`
	// AdminUsername/AdminPassword: used only by the audit (CONFIG GET, INFO).
	// KeyPrefix is the lock user's key prefix (one lock user per application, each
	// confined to its prefix): every lock name is prefixed with it. Empty for a
	// deployment with a single lock user.
	KeyPrefix     string `json:"key_prefix,omitempty"`
	AdminUsername string `json:"admin_username,omitempty"`
	AdminPassword string `json:"admin_password,omitempty"`
	// TLS connects with TLS, verifying the masters against the CA in CACertPEM (inline) or
	// CACertFile (a path), or the system's roots when neither is given (see ClientTLS).
	TLS        bool   `json:"tls,omitempty"`
	CACertPEM  string `json:"ca_cert_pem,omitempty"`
	CACertFile string `json:"ca_cert_file,omitempty"`
	// MaxLockTTL is the largest TTL clients may use; RestartDelay how long a crashed
	// master stays down. Both are Go durations ("30s") in JSON.
	MaxLockTTL   Duration `json:"max_lock_ttl"`
	RestartDelay Duration `json:"restart_delay,omitempty"`
	Quorum       int      `json:"quorum,omitempty"`
}

// Duration is a time.Duration written as a Go duration string in JSON ("30s").
// Integers are read as milliseconds.
type Duration struct{ time.Duration }

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var ms int64
		if err2 := json.Unmarshal(b, &ms); err2 != nil {
			return fmt.Errorf("want a duration such as \"30s\": %w", err)
		}
		d.Duration = time.Duration(ms) * time.Millisecond
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as \"30s\": %w", err)
	}
	d.Duration = v
	return nil
}

// Load reads path ("" means none) and then applies the environment (see ApplyEnv).
func Load(path string) (*Config, error) {
	c := &Config{}
	if path != "" {
		var err error
		if c, err = Read(path); err != nil {
			return nil, err
		}
	}
	if err := c.ApplyEnv(os.LookupEnv); err != nil {
		return nil, err
	}
	return c, nil
}

// Read reads the config at path as the modules write it, and nothing else: no
// environment, no field it does not know (a misspelt field is an error, not a default).
func Read(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agent config: %w", err)
	}
	c := &Config{}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, fmt.Errorf("agent config %s: %w", path, err)
	}
	return c, nil
}

// ApplyEnv overlays LOCKAGENT_ENDPOINTS (comma-separated), LOCKAGENT_USERNAME,
// LOCKAGENT_PASSWORD, LOCKAGENT_KEY_PREFIX, LOCKAGENT_ADMIN_USERNAME, LOCKAGENT_ADMIN_PASSWORD,
// LOCKAGENT_TLS, LOCKAGENT_CACERT (a CA file; implies TLS), LOCKAGENT_MAX_LOCK_TTL and
// LOCKAGENT_RESTART_DELAY onto c.
func (c *Config) ApplyEnv(lookup func(string) (string, bool)) error {
	if v, ok := lookup("LOCKAGENT_ENDPOINTS"); ok && v != "" {
		c.Endpoints = SplitList(v)
	}
	for name, dst := range map[string]*string{"LOCKAGENT_USERNAME": &c.Username, "LOCKAGENT_PASSWORD": &c.Password,
		"LOCKAGENT_KEY_PREFIX":     &c.KeyPrefix,
		"LOCKAGENT_ADMIN_USERNAME": &c.AdminUsername, "LOCKAGENT_ADMIN_PASSWORD": &c.AdminPassword} {
		if v, ok := lookup(name); ok && v != "" {
			*dst = v
		}
	}
	if v, ok := lookup("LOCKAGENT_TLS"); ok && v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("LOCKAGENT_TLS=%q: want true or false", v)
		}
		c.TLS = b
	}
	if v, ok := lookup("LOCKAGENT_CACERT"); ok && v != "" {
		c.CACertFile, c.CACertPEM, c.TLS = v, "", true
	}
	for name, dst := range map[string]*Duration{"LOCKAGENT_MAX_LOCK_TTL": &c.MaxLockTTL, "LOCKAGENT_RESTART_DELAY": &c.RestartDelay} {
		if v, ok := lookup(name); ok && v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s=%q: want a duration such as 30s", name, v)
			}
			dst.Duration = d
		}
	}
	return nil
}

// Validate reports the first problem that makes c unusable, naming the field and the fix.
func (c *Config) Validate() error {
	if len(c.Endpoints) == 0 {
		return errors.New("endpoints: none given; pass --endpoints host:port,... or -c agent.json or LOCKAGENT_ENDPOINTS")
	}
	if len(c.Endpoints)%2 == 0 {
		return fmt.Errorf("endpoints: %d masters given; Redlock needs an odd number >= 3 (a majority of an even count tolerates no more failures than one fewer)", len(c.Endpoints))
	}
	if len(c.Endpoints) < 3 {
		return fmt.Errorf("endpoints: %d masters given; Redlock needs at least 3 independent masters", len(c.Endpoints))
	}
	seen := map[string]bool{}
	for _, e := range c.Endpoints {
		if !strings.Contains(e, ":") {
			return fmt.Errorf("endpoints: %q is not host:port", e)
		}
		if seen[e] {
			return fmt.Errorf("endpoints: %q is listed twice; every master must be independent", e)
		}
		seen[e] = true
	}
	if c.Quorum != 0 && c.Quorum != c.QuorumSize() {
		return fmt.Errorf("quorum: the config says %d, but its %d endpoints make a quorum of %d: use the config the module wrote for this deployment (an endpoint was dropped or added by hand)",
			c.Quorum, len(c.Endpoints), c.QuorumSize())
	}
	if c.MaxLockTTL.Duration < 0 {
		return errors.New("max_lock_ttl: must not be negative")
	}
	return c.checkTLS()
}

// QuorumSize is N/2+1 for the configured endpoints.
func (c *Config) QuorumSize() int { return len(c.Endpoints)/2 + 1 }

// SplitList splits a comma-separated list, dropping blanks and spaces.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
