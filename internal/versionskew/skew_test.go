package versionskew_test

import (
	"context"
	_ "embed"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/funclib"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// previous is the function library of the kit version before this one.
//
//go:embed testdata/redlock-functions-9b0b3ea116f1.lua
var previous string

const ttl = 5 * time.Second

// TestVersionSkew runs clients against masters whose function library is of another
// version than the client's, in both directions, on real masters:
//   - same version (the control): a lock user (FCALL only) locks;
//   - the client upgraded first (masters at the previous library): a lock user's client
//     finds none of its functions (each is named after the library's version) and is
//     refused before anything is written, told its version, the function and the fix; a
//     user allowed EVAL locks (its client sends its own scripts);
//   - the masters upgraded first: the previous client's functions are gone from them, so
//     its acquisition is refused before anything is written;
//   - the negative controls put back the naming this replaced (a function per script's own
//     SHA-1): in both directions the acquire function both versions share runs, and the
//     release that changed is not found: a lock taken that cannot be released;
//   - a rolling upgrade with a minority of masters behind: the client locks on the majority.
func TestVersionSkew(t *testing.T) {
	prevVersion := lua.LibraryVersion(previous)
	current := redlock.FunctionLibrary()
	if prevVersion == "" || prevVersion == current.Version {
		t.Fatalf("testdata's library (version %q) must be another version than this build's (%s)", prevVersion, current.Version)
	}
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	load := func(t *testing.T, code string, masters ...*redistest.Master) {
		t.Helper()
		for _, m := range masters {
			if err := m.Admin().FunctionLoadReplace(ctx, code).Err(); err != nil {
				t.Fatalf("load on %s: %v", m.Addr, err)
			}
		}
		t.Cleanup(func() {
			for _, m := range masters {
				_ = funclib.Load(context.Background(), m.Admin())
			}
		})
	}
	client := func(t *testing.T, user, password string) *redlock.Client {
		t.Helper()
		var masters []redis.UniversalClient
		for _, m := range c.Masters {
			rdb := m.ClientAs(user, password)
			t.Cleanup(func() { _ = rdb.Close() })
			masters = append(masters, rdb)
		}
		// A generous node timeout: the EVAL fallback takes a few round trips, and the machine may be loaded.
		cl, err := redlock.New(masters, redlock.Options{MaxTTL: ttl, NodeTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.Close() })
		return cl
	}
	locks := func(t *testing.T, cl *redlock.Client, key string) error {
		t.Helper()
		lock, err := cl.TryAcquire(ctx, key, ttl)
		if err != nil {
			return err
		}
		if lock.Fence() == 0 {
			t.Errorf("%s: locked without a fence", key)
		}
		return lock.Release(ctx)
	}

	// nothingWritten: no key of the lock (the lock, its fence register, its queue) on any master.
	nothingWritten := func(t *testing.T, key string) {
		t.Helper()
		for _, m := range c.Masters {
			if keys, err := m.Admin().Keys(ctx, key+"*").Result(); err != nil || len(keys) != 0 {
				t.Errorf("on %s after the refused acquisition: %v (%v), want no key", m.Addr, keys, err)
			}
		}
	}
	// perScriptClient does, as the lock user on every master, what a client whose
	// functions are acquire and release does: FCALL acquire and, where it took the key,
	// FCALL release. It says what happened on the masters, which must agree.
	perScriptClient := func(t *testing.T, key string, acquire, release lua.Script) string {
		t.Helper()
		outcome := map[string]bool{}
		for _, m := range c.Masters {
			rdb := m.ClientAs(redistest.LockUser, redistest.LockPassword)
			err := rdb.FCall(ctx, acquire.Function, []string{key, key + lua.FenceSuffix}, "token", ttl.Milliseconds(), 1).Err()
			if err != nil {
				outcome["refused: "+notFound(err)] = true
			} else {
				err := rdb.FCall(ctx, release.Function, []string{key, key + lua.FenceSuffix}, "token", 1).Err()
				outcome["acquired, release: "+notFound(err)] = true
			}
			_ = rdb.Close()
		}
		if len(outcome) != 1 {
			t.Fatalf("the masters disagree: %v", outcome)
		}
		for o := range outcome {
			return o
		}
		return ""
	}

	t.Run("same version: a lock user locks", func(t *testing.T) {
		if err := locks(t, client(t, redistest.LockUser, redistest.LockPassword), "skew:same"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("client newer than the masters: a lock user is refused before anything is written, told the versions and the fix", func(t *testing.T) {
		load(t, previous, c.Masters...)
		cl := client(t, redistest.LockUser, redistest.LockPassword)
		lock, err := cl.TryAcquire(ctx, "skew:newer-client", ttl)
		if err == nil {
			_ = lock.Release(ctx)
			t.Fatalf("a client at %s locked on masters at %s", current.Version, prevVersion)
		}
		t.Logf("a client at %s, masters at %s: %v", current.Version, prevVersion, err)
		if !errors.Is(err, redlock.ErrDenied) {
			t.Errorf("err = %v, want ErrDenied (retrying cannot help)", err)
		}
		for _, want := range []string{current.Version, current.Function("acquire"), "function_library_version", "FUNCTION LOAD REPLACE", "same function-library version"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say %q: %v", want, err)
			}
		}
		nothingWritten(t, "skew:newer-client")
	})

	t.Run("negative control, client newer than the masters: named per script, acquire is shared and the lock cannot be released", func(t *testing.T) {
		load(t, previous, c.Masters...)
		got := perScriptClient(t, "skew:per-script-newer", perScript(lua.Acquire), perScript(lua.Release))
		t.Logf("per-script names, a client at %s on masters at %s: %s", current.Version, prevVersion, got)
		if got != "acquired, release: function not found" {
			t.Fatalf("per-script names: %s; want the regression (acquired, release: function not found)", got)
		}
	})

	t.Run("client newer than the masters: a user allowed EVAL locks", func(t *testing.T) {
		load(t, previous, c.Masters...)
		if err := locks(t, client(t, redistest.EvalUser, redistest.EvalPassword), "skew:newer-client-eval"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("masters newer than the client: the previous client is refused before anything is written", func(t *testing.T) {
		prevAcquire, prevRelease := previousScript(t, "acquire"), previousScript(t, "release")
		got := perScriptClient(t, "skew:older-client", prevAcquire, prevRelease)
		t.Logf("the previous client (%s) on masters at %s: %s", prevVersion, current.Version, got)
		if got != "refused: function not found" {
			t.Fatalf("the previous client: %s; want refused: function not found", got)
		}
		for _, name := range functionNames(previous) {
			if slices.Contains(current.Functions, name) {
				t.Errorf("function %s is in both versions", name)
			}
		}
		// The previous client's fallback, EVALSHA, is refused to a lock user (FCALL only).
		lockUser := c.Masters[0].ClientAs(redistest.LockUser, redistest.LockPassword)
		defer lockUser.Close()
		if err := lockUser.EvalSha(ctx, strings.Repeat("0", 40), nil).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("EVALSHA as the lock user: %v, want NOPERM", err)
		}
		nothingWritten(t, "skew:older-client")
	})

	t.Run("negative control, masters newer than the client: named per script, the previous client acquires and cannot release", func(t *testing.T) {
		load(t, perScriptLibrary(t, current), c.Masters...)
		got := perScriptClient(t, "skew:per-script-older", previousScript(t, "acquire"), previousScript(t, "release"))
		t.Logf("per-script names, the previous client (%s) on masters at %s: %s", prevVersion, current.Version, got)
		if got != "acquired, release: function not found" {
			t.Fatalf("per-script names: %s; want the regression (acquired, release: function not found)", got)
		}
	})

	t.Run("rolling upgrade, a minority behind: a lock user locks on the majority", func(t *testing.T) {
		load(t, previous, c.Masters[2])
		if err := locks(t, client(t, redistest.LockUser, redistest.LockPassword), "skew:rolling"); err != nil {
			t.Fatal(err)
		}
	})
}

var registered = regexp.MustCompile(`function_name='([a-z0-9_]+)'`)

// functionNames are the functions code registers.
func functionNames(code string) []string {
	var out []string
	for _, m := range registered.FindAllStringSubmatch(code, -1) {
		out = append(out, m[1])
	}
	return out
}

// scriptOf is the script a function name is of: "redlock_<script>_<12 hex digits>".
func scriptOf(function string) string {
	s := strings.TrimPrefix(function, "redlock_")
	return s[:max(0, len(s)-13)]
}

// notFound is "function not found" for that error, else the error itself ("ok" for none).
func notFound(err error) string {
	switch {
	case err == nil || errors.Is(err, redis.Nil):
		return "ok"
	case strings.Contains(strings.ToLower(err.Error()), "function not found"):
		return "function not found"
	}
	return err.Error()
}

// previousScript is the previous library's function of script (only its name is used).
func previousScript(t *testing.T, script string) lua.Script {
	t.Helper()
	for _, name := range functionNames(previous) {
		if scriptOf(name) == script {
			return lua.Script{Name: script, Function: name}
		}
	}
	t.Fatalf("the previous library has no function of %s", script)
	return lua.Script{}
}

// perScript is s with its function named after its own SHA-1, as before.
func perScript(s lua.Script) lua.Script {
	s.Function = "redlock_" + s.Name + "_" + s.SHA1[:12]
	return s
}

// perScriptLibrary is lib with its functions named as before they carried the library
// version, each after its own script's SHA-1 ("redlock_<script>_<sha12>"): the naming
// the negative controls put back.
func perScriptLibrary(t *testing.T, lib redlock.FunctionLib) string {
	t.Helper()
	code := lib.Code
	for _, s := range lua.All() {
		code = strings.Replace(code, "'"+s.Function+"'", "'"+perScript(s).Function+"'", 1)
	}
	if strings.Contains(code, lib.Version+"'") {
		t.Fatal("a function of the library kept its versioned name")
	}
	return code
}
