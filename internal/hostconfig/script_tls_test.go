package hostconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestStopOverTLS runs the policy script's stop step against a real TLS-only master: its
// redis-cli calls use TLS with the CA file master.conf names, so the AOF is rewritten and
// the SHUTDOWN reaches the server. Without the CA file the CLI speaks plain text and
// reaches nothing.
func TestStopOverTLS(t *testing.T) {
	for _, tc := range []struct {
		name     string
		withCA   bool
		stopped  bool
		wantLog  string
		denyLogs string
	}{
		{name: "with the CA: rewrite and shutdown over TLS", withCA: true, stopped: true, denyLogs: "could not rewrite the AOF"},
		{name: "without it: plain text reaches nothing", withCA: false, stopped: false, wantLog: "could not rewrite the AOF before the stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := redistest.Start(t, redistest.Options{Masters: 1, TLS: true, ACLFile: true})
			m := c.Masters[0]
			p := newPolicy(t, time.Second)
			hostAdminConf, _ := withHostAdmin(t, p, m)
			caFile := filepath.Join(p.dir, "ca.crt")
			if err := os.WriteFile(caFile, []byte(c.CACertPEM), 0o600); err != nil {
				t.Fatal(err)
			}
			spec := master.Spec{Name: "m1", Bind: m.Host, Port: m.Port, DataDir: p.dataDir, RestartDelay: time.Second,
				TLS: &master.TLS{CACertPEM: c.CACertPEM}}
			conf := masterConf(spec, Servers["redis-server"], "/nonexistent", "", "", false)
			if !strings.Contains(conf, "TLS_CA_FILE='/etc/redlock/tls-ca.crt'\n") {
				t.Fatalf("master.conf of a TLS master does not name the CA file:\n%s", conf)
			}
			// The host's paths, moved into the test's dir (a later assignment wins in sh).
			conf += hostAdminConf
			if tc.withCA {
				conf += "TLS_CA_FILE=" + shellQuote(caFile) + "\n"
			} else {
				conf += "TLS_CA_FILE=''\n"
			}
			if err := os.WriteFile(filepath.Join(p.dir, "master.conf"), []byte(conf), 0o644); err != nil {
				t.Fatal(err)
			}
			log, _ := p.run("stop")
			if tc.wantLog != "" && !strings.Contains(log, tc.wantLog) {
				t.Errorf("stop log lacks %q:\n%s", tc.wantLog, log)
			}
			if tc.denyLogs != "" && strings.Contains(log, tc.denyLogs) {
				t.Errorf("stop log has %q:\n%s", tc.denyLogs, log)
			}
			deadline := time.Now().Add(10 * time.Second)
			for m.Running() && time.Now().Before(deadline) && tc.stopped {
				time.Sleep(20 * time.Millisecond)
			}
			if m.Running() == tc.stopped {
				t.Fatalf("after the stop step the master is running = %v, want %v\n%s", m.Running(), !tc.stopped, log)
			}
		})
	}
}
