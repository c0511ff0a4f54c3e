package local

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// record is <data_dir>/redlock-master.json (0600): what supervisor.json and redis.conf do not
// keep, as the configuration wrote it, so that Load rebuilds the configuration exactly. The
// format is the one the provider always wrote: existing data dirs must stay importable.
type record struct {
	Name                 string `json:"name"`
	Bind                 string `json:"bind"`
	AllowNonLoopbackBind bool   `json:"allow_non_loopback_bind"`
	Port                 int64  `json:"port"` // as configured: 0 when the configuration asked for any free port
	DataDir              string `json:"data_dir"`
	ServerBinary         string `json:"server_binary"` // as configured (not resolved), so import plans no change
	MaxLockTTL           string `json:"max_lock_ttl"`
	ClockDriftMargin     string `json:"clock_drift_margin"`
	// RestartDelay stays the duration string as written: this record is the Terraform
	// layer's (import returns it as the attribute, and a plan after import compares it with
	// the configuration as a string). The runtime's copy, in supervisor.json, is
	// hold.FieldRestartDelayMS in whole milliseconds.
	RestartDelay           string       `json:"restart_delay"`
	MaxMemory              string       `json:"maxmemory"`
	AppendFsync            string       `json:"appendfsync"`
	AllowUnsafeAppendFsync bool         `json:"allow_unsafe_appendfsync"`
	LockUser               string       `json:"lock_user"`
	LockPassword           string       `json:"lock_password"`
	LockUsers              []recordUser `json:"lock_users,omitempty"`
	MonitorUser            string       `json:"monitor_user,omitempty"`
	MonitorPassword        string       `json:"monitor_password,omitempty"`
	KeepDataOnDestroy      bool         `json:"keep_data_on_destroy"`
	// TLS: the master serves TLS only, with the files master.TLSFileContents names in the
	// data dir (Load reads the PEMs back from them).
	TLS bool `json:"tls,omitempty"`
}

// recordUser is one tenant in the record.
type recordUser struct {
	Name      string `json:"name"`
	Password  string `json:"password"`
	KeyPrefix string `json:"key_prefix"`
}

func newRecord(m Master) record {
	s := m.Spec
	port := int64(s.Port)
	if m.ZeroPort {
		port = 0
	}
	return record{
		Name: s.Name, Bind: s.Bind, AllowNonLoopbackBind: s.AllowNonLoopbackBind, Port: port, DataDir: s.DataDir,
		ServerBinary: s.ServerBinary, MaxLockTTL: or(m.Written.MaxLockTTL, s.MaxLockTTL.String()),
		ClockDriftMargin: or(m.Written.ClockDriftMargin, s.ClockDriftMargin.String()),
		RestartDelay:     or(m.Written.RestartDelay, s.RestartDelay.String()), MaxMemory: s.MaxMemory,
		AppendFsync: s.AppendFsync, AllowUnsafeAppendFsync: s.AllowUnsafeAppendFsync, LockUser: s.LockUser,
		LockPassword: s.LockPassword, LockUsers: recordUsers(s.LockUsers),
		MonitorUser: s.MonitorUser, MonitorPassword: s.MonitorPassword, KeepDataOnDestroy: m.KeepDataOnDestroy, TLS: s.TLS != nil,
	}
}

func recordUsers(users []master.LockUser) []recordUser {
	var out []recordUser
	for _, u := range users {
		out = append(out, recordUser{Name: u.Name, Password: u.Password, KeyPrefix: u.KeyPrefix})
	}
	return out
}

func (r record) lockUsers() []master.LockUser {
	var out []master.LockUser
	for _, u := range r.LockUsers {
		out = append(out, master.LockUser{Name: u.Name, Password: u.Password, KeyPrefix: u.KeyPrefix})
	}
	return out
}

func readRecord(dir string) (record, error) {
	raw, err := os.ReadFile(filepath.Join(dir, RecordFileName))
	if err != nil {
		return record{}, err
	}
	return parseRecord(dir, raw)
}

func parseRecord(dir string, raw []byte) (record, error) {
	var r record
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("%s: %v", filepath.Join(dir, RecordFileName), err)
	}
	return r, nil
}

// writeFiles writes everything the master and its supervisor start from: redis.conf
// (rendered by internal/redisconf, the one safe config), supervisor.json and the record.
// m.Spec.Port is the port the master listens on.
func writeFiles(m Master) error {
	s := m.Spec
	dir := s.DataDir
	for name, content := range s.TLSFileContents() {
		if err := writeFileAtomic(filepath.Join(dir, name), []byte(content)); err != nil {
			return fieldError("data_dir", "Cannot write the TLS files", err.Error())
		}
	}
	conf := s.RedisConfig(dir)
	conf.LogFile = filepath.Join(dir, redisLogFileName)
	text, err := conf.Render()
	if err != nil {
		return &Error{Summary: "Cannot render redis.conf", Detail: err.Error()}
	}
	if err := writeFileAtomic(filepath.Join(dir, RedisConfFileName), []byte(text)); err != nil {
		return fieldError("data_dir", "Cannot write redis.conf", err.Error())
	}
	bin, err := exec.LookPath(s.ServerBinary)
	if err != nil {
		return fieldError("server_binary", "Executable not found", fmt.Sprintf("server_binary: %s.", LookPath(s.ServerBinary)))
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return fieldError("server_binary", "Executable not found", err.Error())
	}
	err = supervisor.WriteConfig(dir, supervisor.Config{
		Name: s.Name, ServerBinary: bin, ConfigFile: filepath.Join(dir, RedisConfFileName), DataDir: dir,
		Addr: s.Addr(), AdminPassword: s.AdminPassword, RestartDelay: s.RestartDelay, Hooks: s.Hooks,
		TLSCACertFile: tlsCAFile(s), ConfigSHA256: sha256Hex(text),
	})
	if err != nil {
		return &Error{Summary: "Cannot write supervisor.json", Detail: err.Error()}
	}
	data, err := json.MarshalIndent(newRecord(m), "", "  ")
	if err == nil {
		err = writeFileAtomic(filepath.Join(dir, RecordFileName), append(data, '\n'))
	}
	if err != nil {
		return &Error{Summary: "Cannot write " + RecordFileName, Detail: err.Error()}
	}
	return nil
}

// PreviousSecrets returns the passwords a previous master in dir used, if any: the lock
// password only when it was for the same lock user. A master recreated in its old data dir
// keeps them, so that clients configured with them keep working.
func PreviousSecrets(dir, lockUser string) (admin, lock string) {
	if c, err := supervisor.LoadConfig(dir); err == nil {
		admin = c.AdminPassword
	}
	if r, err := readRecord(dir); err == nil && r.LockUser == lockUser {
		lock = r.LockPassword
	}
	return admin, lock
}

// writeFileAtomic writes data to path with mode 0600 via a temporary file and a rename, so
// a reader (the supervisor, redis-server) never sees half a file.
func writeFileAtomic(p string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// tlsCAFile is the CA file the supervisor's health check trusts: "" without TLS.
func tlsCAFile(s master.Spec) string {
	if f := s.TLSFiles(s.DataDir); f != nil {
		return f.CACertFile
	}
	return ""
}

// readTLS reads back the TLS files writeFiles wrote in dir.
func readTLS(dir string) (*master.TLS, error) {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		return string(b), err
	}
	var t master.TLS
	var err error
	if t.CertPEM, err = read(master.TLSCertFileName); err != nil {
		return nil, err
	}
	if t.KeyPEM, err = read(master.TLSKeyFileName); err != nil {
		return nil, err
	}
	if t.CACertPEM, err = read(master.TLSCACertFileName); err != nil {
		return nil, err
	}
	return &t, nil
}

// sha256Hex is the hex sha256 of text: what the supervisor compares redis.conf on disk with.
func sha256Hex(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}
