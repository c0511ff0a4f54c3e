package agentconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadFileThenEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.json")
	if err := os.WriteFile(path, []byte(`{"endpoints":["127.0.0.1:1","127.0.0.1:2","127.0.0.1:3"],
		"username":"redlock","password":"p","max_lock_ttl":"30s","restart_delay":31000,"quorum":2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxLockTTL.Duration != 30*time.Second || c.RestartDelay.Duration != 31*time.Second || c.QuorumSize() != 2 {
		t.Fatalf("got %+v", c)
	}
	env := map[string]string{"LOCKAGENT_ENDPOINTS": " a:1, b:2 ,c:3", "LOCKAGENT_PASSWORD": "q", "LOCKAGENT_MAX_LOCK_TTL": "5s"}
	if err := c.ApplyEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Endpoints, ",") != "a:1,b:2,c:3" || c.Password != "q" || c.MaxLockTTL.Duration != 5*time.Second {
		t.Fatalf("env not applied: %+v", c)
	}
}

func TestValidateNamesTheFieldAndFix(t *testing.T) {
	for name, tc := range map[string]struct {
		endpoints []string
		want      string
	}{
		"none":      {nil, "endpoints: none given"},
		"even":      {[]string{"a:1", "b:1", "c:1", "d:1"}, "odd number"},
		"one":       {[]string{"a:1"}, "at least 3"},
		"duplicate": {[]string{"a:1", "a:1", "b:1"}, "listed twice"},
		"no port":   {[]string{"a", "b:1", "c:1"}, "not host:port"},
	} {
		t.Run(name, func(t *testing.T) {
			err := (&Config{Endpoints: tc.endpoints}).Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	if err := (&Config{Endpoints: []string{"a:1", "b:1", "c:1"}}).Validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	t.Run("quorum not the endpoints' majority", func(t *testing.T) {
		err := (&Config{Endpoints: []string{"a:1", "b:1", "c:1"}, Quorum: 3}).Validate()
		if err == nil || !strings.Contains(err.Error(), "quorum: the config says 3, but its 3 endpoints make a quorum of 2") {
			t.Fatalf("Validate() = %v, want the quorum named", err)
		}
		if err := (&Config{Endpoints: []string{"a:1", "b:1", "c:1"}, Quorum: 2}).Validate(); err != nil {
			t.Fatalf("the endpoints' own quorum refused: %v", err)
		}
	})
}

func TestUnknownFieldIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.json")
	_ = os.WriteFile(path, []byte(`{"endpoint":["a:1"]}`), 0o600)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Fatalf("typo accepted: %v", err)
	}
}
