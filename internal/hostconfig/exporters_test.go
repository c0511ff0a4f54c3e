package hostconfig

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

func exporterHost() Host {
	h := testHost()
	h.Spec.MonitorPassword = strings.Repeat("c", 64)
	h.Exporters = true
	h.InstallPackages = true
	return h
}

// TestRenderExporters: with exporters on, the host installs both exporter packages, the redis
// exporter logs in as the monitoring user from a root-only environment file (never CLIENT
// SETNAME or CONFIG GET, which the user may not run), and both units are restarted after the
// master's setup. Off, none of it is there.
func TestRenderExporters(t *testing.T) {
	b, err := Render(exporterHost())
	if err != nil {
		t.Fatal(err)
	}
	// Over MaxUserDataBytes plain, even with the settings files gzipped: the cloud is given
	// the gzip form (user_data_base64_gzip), which Render refuses when it is over too.
	if len(b.UserData) <= MaxUserDataBytes {
		t.Errorf("user-data with exporters is %d bytes, under %d: the docs and the provider's description say it is over (update them)", len(b.UserData), MaxUserDataBytes)
	}
	if len(b.UserDataGzipBase64) == 0 {
		t.Error("no gzip form")
	}
	t.Logf("user-data with exporters: %d bytes, gzip+base64 %d bytes", len(b.UserData), len(b.UserDataGzipBase64))
	env := file(t, b, RedisExporterEnvPath)
	for _, want := range []string{`REDIS_ADDR="redis://10.0.0.11:6379"`, `REDIS_USER="redlock-monitor"`,
		`ARGS="-set-client-name=false -config-command=-"`} {
		if !strings.Contains(env.Content, want+"\n") {
			t.Errorf("%s lacks %s:\n%s", env.Path, want, env.Content)
		}
	}
	// The password is the host's own (setup adds it): none in the user-data.
	if strings.Contains(env.Content, "REDIS_PASSWORD") || strings.Contains(b.UserData, strings.Repeat("c", 64)) {
		t.Errorf("the user-data holds a monitoring password:\n%s", env.Content)
	}
	if conf := file(t, b, MasterConfPath).Content; !strings.Contains(conf, "EXPORTER_ENV="+shellQuote(RedisExporterEnvPath)+"\n") {
		t.Errorf("master.conf does not point setup at %s:\n%s", RedisExporterEnvPath, conf)
	}
	if env.Permissions != "0600" {
		t.Errorf("%s holds the monitoring password with permissions %s, want 0600", env.Path, env.Permissions)
	}
	if d := file(t, b, redisExporterDropInPath); !strings.Contains(d.Content, "EnvironmentFile="+RedisExporterEnvPath+"\n") {
		t.Errorf("the exporter's drop-in does not load %s:\n%s", RedisExporterEnvPath, d.Content)
	}
	// In the ACL file (as a hash), never in the server config: redis-server refuses to start
	// with users in both.
	if acl := file(t, b, ACLSeedPath); !strings.Contains(acl.Content, "\nuser redlock-monitor reset on #"+redisconf.HashPassword(strings.Repeat("c", 64))+" resetkeys resetchannels -@all +ping +info ") {
		t.Errorf("the ACL file lacks the monitoring user:\n%s", acl.Content)
	}
	if conf := file(t, b, ConfDir+"/redis-server.conf"); strings.Contains(conf.Content, "\nuser ") || strings.Contains(conf.Content, strings.Repeat("c", 64)) {
		t.Errorf("the server config defines a user (or holds the monitoring password) although it loads an ACL file:\n%s", conf.Content)
	}
	var doc cloudConfigDoc
	if err := yaml.Unmarshal([]byte(b.UserData), &doc); err != nil {
		t.Fatal(err)
	}
	if strings.Join(doc.Packages, " ") != "redis-server "+RedisExporterPackage+" "+NodeExporterPackage {
		t.Errorf("packages: %v", doc.Packages)
	}
	var cmds []string
	for _, c := range doc.RunCmd {
		cmds = append(cmds, strings.Join(c, " "))
	}
	if len(cmds) < 2 || cmds[0] != ScriptPath+" setup" ||
		cmds[len(cmds)-1] != "systemctl restart "+RedisExporterPackage+" "+NodeExporterPackage {
		t.Errorf("runcmd: %q, want the master's setup first and the exporters restarted last", cmds)
	}

	off := exporterHost()
	off.Exporters = false
	if b, err = Render(off); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.UserData, "exporter") {
		t.Errorf("exporters off, yet the user-data mentions an exporter:\n%s", b.UserData)
	}
}

// TestRenderExportersTLS: with TLS the exporter connects with rediss:// and verifies the
// server against the CA file the master's config names.
func TestRenderExportersTLS(t *testing.T) {
	h := exporterHost()
	ca, err := pki.NewCA(pki.CAOptions{Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.NewServer(ca, pki.ServerOptions{IPAddresses: []net.IP{net.ParseIP(h.Spec.Bind)}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	h.Spec.TLS = &master.TLS{CertPEM: cert.CertPEM, KeyPEM: cert.KeyPEM, CACertPEM: ca.CertPEM}
	b, err := Render(h)
	if err != nil {
		t.Fatal(err)
	}
	env := file(t, b, RedisExporterEnvPath).Content
	caFile := h.Spec.TLSFiles(ConfDir).CACertFile
	if !strings.Contains(env, `REDIS_ADDR="rediss://10.0.0.11:6379"`) || !strings.Contains(env, "-tls-ca-cert-file="+caFile) {
		t.Errorf("TLS exporter environment:\n%s", env)
	}
	if len(b.UserDataGzipBase64) == 0 {
		t.Error("no gzip form")
	}
	// The state file's certificate expiry reads the server certificate master.conf names.
	if conf, want := file(t, b, MasterConfPath).Content, "TLS_CERT_FILE="+shellQuote(h.Spec.TLSFiles(ConfDir).CertFile)+"\n"; !strings.Contains(conf, want) {
		t.Errorf("master.conf of a TLS host lacks %s", want)
	}
}

// TestRenderExportersNeedMonitorPassword: exporters without the monitoring user's password
// fail, naming monitor_password.
func TestRenderExportersNeedMonitorPassword(t *testing.T) {
	h := exporterHost()
	h.Spec.MonitorPassword = ""
	_, err := Render(h)
	var fe *master.FieldError
	if !errors.As(err, &fe) || fe.Field != "monitor_password_sha256" {
		t.Fatalf("Render: %v, want a FieldError on monitor_password_sha256", err)
	}
}
