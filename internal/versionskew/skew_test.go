package versionskew_test

import (
	"context"
	_ "embed"
	"regexp"
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
//     fails where a script it needs changed between the versions, saying why (the function
//     library); a script both share runs, so it may acquire and then fail to release, and
//     the lock stays until its TTL ends; a user allowed EVAL locks (its client sends its own
//     scripts);
//   - the masters upgraded first: the previous version's functions that changed are gone
//     from them, so a previous client's FCALL of one finds nothing (it never runs this
//     version's code under its names) and, FCALL only, fails there as above;
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
	heldNowhere := func(t *testing.T, key string) {
		t.Helper()
		for _, m := range c.Masters {
			if n, err := m.Admin().Exists(ctx, key).Result(); err != nil || n != 0 {
				t.Errorf("%s is left on %s (%d, %v) after a failed acquisition", key, m.Addr, n, err)
			}
		}
	}

	t.Run("same version: a lock user locks", func(t *testing.T) {
		if err := locks(t, client(t, redistest.LockUser, redistest.LockPassword), "skew:same"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("client newer than the masters: a lock user fails, is told why, and leaves nothing past its TTL", func(t *testing.T) {
		load(t, previous, c.Masters...)
		cl := client(t, redistest.LockUser, redistest.LockPassword)
		lock, err := cl.TryAcquire(ctx, "skew:newer-client", ttl)
		step := "acquire"
		if err == nil {
			// A script both versions share (the same name) runs; one that changed does not.
			step, err = "release", lock.Release(ctx)
		}
		t.Logf("a client at %s, masters at %s: %s: %v", current.Version, prevVersion, step, err)
		if err == nil || !strings.Contains(err.Error(), "function library") {
			t.Fatalf("%s: err = %v, want a failure that names the function library", step, err)
		}
		// What a failed release leaves behind is a lock with its TTL: it expires.
		for _, m := range c.Masters {
			left, err := m.Admin().PTTL(ctx, "skew:newer-client").Result()
			if err != nil || left == -1 || left > ttl {
				t.Errorf("skew:newer-client on %s: PTTL %v (%v), want absent or expiring within %v", m.Addr, left, err, ttl)
			}
		}
	})

	t.Run("client newer than the masters: a user allowed EVAL locks", func(t *testing.T) {
		load(t, previous, c.Masters...)
		if err := locks(t, client(t, redistest.EvalUser, redistest.EvalPassword), "skew:newer-client-eval"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("masters newer than the client: the previous functions are gone", func(t *testing.T) {
		gone := 0
		for _, name := range functionNames(previous) {
			if current.Function(scriptOf(name)) == name {
				continue // a script both versions share: the same body, the same name
			}
			gone++
			for _, m := range c.Masters {
				lockUser := m.ClientAs(redistest.LockUser, redistest.LockPassword)
				err := lockUser.FCall(ctx, name, []string{"skew:older-client"}, "token", ttl.Milliseconds()).Err()
				_ = lockUser.Close()
				if err == nil || !strings.Contains(strings.ToLower(err.Error()), "function not found") {
					t.Errorf("FCALL %s (the previous client's) on %s: %v, want function not found", name, m.Addr, err)
				}
			}
		}
		if gone == 0 {
			t.Fatal("the previous library has no function this one lacks: the versions do not differ")
		}
		// The previous client's fallback, EVALSHA, is refused to a lock user (FCALL only).
		lockUser := c.Masters[0].ClientAs(redistest.LockUser, redistest.LockPassword)
		defer lockUser.Close()
		if err := lockUser.EvalSha(ctx, strings.Repeat("0", 40), nil).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("EVALSHA as the lock user: %v, want NOPERM", err)
		}
		heldNowhere(t, "skew:older-client")
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

// scriptOf is the script a function name is of: "redlock_<script>_<sha12>".
func scriptOf(function string) string {
	s := strings.TrimPrefix(function, "redlock_")
	return s[:max(0, len(s)-13)]
}
