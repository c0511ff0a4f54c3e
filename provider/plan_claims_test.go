package provider

import (
	"path/filepath"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/master/local/dirid"
)

// TestClaimOfARemovedDirIsStale: a claim is keyed by a directory's device and inode, which a
// removed directory hands on to the next one made: a claim whose own path no longer leads to
// that key is stale (a test's provider outlives the test's temporary dirs: seen as "data_dir
// shared by two masters" between two tests). A claim whose path still leads there, and an
// alias of it, conflict (the controls).
func TestClaimOfARemovedDirIsStale(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "m")
	key := dirid.Key(dir)

	c := &dataDirClaims{byDir: map[string]dirClaim{key: {name: "m0", path: filepath.Join(base, "gone", "m")}}}
	if other := c.claim(dir, "m1"); other != "" {
		t.Errorf("a stale claim (its path leads elsewhere now) conflicted with %q", other)
	}
	c = &dataDirClaims{}
	if other := c.claim(dir, "m0"); other != "" {
		t.Fatalf("first claim: %q", other)
	}
	if other := c.claim(dir, "m1"); other != "m0" {
		t.Errorf("the same data_dir for another master: %q, want m0", other)
	}
	if other := c.claim(filepath.Join(base, ".", "m"), "m2"); other != "m0" {
		t.Errorf("another spelling of the data_dir: %q, want m0", other)
	}
}
