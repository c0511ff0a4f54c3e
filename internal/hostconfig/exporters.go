package hostconfig

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/redlock-kit/redlock-kit/internal/master"
)

// The Prometheus exporters a host runs, from Debian's packages, each under the package's own
// unit (User=prometheus), extended by a drop-in.
const (
	RedisExporterPackage = "prometheus-redis-exporter"
	NodeExporterPackage  = "prometheus-node-exporter"
	// RedisExporterEnvPath holds the exporter's address and user, rendered, and its password,
	// which the host makes at first boot (root-only: systemd reads it before the unit drops to
	// the prometheus user). That password is one more of the monitoring user's, as the host's
	// admin password is the admin's: it never leaves the host, and the user-data holds none.
	RedisExporterEnvPath = ConfDir + "/redis-exporter.env"
	// TextfileDir is node_exporter's textfile collector directory (Debian's default).
	TextfileDir = "/var/lib/prometheus/node-exporter"
	// StateMetricsPath is where the host's restart policy publishes the master's state for the
	// textfile collector (docs/monitoring.md lists the metrics).
	StateMetricsPath = TextfileDir + "/redlock.prom"
	// RedisExporterPort and NodeExporterPort are the packages' default listen ports.
	RedisExporterPort = 9121
	NodeExporterPort  = 9100
)

// RedisExporterArgs are the flags the redis exporter runs with: the monitoring user may not
// CLIENT SETNAME or CONFIG GET, and each refused attempt would count as an error on the master.
// With TLS (caFile not "") it verifies the server against the deployment's CA.
func RedisExporterArgs(caFile string) []string {
	args := []string{"-set-client-name=false", "-config-command=-"}
	if caFile != "" {
		args = append(args, "-tls-ca-cert-file="+caFile)
	}
	return args
}

// redisExporterDropInPath is the drop-in that gives the package's unit its environment file.
const redisExporterDropInPath = "/etc/systemd/system/" + RedisExporterPackage + ".service.d/redlock.conf"

// exporterFiles are the files the exporters need: the redis exporter's environment (its
// address, TLS when on, the monitoring user; the setup step adds the host's own password for
// that user) and the drop-in that loads it. node_exporter needs none: Debian's unit reads the
// textfile directory by default.
func exporterFiles(spec master.Spec) ([]File, error) {
	if spec.MonitorPassword == "" {
		return nil, &master.FieldError{Field: "monitor_password_sha256", Summary: "Exporters need the monitoring user",
			Detail: "exporters are on but the monitoring user is not defined: give monitor_password_sha256 (a redlock_credentials " +
				"lock_password_sha256; the host adds a password of its own for its exporter), or turn the exporters off."}
	}
	scheme, args := "redis", RedisExporterArgs("")
	if files := spec.TLSFiles(ConfDir); files != nil {
		// The server certificate names the host's address; the exporter verifies it against the CA.
		scheme, args = "rediss", RedisExporterArgs(files.CACertFile)
	}
	addr := (&url.URL{Scheme: scheme, Host: spec.Addr()}).String()
	// No comment: every byte counts against the user-data's 16 KiB.
	env := fmt.Sprintf("REDIS_ADDR=%s\nREDIS_USER=%s\nARGS=%s\n",
		systemdQuote(addr), systemdQuote(spec.MonitorUser), systemdQuote(strings.Join(args, " ")))
	dropIn := "# redlock-kit\n" +
		"[Service]\nEnvironmentFile=" + RedisExporterEnvPath + "\n"
	return []File{
		{Path: RedisExporterEnvPath, Content: env, Permissions: "0600"},
		{Path: redisExporterDropInPath, Content: dropIn, Permissions: "0644"},
	}, nil
}

// exporterCommands start both exporters with the files above (restart: an image may run them
// already, with the package's defaults). They run after the master's setup, whose
// daemon-reload has read the exporter's drop-in already (every file is written first).
func exporterCommands() [][]string {
	return [][]string{
		{"systemctl", "enable", RedisExporterPackage, NodeExporterPackage},
		{"systemctl", "restart", RedisExporterPackage, NodeExporterPackage},
	}
}

// systemdQuote quotes s for an EnvironmentFile= line (double quotes, backslash escapes).
func systemdQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "\n", `\n`).Replace(s) + `"`
}
