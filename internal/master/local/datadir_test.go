package local

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDirCreatable(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, dir, wantError string
	}{
		{"existing dir", base, ""},
		{"new dir under a dir", filepath.Join(base, "a", "b"), ""},
		{"the path is a file", file, "not a directory"},
		{"under a file", filepath.Join(file, "sub", "m1"), "is a file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := DirCreatable(tc.dir)
			if tc.wantError == "" && err != nil || tc.wantError != "" && (err == nil || !strings.Contains(err.Error(), tc.wantError)) {
				t.Fatalf("DirCreatable(%s) = %v, want error containing %q", tc.dir, err, tc.wantError)
			}
		})
	}
}
