package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDurableExitReadsThePidsOwnShutdown: only a shutdown of that pid, since its last start,
// that fsynced the AOF and got to "ready to exit" proves a durable stop.
func TestDurableExitReadsThePidsOwnShutdown(t *testing.T) {
	const start = "42:C 25 Nov 2026 22:41:21.420 # oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo\n"
	const fsync = "42:M 25 Nov 2026 22:41:22.013 * Calling fsync() on the AOF file.\n"
	const ready = "42:M 25 Nov 2026 22:41:22.015 # Redis is now ready to exit, bye bye...\n"
	for _, tc := range []struct {
		name, log string
		durable   bool
	}{
		{"fsync then ready to exit", start + fsync + ready, true},
		{"ready to exit with the AOF off", start + ready, false},
		{"killed: no ready to exit", start + fsync, false},
		{"another pid's shutdown", strings.ReplaceAll(start+fsync+ready, "42:", "43:"), false},
		{"an earlier process with the same pid", start + fsync + ready + start, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			logPath := filepath.Join(dir, "redis.log")
			conf := filepath.Join(dir, "redis.conf")
			if err := os.WriteFile(conf, []byte("port 1\nlogfile \""+logPath+"\"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(logPath, []byte(tc.log), 0o600); err != nil {
				t.Fatal(err)
			}
			why := durableExit(Config{ConfigFile: conf, DataDir: dir}, 42)
			if (why == "") != tc.durable {
				t.Fatalf("durableExit = %q, want durable %v", why, tc.durable)
			}
		})
	}
}
