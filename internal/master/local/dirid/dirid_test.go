package dirid

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSame: every spelling of one directory is the same directory, existing or not; two
// directories are not, however alike their names.
func TestSame(t *testing.T) {
	root := t.TempDir()
	real := filepath.Join(root, "real")
	other := filepath.Join(root, "other")
	for _, d := range []string{real, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	relLink := filepath.Join(root, "rel-link")
	if err := os.Symlink("real", relLink); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		a, b string
		same bool
	}{
		{"one spelling", real, real, true},
		{"trailing slash", real, real + "/", true},
		{"dot-dot", real, filepath.Join(other, "..", "real"), true},
		{"symlink", real, link, true},
		{"relative symlink", real, relLink, true},
		{"not yet created, under a symlink", filepath.Join(real, "m1"), filepath.Join(link, "m1"), true},
		{"not yet created, two levels", filepath.Join(real, "a", "m1"), filepath.Join(relLink, "a", "m1"), true},
		{"two directories", real, other, false},
		{"not yet created, different names", filepath.Join(real, "m1"), filepath.Join(link, "m2"), false},
		{"a directory and a child of it", real, filepath.Join(link, "m1"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Same(tc.a, tc.b); got != tc.same {
				t.Errorf("Same(%q, %q) = %v, want %v (keys %q, %q)", tc.a, tc.b, got, tc.same, Key(tc.a), Key(tc.b))
			}
		})
	}
}
