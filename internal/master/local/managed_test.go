package local

import (
	"slices"
	"testing"
)

// TestSplitACLLine: an ACL LIST line reads the same whatever order the server lists single
// commands in, with or without the sanitize-payload flag a redefinition writes out, and
// its password hashes come apart from the rules.
func TestSplitACLLine(t *testing.T) {
	a := "user redlock on #aa ~* &* -@all +time +ping +get +fcall"
	b := "user redlock on sanitize-payload #aa ~* &* -@all +fcall +get +time +ping"
	nameA, rulesA, hashesA := splitACLLine(a)
	_, rulesB, _ := splitACLLine(b)
	if nameA != "redlock" || rulesA != rulesB || !slices.Equal(hashesA, []string{"aa"}) {
		t.Fatalf("got %q %q %v and %q", nameA, rulesA, hashesA, rulesB)
	}
	if want := "on ~* &* -@all +fcall +get +ping +time"; rulesA != want {
		t.Errorf("rules %q, want %q", rulesA, want)
	}
	// A category between command runs keeps its place: order matters there.
	_, rules, _ := splitACLLine("user u on ~* -@all +set +get +@read -keys -debug")
	if want := "on ~* -@all +get +set +@read -debug -keys"; rules != want {
		t.Errorf("rules %q, want %q", rules, want)
	}
	if _, rules, _ := splitACLLine("user u on +@all ~*"); rules != "on +@all ~*" {
		t.Errorf("rules %q", rules)
	}
}
