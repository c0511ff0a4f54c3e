package supervisor

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// MetricsFileName is the file in the data dir where the supervisor publishes its master's
// metrics in the Prometheus text format, for node_exporter's textfile collector
// (--collector.textfile.directory) or any exporter that reads such files. It is replaced
// atomically (temp file + rename) with the state, on every status change and at least every
// second while the master runs, so a reader never sees a torn file. It holds no secret.
const MetricsFileName = "metrics.prom"

// metric is one line of the metrics file, with its HELP and TYPE.
type metric struct {
	name, typ, help string
	value           float64
}

// metricsText renders the supervisor's metrics for master name. Every metric carries the
// label master="<name>", so that the files of several masters can sit side by side in one
// textfile-collector directory. The HELP texts are identical in every file (the collector
// refuses families whose HELP differs between files).
func metricsText(name string, st State, cfg Config) string {
	unix := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return float64(t.UnixNano()) / 1e9
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	holding := st.Status == StatusHolding
	holdUntil := 0.0
	if holding {
		holdUntil = unix(st.RestartAt)
	}
	metrics := []metric{
		{"redlock_master_up", "gauge",
			"1 while the master's redis-server runs and answers PING, else 0.", b2f(st.Status == StatusRunning)},
		{"redlock_master_holding", "gauge",
			"1 while a crashed (or uncleanly stopped) master is held down before its restart, else 0.", b2f(holding)},
		{"redlock_master_hold_until_seconds", "gauge",
			"Unix time at which the current hold ends and the master restarts; 0 when not holding.", holdUntil},
		{"redlock_master_crashes_total", "counter",
			"Crashes of the master (redis-server exited uncleanly, or an unclean stop found when the supervisor started), over the data dir's life.", float64(st.Crashes)},
		{"redlock_master_restarts_total", "counter",
			"Restarts of the master after a crash or an unclean stop (counted once the restarted master answers), over the data dir's life.", float64(st.Restarts)},
		{"redlock_master_last_exit_seconds", "gauge",
			"Unix time of the last exit of the master's redis-server seen by its supervisor (the last moment it was seen alive for an unclean stop found at start); 0 when none yet.", unix(st.LastExit)},
		// Seconds, although the delay is whole milliseconds on disk, on the wire and in hooks:
		// seconds are Prometheus's base unit for time (the host script's metric agrees).
		{"redlock_master_restart_delay_seconds", "gauge",
			"How long a crashed master is held down (the configured restart delay).", cfg.RestartDelay.Seconds()},
		{"redlock_master_supervised", "gauge",
			"1 while the master's supervisor runs, 0 once it has exited (then the other values are the last ones it saw).", b2f(st.Status != StatusStopped)},
	}
	label := `{master="` + escapeLabel(name) + `"}`
	var b strings.Builder
	for _, m := range metrics {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s%s %s\n", m.name, m.help, m.name, m.typ, m.name, label,
			formatFloat(m.value))
	}
	return b.String()
}

// escapeLabel escapes a label value for the text format: backslash, double quote, newline.
func escapeLabel(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// writeMetrics replaces <dataDir>/metrics.prom (temp file + rename), readable by all (0644):
// an exporter often runs as another user, and the file holds no secret (the data dir itself
// stays 0700). It is not fsynced: it is rewritten every second while the master runs, and the
// state file, not this one, is what the restart policy trusts.
func writeMetrics(dataDir, text string) error {
	if err := replaceFile(filepath.Join(dataDir, MetricsFileName), []byte(text), 0o644, false); err != nil {
		return fmt.Errorf("supervisor: write metrics: %w", err)
	}
	return nil
}
