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
