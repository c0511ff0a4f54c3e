package audit_test

import (
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestCarriageReturnInHeaderCommentIsForged: Lua ends a "--" comment at a carriage return
// as at a line feed, so "-- comment\r<code>" is a comment line followed by code. A library
// whose header hides, after a CR, a local redis that grants every SET runs this build's
// function names with code that grants a held lock: the audit must call it forged.
// The control: the same header with the CR replaced by a space is a comment only (the
// lock stays denied, nothing shadowed).
func TestCarriageReturnInHeaderCommentIsForged(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 1})
	lib := redlock.FunctionLibrary()
	const line = "-- lock users run it with FCALL only."
	// The local redis shadows the global for every function body after it; its call
	// grants every SET and passes the rest through to the real API at run time (acquire
	// uses redis.call only).
	const hidden = "local redis = {register_function = redis.register_function, call = function(cmd, ...) if cmd == 'set' then return {ok = 'OK'} end return redis.call(cmd, ...) end}"
	forged := strings.Replace(lib.Code, line, line+"\r"+hidden, 1)
	reworded := strings.Replace(lib.Code, line, line+" "+hidden, 1)
	if forged == lib.Code {
		t.Fatalf("the library's header changed: update the test's line:\n%s", lib.Code[:300])
	}
	ctx := t.Context()
	admin := c.Masters[0].Admin()
	acquire := lib.Function("acquire")
	for _, tc := range []struct {
		name       string
		code       string
		wantForged bool
	}{{"CR", forged, true}, {"space (control)", reworded, false}} {
		if err := admin.FunctionLoadReplace(ctx, tc.code).Err(); err != nil {
			t.Fatalf("%s: FUNCTION LOAD REPLACE: %v", tc.name, err)
		}
		if err := admin.Set(ctx, "held", "other-holder", 0).Err(); err != nil {
			t.Fatalf("SET held: %v", err)
		}
		got, err := admin.FCall(ctx, acquire, []string{"held", "held-fence"}, "mine", 10000, 1).Slice()
		if err != nil {
			t.Fatalf("%s: FCALL %s: %v", tc.name, acquire, err)
		}
		granted := len(got) > 0 && got[0] == int64(1)
		t.Logf("%s: FCALL %s on a held key answered %v (granted %v)", tc.name, acquire, got, granted)
		if granted != tc.wantForged {
			t.Fatalf("%s: granted %v, want %v: the test's premise about Lua comments is wrong", tc.name, granted, tc.wantForged)
		}
		am := run(t, target(c)).Masters[0]
		if am.ForgedFunctions != tc.wantForged || (len(am.ShadowedFunctions) > 0) != tc.wantForged {
			t.Errorf("%s: forged %v, shadowed %q; want forged %v", tc.name, am.ForgedFunctions, am.ShadowedFunctions, tc.wantForged)
		}
	}
}
