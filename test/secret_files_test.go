package test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestLocalFiveSecretFileModes walks everything a deployment of examples/local-five wrote
// into its masters' data dirs: every file that holds the admin or the lock password is 0600,
// every directory 0700, and each master keeps its passwords where the provider reads them
// back (redis.conf, supervisor.json, redlock-master.json), so the walk has files to judge.
func TestLocalFiveSecretFileModes(t *testing.T) {
	t.Parallel()
	d := deployLocalFive(t, "2s")
	secrets := [][]byte{[]byte(d.adminPass), []byte(d.lockPassword)}
	if len(d.adminPass) < 16 || len(d.lockPassword) < 16 {
		t.Fatalf("outputs: admin password of %d chars, lock password of %d", len(d.adminPass), len(d.lockPassword))
	}
	for _, dir := range d.dataDirs(t) {
		holders := map[string]bool{}
		err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := e.Info()
			if err != nil {
				return err
			}
			if e.IsDir() {
				if fi.Mode().Perm() != 0o700 {
					t.Errorf("directory %s has mode %o, want 700", p, fi.Mode().Perm())
				}
				return nil
			}
			if !e.Type().IsRegular() {
				return nil
			}
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, s := range secrets {
				if bytes.Contains(raw, s) {
					holders[e.Name()] = true
					if fi.Mode().Perm() != 0o600 {
						t.Errorf("%s holds a password with mode %o, want 600", p, fi.Mode().Perm())
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("walk %s: %v", dir, err)
		}
		for _, name := range []string{"redis.conf", "supervisor.json", "redlock-master.json"} {
			if !holders[name] {
				t.Errorf("%s: %s holds no password (found in %v)", dir, name, holders)
			}
		}
	}
}
