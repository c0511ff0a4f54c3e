package hostconfig

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// Paths on the host. The server config and the admin password are readable by root (and the
// server config by the unit's group) only.
const (
	ConfDir           = "/etc/redlock"
	MasterConfPath    = ConfDir + "/master.conf"
	AdminPasswordPath = ConfDir + "/admin-password"
	ScriptPath        = "/usr/local/lib/redlock/redlock-master"
	DropInName        = "redlock.conf"
	DefaultPort       = 6379

	// ACLSeedPath is the ACL file as rendered: every user, the admin included, with password
	// hashes only (redisconf.Config.RenderACL). Setup copies it to ACLFilePath once, adding
	// the hash of the host's own admin password, which it makes into AdminPasswordPath
	// (0600, root) for the host's steps (function load, stop): that password never leaves
	// the host, and the user-data holds no password at all.
	ACLSeedPath = ConfDir + "/users.acl"

	// FunctionsPath is the kit's function library (lockagent/redlock/lua.FunctionLibrary), which
	// the policy script loads as the admin at every start of the server.
	FunctionsPath = ConfDir + "/redlock-functions.lua"
)

// Timeouts the unit is given beyond the hold.
const (
	// startAllowance is how long a start may take once the gate's hold is over (AOF load).
	startAllowance = 2 * time.Minute
	// stopTimeout bounds ExecStop (rewrite + SHUTDOWN); then systemd sends SIGTERM, which
	// redis-server also turns into a clean shutdown.
	stopTimeout = time.Minute
	// HookTimeout bounds each hook, as the local supervisor does.
	HookTimeout = 30 * time.Second
)

//go:embed redlock-master.sh
var script string

// hostScript is the script as the user-data carries it: its comment lines (all but the
// first, the interpreter line) and its indentation left out, since the user-data must stay
// under 16 KiB; the commented source is redlock-master.sh. The script has no here-documents
// and no line continued by a backslash right after a word, and its multi-line quoted strings
// are awk programs: so a line whose first non-blank character is '#' is always a comment,
// and leading blanks never matter. Right after the interpreter line comes kitNames. The tests
// run this form.
var hostScript = withKitNames(stripCommentLines(script))

// kitNames is the head of the host script, generated from Go: the names, bounds and paths
// the kit defines once (the deployment record's key and fields in internal/master/hold), the
// same on every host, so that the script spells no field of the record of its own. The
// master's own settings come after, from master.conf (whose later assignments win).
func kitNames() string {
	var b strings.Builder
	for _, kv := range [][2]string{
		{"DEPLOYMENT_KEY", hold.DeploymentKey}, {"DELAY_FIELD", hold.FieldRestartDelayMS},
		{"RUNTIME_FIELD", hold.FieldRuntime}, {"RUN_ID_FIELD", hold.FieldRunID}, {"REPL_ID_FIELD", hold.FieldReplID}, {"RUNTIME", hold.RuntimeHost},
		{"DRIFT_FIELD", hold.FieldConfigDrift}, {"FS_FIELD", hold.FieldDataFS},
		{hold.ShellName(hold.SettingMaxRestartDelayMS), fmt.Sprint(hold.MaxRestartDelay.Milliseconds())},
		{"ADMIN_PASSWORD_FILE", AdminPasswordPath}, {"HOOK_TIMEOUT_S", fmt.Sprint(int(HookTimeout.Seconds()))},
		{"FUNCTIONS_FILE", FunctionsPath}, {"FUNCTIONS_LIBRARY", lua.LibraryName}, {"ACL_SEED", ACLSeedPath},
	} {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], shellQuote(kv[1]))
	}
	return b.String()
}

// withKitNames puts kitNames right after the script's interpreter line.
func withKitNames(script string) string {
	first, rest, _ := strings.Cut(script, "\n")
	return first + "\n" + kitNames() + rest
}

func stripCommentLines(src string) string {
	lines := strings.SplitAfter(src, "\n")
	out := lines[:1:1]
	for _, l := range lines[1:] {
		t := strings.TrimLeft(l, " \t")
		if t == "" || t == "\n" || strings.HasPrefix(t, "#") {
			continue
		}
		out = append(out, t)
	}
	return strings.Join(out, "")
}

// Host is one master on a host the user runs.
type Host struct {
	// Spec is the master. Bind is the host's address; Port 0 means DefaultPort; DataDir
	// and ServerBinary come from the server package and must be empty or equal to its own.
	Spec master.Spec
	// Server is the Debian package ("" is DefaultServer).
	Server string
	// InstallPackages adds the package to the user-data's packages (cloud-init installs it);
	// leave it false for images that already have it.
	InstallPackages bool
	// Exporters adds redis_exporter (logged in as the monitoring user: Spec.MonitorPassword is
	// required) and node_exporter with its textfile collector (exporters.go).
	Exporters bool
	// SeedFences renders the lock users off and has the master marked unseeded whenever it
	// starts empty (audit.FenceSeedKey): redlock_users seeds its fence registers from a
	// majority of the other masters, then turns its users on (internal/fenceseed).
	SeedFences bool
}

// File is one file the host needs.
type File struct {
	Path        string `json:"path"`
	Content     string `json:"content"`
	Permissions string `json:"permissions"` // octal, e.g. "0640"
}

// Bundle is everything a host needs, in the forms provisioning tools take.
type Bundle struct {
	Server   Server
	Spec     master.Spec // the defaulted Spec the files were rendered from
	Packages []string    // the Debian packages the host needs
	Files    []File      // in the order to write them
	Commands [][]string  // run in order, as root, after the files are written
	// UserData is #cloud-config for any cloud's instance user_data.
	UserData string
	// UserDataGzipBase64 is UserData gzipped and base64-encoded (EC2's user_data_base64,
	// Azure's custom_data), for when the plain form is too large.
	UserDataGzipBase64 string
}

// Render checks h (every problem as a *master.FieldError) and renders its files.
func Render(h Host) (*Bundle, error) {
	srv, err := LookupServer(h.Server)
	if err != nil {
		return nil, &master.FieldError{Field: "server", Summary: "Unsupported server package", Detail: err.Error() + "."}
	}
	spec := h.Spec
	if spec.Port == 0 {
		spec.Port = DefaultPort
	}
	var errs []error
	for field, pair := range map[string][2]string{"data_dir": {spec.DataDir, srv.DataDir}, "server_binary": {spec.ServerBinary, srv.Binary}} {
		if pair[0] != "" && pair[0] != pair[1] {
			errs = append(errs, &master.FieldError{Field: field, Summary: "Fixed by the server package",
				Detail: fmt.Sprintf("%s = %q: the %s package's unit uses %s; leave %s out.", field, pair[0], srv.Package, pair[1], field)})
		}
	}
	spec.DataDir, spec.ServerBinary = srv.DataDir, srv.Binary
	spec.AllowNonLoopbackBind = true // a host's master serves its network; the address is the user's choice
	spec = spec.WithDefaults()
	if err := spec.Check(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}

	conf := spec.RedisConfig(ConfDir)
	conf.PidFile = srv.PIDFile
	conf.ACLFile = ACLFilePath(srv)
	conf.LockUsersOff = h.SeedFences
	serverConf, err := conf.Render()
	if err != nil {
		return nil, err
	}
	aclSeed, err := conf.RenderACL()
	if err != nil {
		return nil, err
	}
	serverConfPath := ConfDir + "/" + srv.Package + ".conf"
	stateFile := "" // the policy publishes its state for node_exporter only when it runs
	if h.Exporters {
		stateFile = StateMetricsPath
	}
	b := &Bundle{Server: srv, Spec: spec}
	b.Files = []File{
		{Path: MasterConfPath, Content: masterConf(spec, srv, serverConfPath, sha256Hex(serverConf), stateFile, h.SeedFences), Permissions: "0644"},
		// Password hashes only; 0600 all the same.
		{Path: ACLSeedPath, Content: aclSeed, Permissions: "0600"},
		// 0600, and the setup step gives it to the service's user (the TLS key's path is in it).
		{Path: serverConfPath, Content: serverConf, Permissions: "0600"},
		{Path: FunctionsPath, Content: lua.FunctionLibrary().Code, Permissions: "0644"},
		{Path: ScriptPath, Content: hostScript, Permissions: "0755"},
		{Path: DropInPath(srv), Content: dropIn(spec, srv, serverConfPath), Permissions: "0644"},
	}
	if files := spec.TLSFiles(ConfDir); files != nil {
		b.Files = append(b.Files,
			File{Path: files.CertFile, Content: spec.TLS.CertPEM, Permissions: "0644"},
			File{Path: files.CACertFile, Content: spec.TLS.CACertPEM, Permissions: "0644"})
		// The key is 0600 and the gate gives it to the server's user (cloud-init writes files
		// as root, before the package's user may exist). With KeyOnHost the host's
		// provisioning puts it there, and the gate keeps the master down until it does.
		if !spec.TLS.KeyOnHost {
			b.Files = append(b.Files, File{Path: files.KeyFile, Content: spec.TLS.KeyPEM, Permissions: "0600"})
		}
	}
	b.Commands = [][]string{{ScriptPath, "setup"}}
	b.Packages = []string{srv.Package}
	if h.Exporters {
		files, err := exporterFiles(spec)
		if err != nil {
			return nil, err
		}
		b.Files = append(b.Files, files...)
		b.Commands = append(b.Commands, exporterCommands()...)
		b.Packages = append(b.Packages, RedisExporterPackage, NodeExporterPackage)
	}
	if b.UserData, err = userData(b, h.InstallPackages); err != nil {
		return nil, err
	}
	if b.UserDataGzipBase64, err = gzipBase64(b.UserData); err != nil {
		return nil, err
	}
	return b, nil
}

// ACLFilePath is the ACL file srv's server loads and rewrites (ACL SAVE, internal/acl):
// in its data dir, the one place the package's sandbox lets it write.
func ACLFilePath(srv Server) string { return srv.DataDir + "/users.acl" }

// DropInPath is where the drop-in for srv's unit goes.
func DropInPath(srv Server) string {
	return "/etc/systemd/system/" + srv.Unit + ".d/" + DropInName
}

// masterConf is the shell fragment the policy script reads: settings and hooks, no secret.
// serverConfSHA256 is the sha256 of the server config rendered for serverConfPath: the
// script publishes how the file on disk differs from it ("": nothing to compare with).
// stateFile is where the script publishes the master's state for node_exporter ("": nowhere,
// and no exporters).
// With seedFences, SEED_KEY names the record the script marks a new master unseeded in.
func masterConf(spec master.Spec, srv Server, serverConfPath, serverConfSHA256, stateFile string, seedFences bool) string {
	var b strings.Builder
	b.WriteString("# redlock-kit: the restart policy's settings, read by " + ScriptPath + ".\n")
	for _, kv := range [][2]string{
		{"NAME", spec.Name}, {"HOST", spec.Bind}, {"PORT", fmt.Sprint(spec.Port)}, {"ADDR", spec.Addr()},
		{"DATA_DIR", spec.DataDir}, {hold.ShellName(hold.FieldRestartDelayMS), fmt.Sprint(spec.RestartDelay.Milliseconds())},
		{"UNIT", srv.Unit}, {"SERVICE_USER", srv.User}, {"SERVICE_GROUP", srv.Group}, {"CONFIG_FILE", serverConfPath}, {"CONFIG_SHA256", serverConfSHA256}, {"CLI", srv.CLI},
		{"TLS_KEY_FILE", tlsFile(spec, "key")}, {"TLS_CA_FILE", tlsFile(spec, "ca")}, {"TLS_CERT_FILE", tlsFile(spec, "cert")},
		{"SERVER_BINARY", srv.Binary},
		{"ACL_FILE", ACLFilePath(srv)}, {"STATE_FILE", stateFile},
	} {
		fmt.Fprintf(&b, "%s=%s\n", kv[0], shellQuote(kv[1]))
	}
	if seedFences {
		fmt.Fprintf(&b, "SEED_KEY=%s\n", shellQuote(audit.FenceSeedKey))
	}
	if stateFile != "" {
		// The exporters are on (they alone read the state file): setup gives redis_exporter a
		// password of the host's own for the monitoring user.
		fmt.Fprintf(&b, "EXPORTER_ENV=%s\n", shellQuote(RedisExporterEnvPath))
	}
	spec.Hooks.Each(func(name string, argv []string) {
		body := ":"
		if len(argv) > 0 {
			quoted := make([]string, len(argv))
			for i, a := range argv {
				quoted[i] = shellQuote(a)
			}
			body = strings.Join(quoted, " ")
		}
		fmt.Fprintf(&b, "hook_%s() { %s; }\n", name, body)
	})
	return b.String()
}

// dropIn extends the package's unit. It keeps every sandboxing setting of that unit: the
// policy steps run with '+' (root, outside the sandbox), the server inside it. PIDFile= is
// cleared (Type=notify tells systemd the main pid): systemd removes that file after every
// stop, and the server's pidfile (Server.PIDFile) carries the clean stop's token.
func dropIn(spec master.Spec, srv Server, serverConfPath string) string {
	delay := spec.RestartDelay
	// Short comments: every byte counts against the user-data's 16 KiB.
	return fmt.Sprintf(`# redlock-kit: Redlock master %[1]q; the gate holds a start %[2]s after an unclean stop
[Unit]
StartLimitIntervalSec=0

[Service]
ExecStart=
ExecStart=%[3]s %[4]s --supervised systemd --daemonize no
ExecStartPre=+%[5]s gate
# A failed load of the function library fails the start.
ExecStartPost=+%[5]s functions
ExecStartPost=-+%[5]s started
ExecStop=+%[5]s stop
ExecStopPost=+%[5]s stopped
PIDFile=
Restart=always
RestartSec=1s
TimeoutStartSec=%[6]d
TimeoutStopSec=%[7]d
`, spec.Name, delay, srv.Binary, serverConfPath, ScriptPath,
		int((delay + startAllowance).Seconds()), int(stopTimeout.Seconds()))
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// shellQuote quotes s as one POSIX shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tlsFile is the path of a TLS master's key, CA or certificate file on the host: "" without
// TLS (the policy script then talks plain text to the server).
func tlsFile(spec master.Spec, which string) string {
	files := spec.TLSFiles(ConfDir)
	switch {
	case files == nil:
		return ""
	case which == "key":
		return files.KeyFile
	case which == "cert":
		return files.CertFile
	}
	return files.CACertFile
}
