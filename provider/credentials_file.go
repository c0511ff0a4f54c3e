package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// credentialsFile is what a redlock_credentials with `file` keeps on the machine that runs
// Terraform instead of the state: the passwords. The state keeps their hashes and Version,
// which the ephemeral redlock_credentials compares when it reads the file back.
type credentialsFile struct {
	Version       int64  `json:"version"`
	LockUser      string `json:"lock_user"`
	AdminPassword string `json:"admin_password"`
	LockPassword  string `json:"lock_password"`
}

// errCredentialsFileMissing means the file is gone: so are the passwords it held.
var errCredentialsFileMissing = errors.New("credentials file missing")

// writeCredentialsFile creates path (see writeSecretFile) with c.
func writeCredentialsFile(path string, c credentialsFile) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return writeSecretFile(path, append(data, '\n'), "passwords")
}

// writeSecretFile creates path with data (mode 0600; missing directories 0700) and never
// replaces an existing file: what it holds (what) may be in use.
func writeSecretFile(path string, data []byte, what string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating the directory of %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists: it holds other %s (another resource's, or one whose state was lost). "+
			"Give this one its own file, or remove that file if nothing uses it", path, what)
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path) // never leave half a file that a later read would take for the secret
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// readCredentialsFile reads and checks path; errCredentialsFileMissing when it does not exist.
func readCredentialsFile(path string) (credentialsFile, error) {
	var c credentialsFile
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, fmt.Errorf("%w: %s", errCredentialsFileMissing, path)
	}
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("%s is not a redlock_credentials file: %w", path, err)
	}
	if c.AdminPassword == "" || c.LockPassword == "" || c.LockUser == "" {
		return c, fmt.Errorf("%s lacks lock_user, admin_password or lock_password: it is not a redlock_credentials file", path)
	}
	return c, nil
}

// hashes are the SHA-256 hashes the state keeps instead of the passwords.
func (c credentialsFile) hashes() (admin, lock string) {
	return redisconf.HashPassword(c.AdminPassword), redisconf.HashPassword(c.LockPassword)
}
