package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/funclib"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// TestFunctionLibrary: the library is generated from every script, loads on a real
// server, and registers exactly the functions it names.
func TestFunctionLibrary(t *testing.T) {
	lib := redlock.FunctionLibrary()
	if !strings.HasPrefix(lib.Code, "#!lua name="+redlock.FunctionLibraryName+"\n") {
		t.Fatalf("library code starts %q, want the #!lua header", lib.Code[:40])
	}
	if lib.Function("release") == "" || lib.Function("acquire") == "" || lib.Function("no such script") != "" {
		t.Fatalf("Function: release %q, acquire %q", lib.Function("release"), lib.Function("acquire"))
	}
	if len(lib.Functions) != redlock.ScriptCount() {
		t.Fatalf("library has %d functions, the package %d scripts", len(lib.Functions), redlock.ScriptCount())
	}
	if lua.LibraryVersion(lib.Code) != lib.Version || len(lib.Version) != 12 {
		t.Fatalf("version in the header %q, Version %q", lua.LibraryVersion(lib.Code), lib.Version)
	}
	cl := redistest.Start(t, redistest.Options{Masters: 1})
	libs, err := cl.Masters[0].Admin().FunctionList(adminCtx(t), redis.FunctionListQuery{LibraryNamePattern: lib.Name}).Result()
	if err != nil || len(libs) != 1 {
		t.Fatalf("FUNCTION LIST: %v %v", libs, err)
	}
	var got []string
	for _, f := range libs[0].Functions {
		got = append(got, f.Name)
	}
	for _, want := range lib.Functions {
		if !strings.Contains(strings.Join(got, " "), want) {
			t.Errorf("function %s not registered; the server has %v", want, got)
		}
	}
	if len(got) != len(lib.Functions) {
		t.Errorf("the server has %d functions, the library names %d", len(got), len(lib.Functions))
	}
	st, err := funclib.Check(adminCtx(t), cl.Masters[0].Admin())
	if err != nil || !st.Loaded || !st.Current || st.Version != lib.Version {
		t.Errorf("Check: %+v %v, want loaded and current at %s", st, err, lib.Version)
	}
}

// TestLockUserRunsOnlyTheKitsFunctions: the lock user locks through FCALL, and can no
// longer run Lua of its own (a busy loop), load scripts or functions.
func TestLockUserRunsOnlyTheKitsFunctions(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	ctx := context.Background()
	c := newClient(t, cl, redlock.Options{})
	l := mustAcquire(t, c, "fn-lock", 5*time.Second)
	if l.Fence() == 0 {
		t.Fatal("no fencing token: the acquire function did not run")
	}
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	fcalls, evals := 0, 0
	for _, m := range cl.Masters {
		fcalls += commandCalls(t, m, "fcall")
		evals += commandCalls(t, m, "evalsha") + commandCalls(t, m, "eval")
	}
	if fcalls == 0 || evals != 0 {
		t.Errorf("the masters ran %d FCALLs and %d EVAL/EVALSHAs; the lock user's client must use FCALL only", fcalls, evals)
	}

	lock := cl.Masters[0].LockClient()
	defer lock.Close()
	for _, cmd := range [][]any{
		{"eval", "local i = 0 while true do i = i + 1 end", "0"},
		{"evalsha", "0000000000000000000000000000000000000000", "0"},
		{"script", "load", "return 1"},
		{"function", "load", "replace", "#!lua name=mine\nredis.register_function('spin', function() while true do end end)"},
		{"function", "delete", redlock.FunctionLibraryName},
		{"function", "flush"},
	} {
		err := lock.Do(adminCtx(t), cmd...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("lock user: %s %s: %v, want NOPERM", cmd[0], cmd[1], err)
		}
	}
}

// TestEvalUserFallsBackToEvalsha: a user that may EVAL but not FCALL (the EVAL user; a
// server without Functions) gets the same locks through EVALSHA.
func TestEvalUserFallsBackToEvalsha(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	ctx := context.Background()
	c, err := redlock.New(evalClients(t, cl), redlock.Options{NodeTimeout: testNodeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	for i := range 3 {
		l := mustAcquire(t, c, "fn-eval", 5*time.Second)
		if err := l.Extend(ctx, 5*time.Second); err != nil {
			t.Fatalf("Extend %d: %v", i, err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release %d: %v", i, err)
		}
	}
	evalshas := 0
	for _, m := range cl.Masters {
		evalshas += commandCalls(t, m, "evalsha")
	}
	if evalshas == 0 {
		t.Error("no EVALSHA on any master: the EVAL user's client did not fall back")
	}
}

// TestLibraryMissingOrStale: a master without the library (or with another version of
// it) refuses a lock user both ways, with an error that says what to fix; once the admin
// loads the current library the same client works, without a restart.
func TestLibraryMissingOrStale(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(ctx context.Context, admin *redis.Client) error
	}{
		{"not loaded", func(ctx context.Context, admin *redis.Client) error {
			return admin.FunctionDelete(ctx, redlock.FunctionLibraryName).Err()
		}},
		{"another version", func(ctx context.Context, admin *redis.Client) error {
			old := "#!lua name=" + redlock.FunctionLibraryName + "\n" +
				"redis.register_function('redlock_release_000000000000', function(KEYS, ARGV) return 0 end)"
			return admin.FunctionLoadReplace(ctx, old).Err()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := redistest.Start(t, redistest.Options{Masters: 3})
			for _, m := range cl.Masters {
				if err := tc.break_(adminCtx(t), m.Admin()); err != nil {
					t.Fatal(err)
				}
			}
			c := newClient(t, cl, redlock.Options{})
			_, err := acquireOrHang(t, c, "fn-missing")
			if !errors.Is(err, redlock.ErrDenied) {
				t.Fatalf("Acquire without the library: %v, want ErrDenied", err)
			}
			for _, want := range []string{"Function not found", "'eval'", "FUNCTION LOAD REPLACE", "+eval"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q: %v", want, err)
				}
			}
			for _, m := range cl.Masters {
				if err := funclib.Load(adminCtx(t), m.Admin()); err != nil {
					t.Fatal(err)
				}
			}
			l, err := acquireOrHang(t, c, "fn-missing")
			if err != nil {
				t.Fatalf("Acquire once the library is loaded: %v", err)
			}
			if err := l.Release(context.Background()); err != nil {
				t.Fatalf("Release: %v", err)
			}
		})
	}
}
