package hostconfig

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"io"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

func testHost() Host {
	return Host{Spec: master.Spec{
		Name: "m1", Bind: "10.0.0.11", MaxLockTTL: 30 * time.Second,
		AdminPassword: strings.Repeat("a", 64), LockPassword: strings.Repeat("b", 64),
		Hooks: master.Hooks{OnCrash: []string{"/usr/bin/logger", "it's down"}},
	}}
}

func file(t *testing.T, b *Bundle, path string) File {
	t.Helper()
	for _, f := range b.Files {
		if f.Path == path {
			return f
		}
	}
	t.Fatalf("no file %s in %v", path, b.Files)
	return File{}
}

func TestRenderSafeServerConfig(t *testing.T) {
	for _, server := range ServerNames() {
		t.Run(server, func(t *testing.T) {
			h := testHost()
			h.Server = server
			b, err := Render(h)
			if err != nil {
				t.Fatal(err)
			}
			srv := Servers[server]
			conf := file(t, b, ConfDir+"/"+server+".conf")
			for _, want := range []string{"bind 10.0.0.11\n", "port 6379\n", "protected-mode yes\n", "appendonly yes\n",
				"appendfsync always\n", "no-appendfsync-on-rewrite no\n", `save ""` + "\n", "maxmemory 64mb\n",
				"maxmemory-policy noeviction\n", `dir "` + srv.DataDir + `"`, `aclfile "` + ACLFilePath(srv) + `"`,
				`pidfile "` + srv.PIDFile + `"`} {
				if !strings.Contains(conf.Content, want) {
					t.Errorf("server config lacks %q:\n%s", want, conf.Content)
				}
			}
			if strings.Contains(conf.Content, "replicaof") || conf.Permissions != "0600" {
				t.Errorf("server config: replicaof or permissions %s", conf.Permissions)
			}
			if strings.Contains(conf.Content, "requirepass") || strings.Contains(conf.Content, "\nuser ") {
				t.Errorf("server config defines users (they belong in the ACL file):\n%s", conf.Content)
			}
			seed := file(t, b, ACLSeedPath)
			for _, want := range []string{"user default reset on #" + redisconf.HashPassword(h.Spec.AdminPassword) + " ",
				"user redlock reset on #" + redisconf.HashPassword(h.Spec.LockPassword) + " "} {
				if !strings.Contains(seed.Content, want) || seed.Permissions != "0600" {
					t.Errorf("ACL file (%s) lacks %q:\n%s", seed.Permissions, want, seed.Content)
				}
			}
			drop := file(t, b, DropInPath(srv)).Content
			for _, want := range []string{"ExecStart=\nExecStart=" + srv.Binary + " /etc/redlock/" + server + ".conf --supervised systemd",
				"ExecStartPre=+" + ScriptPath + " gate", "ExecStopPost=+" + ScriptPath + " stopped",
				"ExecStop=+" + ScriptPath + " stop", "Restart=always", "RestartSec=1s", "StartLimitIntervalSec=0",
				"TimeoutStartSec=151\n", "\nPIDFile=\n"} {
				if !strings.Contains(drop, want) {
					t.Errorf("drop-in lacks %q:\n%s", want, drop)
				}
			}
			// The gate script finds the pidfile (the clean stop's token) by the data dir and
			// unit master.conf names, and systemd must not remove it (PIDFile= cleared above).
			if want := srv.DataDir + "/" + strings.TrimSuffix(srv.Unit, ".service") + ".pid"; srv.PIDFile != want {
				t.Errorf("%s's pidfile is %s: the gate script looks for it at %s", server, srv.PIDFile, want)
			}
			mc := file(t, b, MasterConfPath).Content
			for _, want := range []string{"RESTART_DELAY_MS='31000'", "DATA_DIR='" + srv.DataDir + "'", "UNIT='" + srv.Unit + "'",
				`hook_on_crash() { '/usr/bin/logger' 'it'\''s down'; }`, "hook_after_restart() { :; }"} {
				if !strings.Contains(mc, want) {
					t.Errorf("master.conf lacks %q:\n%s", want, mc)
				}
			}
			if strings.Contains(mc, h.Spec.AdminPassword) {
				t.Error("master.conf (0644) holds the admin password")
			}
		})
	}
}

func TestUserDataIsCloudConfigUnder16KiB(t *testing.T) {
	h := testHost()
	h.InstallPackages = true
	b, err := Render(h)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.UserData, "#cloud-config\n") {
		t.Fatalf("user-data does not start with #cloud-config:\n%s", b.UserData)
	}
	// The plain form is over the limit (the function library's pages took it there): the
	// cloud is given the gzip form, which Render refuses above the limit.
	gz, _ := base64.StdEncoding.DecodeString(b.UserDataGzipBase64)
	if len(gz) > MaxUserDataBytes {
		t.Fatalf("user-data is %d bytes gzipped, over %d", len(gz), MaxUserDataBytes)
	}
	t.Logf("user-data: %d bytes, gzipped %d bytes (base64: %d)", len(b.UserData), len(gz), len(b.UserDataGzipBase64))
	var doc cloudConfigDoc
	if err := yaml.Unmarshal([]byte(b.UserData), &doc); err != nil {
		t.Fatalf("user-data is not YAML: %v", err)
	}
	if len(doc.WriteFiles) != len(b.Files) || !doc.PackageUpdate || len(doc.Packages) != 1 || doc.Packages[0] != "redis-server" {
		t.Fatalf("cloud-config: %+v", doc)
	}
	for i, f := range doc.WriteFiles {
		content := f.Content
		switch f.Encoding {
		case "":
		case "gz+b64": // large files (the function library): cloud-init unpacks them
			raw, err := base64.StdEncoding.DecodeString(f.Content)
			if err != nil {
				t.Fatalf("write_files[%d] %s: %v", i, f.Path, err)
			}
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatalf("write_files[%d] %s: %v", i, f.Path, err)
			}
			plain, _ := io.ReadAll(zr)
			content = string(plain)
		default:
			t.Errorf("write_files[%d] %s: encoding %q", i, f.Path, f.Encoding)
		}
		// No permissions: cloud-init's default, 0644 (left out to save bytes).
		if f.Path != b.Files[i].Path || content != b.Files[i].Content || cmp.Or(f.Permissions, "0644") != b.Files[i].Permissions {
			t.Errorf("write_files[%d] does not round-trip: %s", i, f.Path)
		}
	}
	if len(doc.RunCmd) != 1 || strings.Join(doc.RunCmd[0], " ") != ScriptPath+" setup" {
		t.Errorf("runcmd: %v", doc.RunCmd)
	}
	raw, _ := base64.StdEncoding.DecodeString(b.UserDataGzipBase64)
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	if string(plain) != b.UserData {
		t.Error("gzip+base64 form does not decode to the user-data")
	}

	// A large file goes into write_files gzipped (cloud-init unpacks it): a hook of 16 KiB
	// that compresses well adds little...
	h.Spec.Hooks.AfterRestart = []string{"/bin/sh", "-c", strings.Repeat("x", MaxUserDataBytes)}
	if b2, err := Render(h); err != nil || len(b2.UserData) > len(b.UserData)+1024 {
		t.Errorf("user-data with a large compressible hook: %d bytes (%d without), err = %v", len(b2.UserData), len(b.UserData), err)
	}
	// ...and refused when even the gzip form is over it.
	noise := make([]byte, 2*MaxUserDataBytes)
	rand.Read(noise)
	h.Spec.Hooks.AfterRestart = []string{"/bin/sh", "-c", base64.StdEncoding.EncodeToString(noise)}
	if _, err := Render(h); err == nil || !strings.Contains(err.Error(), "bytes gzipped") {
		t.Errorf("user-data too large even gzipped: err = %v", err)
	}
}

func TestRenderRefusesUnsafeSpecs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Host)
		field string
	}{
		{"restart delay below max TTL", func(h *Host) { h.Spec.RestartDelay = 10 * time.Second }, "restart_delay"},
		{"unsafe appendfsync", func(h *Host) { h.Spec.AppendFsync = "everysec" }, "appendfsync"},
		{"short admin password", func(h *Host) { h.Spec.AdminPassword = "short" }, "admin_password"},
		{"address not an IP", func(h *Host) { h.Spec.Bind = "db1.example" }, "bind"},
		{"unknown server", func(h *Host) { h.Server = "keydb" }, "server"},
		{"data dir not the package's", func(h *Host) { h.Spec.DataDir = "/srv/redis" }, "data_dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := testHost()
			tc.edit(&h)
			_, err := Render(h)
			var fields []string
			for _, fe := range master.FieldErrors(err) {
				fields = append(fields, fe.Field)
			}
			var fe *master.FieldError
			if !errors.As(err, &fe) || !strings.Contains(strings.Join(fields, ","), tc.field) {
				t.Fatalf("err = %v (fields %v), want a field error on %s", err, fields, tc.field)
			}
		})
	}
}

// TestScriptSpellsNoRecordName: the host script takes the deployment record's key, fields and
// runtime name from its generated head (Go's hold constants), and the restart delay under
// hold.ShellName of the record's field: renaming one in Go renames it on the host. The
// rendered script (the negative control) does carry them.
func TestScriptSpellsNoRecordName(t *testing.T) {
	// The script's code, its comments left out (they may name the record's fields). run_id
	// is left out of the first check: the script reads the server's run_id from INFO
	// server, Redis's name, not the record's.
	code := stripCommentLines(script)
	for _, name := range []string{hold.DeploymentKey, hold.FieldRestartDelayMS, hold.FieldRuntime, hold.FieldRunID, hold.RuntimeHost} {
		if name != hold.FieldRunID && strings.Contains(code, name) {
			t.Errorf("redlock-master.sh spells %q itself: take it from the generated head", name)
		}
		if !strings.Contains(hostScript, "='"+name+"'\n") {
			t.Errorf("the rendered script's head lacks %q", name)
		}
	}
	if v := "$" + hold.ShellName(hold.FieldRestartDelayMS); !strings.Contains(code, v) || !strings.Contains(code, "REDLOCK_"+hold.ShellName(hold.FieldRestartDelayMS)+"=") {
		t.Errorf("redlock-master.sh does not read the delay as %s or give it to hooks as REDLOCK_%s", v, v[1:])
	}
	if mc := masterConf(testHost().Spec, Servers["redis-server"], "/x", "", "", false); !strings.Contains(mc, "\n"+hold.ShellName(hold.FieldRestartDelayMS)+"=") {
		t.Errorf("master.conf lacks %s:\n%s", hold.ShellName(hold.FieldRestartDelayMS), mc)
	}
}
