package redlock

import (
	"strings"
	"testing"
)

// TestCompactLuaPrecondition: compactLua drops every line that starts with "--" and every
// line's indentation, which is only safe while no script has a long string or a long
// comment ([[ ]], [=[ ]=]); a script that gains one must change compactLua first.
func TestCompactLuaPrecondition(t *testing.T) {
	for _, s := range allScripts {
		if strings.Contains(s.src, "[[") || strings.Contains(s.src, "[=") {
			t.Errorf("script %s has a long string or comment: compactLua would change it", s.name)
		}
	}
	if got := compactLua("  -- a comment\n\tlocal x = 1 -- kept\n\n  return x\n"); got != "local x = 1 -- kept\nreturn x" {
		t.Errorf("compactLua: %q", got)
	}
}
