package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"

	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// writeAuditMetrics writes the foreign-lock metrics of res's last audit (the one after the
// contention phase when it ran) to path, replacing it atomically (a temp file in the same
// directory, then rename) so that a textfile collector never reads a torn file.
func writeAuditMetrics(path string, res *validation.Report) error {
	rep := res.AuditAfter
	if rep == nil {
		rep = res.Audit
	}
	if rep == nil {
		return errors.New("no audit ran: nothing to write")
	}
	var b bytes.Buffer
	if err := rep.WriteForeignLockMetrics(&b); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing left
	if _, err := tmp.Write(b.Bytes()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
