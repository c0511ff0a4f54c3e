package lua

import (
	"strings"
	"testing"
)

// TestCompactPrecondition: Compact drops every line that starts with "--" and every line's
// indentation, which is only safe while no script has a long string or a long comment
// ([[ ]], [=[ ]=]); a script that gains one must change Compact first.
func TestCompactPrecondition(t *testing.T) {
	for _, s := range All() {
		if strings.Contains(s.Source, "[[") || strings.Contains(s.Source, "[=") {
			t.Errorf("script %s has a long string or comment: Compact would change it", s.Name)
		}
	}
	if got := Compact("  -- a comment\n\tlocal x = 1 -- kept\n\n  return x\n"); got != "local x = 1 -- kept\nreturn x" {
		t.Errorf("Compact: %q", got)
	}
}

// TestScriptHeaderIsNotCode: a file's header comment is left out of the script, so it can
// be reworded without changing the script's SHA-1; the code after it, comments included,
// is the script; the constants are put in.
func TestScriptHeaderIsNotCode(t *testing.T) {
	for _, s := range All() {
		if strings.Contains(s.Source, "KEYS[1] lock key;") {
			t.Errorf("script %s carries its file's header comment", s.Name)
		}
		for _, name := range []string{"GRANT_CHANNEL", "HANDOFF_PERIOD", "OPEN_WINDOW", "CHAIN_FENCES", "FOREIGN_QUEUE"} {
			if strings.Contains(s.Source, name) {
				t.Errorf("script %s still names %s", s.Name, name)
			}
		}
	}
	if !strings.HasPrefix(Release.Source, "local durable = false\nlocal function quiet()") {
		t.Errorf("release starts %q", Release.Source[:60])
	}
	if !strings.Contains(Release.Source, `.. ":granted:" ..`) || !strings.Contains(AcquireQueued.Source, `"REDLOCKFOREIGNQUEUE"`) {
		t.Error("the constants are not put into the scripts")
	}
	if !strings.Contains(Release.Source, "-- readq returns the queue") {
		t.Error("comments inside the code were dropped from the script")
	}
}

// TestLibraryVersionReadsTheHeader: the version FunctionLibrary writes is the one
// LibraryVersion reads back; code without the header has none.
func TestLibraryVersionReadsTheHeader(t *testing.T) {
	lib := FunctionLibrary()
	if got := LibraryVersion(lib.Code); got != lib.Version || len(got) != 12 {
		t.Errorf("LibraryVersion = %q, Version %q", got, lib.Version)
	}
	if got := LibraryVersion("#!lua name=redlock\nredis.register_function('f', function() end)"); got != "" {
		t.Errorf("LibraryVersion of code without the header = %q", got)
	}
}

// TestOneScriptChangedRenamesEveryFunction: two library versions share no function name,
// so a client at one version finds none of its functions (acquire included) on a master at
// the other, and a lock user is refused before its acquisition writes anything. The
// negative control is the naming this replaced, a function per script's own SHA-1: with
// only release changed, acquire's SHA-1 (and that name) stays, so a client of the other
// version acquired there and then could not release.
func TestOneScriptChangedRenamesEveryFunction(t *testing.T) {
	current := All()
	other := All()
	for i, s := range other {
		if s.Name == "release" {
			other[i] = newScript(s.Name, s.Source+"\nlocal changed = true", s.Flags...)
		}
	}
	other = versioned(other)
	if versionOf(other) == versionOf(current) {
		t.Fatal("changing release kept the library version")
	}
	for i := range current {
		if current[i].Function == other[i].Function {
			t.Errorf("%s: both versions name it %s", current[i].Name, current[i].Function)
		}
		if !strings.HasSuffix(current[i].Function, "_"+FunctionLibrary().Version) {
			t.Errorf("%s: function %s does not end in the library version %s", current[i].Name, current[i].Function, FunctionLibrary().Version)
		}
	}
	// The negative control: named by their own SHA-1, acquire is shared between the two.
	if current[0].Name != "acquire" || current[0].SHA1 != other[0].SHA1 {
		t.Fatalf("negative control: acquire's SHA-1 differs between the versions (%s, %s)", current[0].SHA1, other[0].SHA1)
	}
	t.Logf("per-script names would share redlock_acquire_%s; library names: %s and %s", current[0].SHA1[:12], current[0].Function, other[0].Function)
	// Comments are not what the library carries: rewording one keeps the version.
	reworded := All()
	reworded[0] = newScript(reworded[0].Name, "-- reworded\n"+reworded[0].Source, reworded[0].Flags...)
	if versionOf(reworded) != versionOf(current) {
		t.Error("a comment line changed the library version")
	}
}
