package audit_test

import (
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestForgedLibraryWithAnotherHeaderIsForged: every function name ends in the version of
// the library that registers it, so no other kit version's library registers this build's
// names. A library named redlock whose header claims another version, but which registers
// this build's names with other code (an acquire that grants a held lock), can only be
// forged: the audit must say so, not call it another kit version's code it cannot verify.
// The controls: the masters left with this build's library report nothing shadowed, and
// a genuine other version (its own names: what versionskew's old clients find) shadows
// none of this build's names.
func TestForgedLibraryWithAnotherHeaderIsForged(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3})
	lib := redlock.FunctionLibrary()
	acquire := lib.Function("acquire")
	const otherVersion = "000000000000"
	forged := strings.Replace(lib.Code, "version "+lib.Version+":", "version "+otherVersion+":", 1)
	at := strings.Index(forged, "function_name='"+acquire+"'")
	cb := "callback=function(KEYS, ARGV)\n"
	body := at + strings.Index(forged[at:], cb) + len(cb)
	if at < 0 || body < at+len(cb) {
		t.Fatalf("no %s in the library:\n%s", acquire, lib.Code)
	}
	forged = forged[:body] + "do return {1, '0'} end\n" + forged[body:]
	// Another version's genuine library: every name carries that version instead.
	other := strings.ReplaceAll(lib.Code, lib.Version, otherVersion)

	ctx := t.Context()
	if err := c.Masters[1].Admin().FunctionLoadReplace(ctx, forged).Err(); err != nil {
		t.Fatalf("FUNCTION LOAD REPLACE of the forged library: %v", err)
	}
	if err := c.Masters[2].Admin().FunctionLoadReplace(ctx, other).Err(); err != nil {
		t.Fatalf("FUNCTION LOAD REPLACE of the other version: %v", err)
	}
	rep := run(t, target(c))
	if rep.Safe {
		t.Errorf("audit says SAFE with a forged %s on %s", acquire, c.Masters[1].Addr)
	}
	for i, am := range rep.Masters {
		wantForged := i == 1
		if am.ForgedFunctions != wantForged {
			t.Errorf("master %d (%s): forged %v, shadowed %q, unchecked %q; want forged %v",
				i, am.Endpoint, am.ForgedFunctions, am.ShadowedFunctions, am.Unchecked, wantForged)
		}
		if i != 1 && len(am.ShadowedFunctions) > 0 {
			t.Errorf("master %d: shadowed %q, want none", i, am.ShadowedFunctions)
		}
	}

	// A header reworded (a kit build with the same scripts) runs this build's functions:
	// nothing shadowed. Code put in the header is forged.
	reworded := strings.Replace(lib.Code, "-- lock users run it with FCALL only.", "-- reworded header line.", 1)
	injected := strings.Replace(lib.Code, "-- lock users run it with FCALL only.", "-- lock users run it with FCALL only.\nlocal injected = 1", 1)
	if reworded == lib.Code || injected == lib.Code {
		t.Fatalf("the library's header changed: update the test's line:\n%s", lib.Code[:300])
	}
	for _, tc := range []struct {
		code       string
		wantForged bool
	}{{reworded, false}, {injected, true}, {strings.Replace(injected, "\nlocal injected", "\n--[[x]] local injected", 1), true}} {
		if err := c.Masters[1].Admin().FunctionLoadReplace(ctx, tc.code).Err(); err != nil {
			t.Fatalf("FUNCTION LOAD REPLACE: %v", err)
		}
		am := run(t, target(c)).Masters[1]
		if am.ForgedFunctions != tc.wantForged || (len(am.ShadowedFunctions) > 0) != tc.wantForged {
			t.Errorf("header %q: forged %v, shadowed %q; want forged %v", tc.code[:200], am.ForgedFunctions, am.ShadowedFunctions, tc.wantForged)
		}
	}
}
