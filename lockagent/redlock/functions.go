package redlock

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// FunctionLibraryName is the name of the kit's Redis Function library (Redis >= 7.0,
// Valkey): FUNCTION LOAD REPLACE of FunctionLibrary().Code replaces the previous version.
const FunctionLibraryName = "redlock"

// allowOOM is the function flag of a script that must run on a master that is out of
// memory: a release only deletes. Without it a function is refused as a whole under OOM
// (where EVAL would only refuse its SET), which is what an acquisition wants.
const allowOOM = "allow-oom"

// FunctionLib is the kit's function library: every script of the library as a Redis
// function, for the admin to load (FUNCTION LOAD REPLACE Code) at every start of a master.
// Lock users then need FCALL only, not EVAL, EVALSHA or SCRIPT: they can run the kit's
// scripts and nothing else.
type FunctionLib struct {
	Name string // FunctionLibraryName
	// Version identifies the library's code (a SHA-1 prefix of the functions): two kit
	// versions with the same scripts have the same Version.
	Version string
	// Code is the library source, starting "#!lua name=redlock".
	Code string
	// Functions are the function names, one per script, in registration order. Each name
	// ends in its script's SHA-1 prefix, so a client never runs another body than its own:
	// on a master whose library is of another version the function is not found and the
	// client falls back to EVALSHA (where its user may run scripts).
	Functions []string
	byScript  map[string]string
}

// Function returns the function name of the library's script named script ("acquire",
// "release", "release_durable", "extend", "fence", ...), "" when there is none.
func (l FunctionLib) Function(script string) string { return l.byScript[script] }

var (
	libOnce sync.Once
	lib     FunctionLib
)

// FunctionLibrary returns the kit's function library, generated from the library's
// scripts: a script added to the library is a function of it at once.
func FunctionLibrary() FunctionLib {
	libOnce.Do(func() { lib = generateLibrary(allScripts) })
	lib := lib
	lib.Functions = append([]string(nil), lib.Functions...)
	return lib
}

// functionName is the function of the script name with body SHA-1 sha.
func functionName(name, sha string) string {
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			panic(fmt.Sprintf("redlock: script name %q: use lower case letters, digits and '_'", name))
		}
	}
	return "redlock_" + name + "_" + sha[:12]
}

// generateLibrary writes one redis.register_function per script. The script's body
// becomes the function's body as it is: KEYS and ARGV are the function's parameters, so
// FCALL fn numkeys keys... args... runs exactly what EVAL src numkeys keys... args...
// runs (same keys, values and replies: wire-compatible with other Redlock clients).
func generateLibrary(scripts []*script) FunctionLib {
	var body strings.Builder
	var names []string
	byScript := map[string]string{}
	for _, s := range scripts {
		if byScript[s.name] != "" {
			panic(fmt.Sprintf("redlock: two scripts are named %q", s.name))
		}
		byScript[s.name] = s.fn
		names = append(names, s.fn)
		flags := make([]string, len(s.flags))
		for i, f := range s.flags {
			flags[i] = "'" + f + "'"
		}
		fmt.Fprintf(&body, "\nredis.register_function{function_name='%s', flags={%s}, callback=function(KEYS, ARGV)\n%s\nend}\n",
			s.fn, strings.Join(flags, ", "), compactLua(s.src))
	}
	sum := sha1.Sum([]byte(body.String()))
	version := hex.EncodeToString(sum[:])[:12]
	code := fmt.Sprintf("#!lua name=%s\n-- redlock-kit function library, version %s: the Redlock scripts of\n"+
		"-- github.com/redlock-kit/redlock-kit/lockagent/redlock. The admin loads it (FUNCTION LOAD REPLACE);\n"+
		"-- lock users run it with FCALL only.\n%s", FunctionLibraryName, version, body.String())
	return FunctionLib{Name: FunctionLibraryName, Version: version, Code: code, Functions: names, byScript: byScript}
}

// compactLua is a script's body as the library carries it: without its comment lines, blank
// lines and indentation, which Lua ignores. The library travels in every host's user-data,
// which must stay under 16 KiB; the commented source stays in scripts.go (and is what EVAL
// sends). The scripts have no long strings or comments ([[ ]]), so a line whose first
// non-blank characters are "--" is a comment.
func compactLua(src string) string {
	var out []string
	for _, line := range strings.Split(strings.Trim(src, "\n"), "\n") {
		line = strings.TrimLeft(line, " \t")
		if line == "" || strings.HasPrefix(line, "--") {
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// How one master runs the scripts (master.scriptsVia, batcher goroutine only).
const (
	viaFunctions = iota // FCALL of the function library (tried first)
	viaScripts          // EVALSHA, SCRIPT LOAD, EVAL
)

// functionsUnavailable reports whether err, the reply to an FCALL, says that the master
// cannot run the kit's function for this user: the library is not loaded (or is of
// another version), the server has no functions (Redis < 7), or the user may not FCALL.
// A script's own error or a refused key is not.
func functionsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "function not found"):
		return true
	case strings.Contains(msg, "unknown command") && strings.Contains(msg, "fcall"):
		return true
	case strings.HasPrefix(msg, "noperm") && strings.Contains(msg, "'fcall'"):
		return true
	}
	return false
}

// scriptsDenied reports whether err, the reply to an EVALSHA or EVAL, is the user's
// refusal of the command itself (not of a key).
func scriptsDenied(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.HasPrefix(msg, "noperm") &&
		(strings.Contains(msg, "'eval'") || strings.Contains(msg, "'evalsha'") || strings.Contains(msg, "'script"))
}

// scriptsUnavailableError is a script call that a master refused both ways: its user
// may not run the kit's functions (or the library is not loaded there) and may not run
// scripts either. It is a server reply (redis.Error) starting with NOPERM, so it is
// reported as a *DeniedError: retrying cannot help, and the message says what to fix.
type scriptsUnavailableError struct {
	fcall, eval error
}

func (e *scriptsUnavailableError) Error() string {
	return fmt.Sprintf("NOPERM the master cannot run the kit's scripts for this user: FCALL of the %q function "+
		"library (version %s) failed (%v), and EVAL failed (%v). Fix: load the library as the admin "+
		"(FUNCTION LOAD REPLACE with redlock.FunctionLibrary().Code, or `lockagent functions`; masters the kit runs load "+
		"it at every start) and allow this user +fcall, or, for a client that needs EVAL, give it a user with "+
		"+eval +evalsha +script|load", FunctionLibraryName, FunctionLibrary().Version, e.fcall, e.eval)
}

// RedisError marks the error as a server reply (redis.Error).
func (e *scriptsUnavailableError) RedisError() {}

var _ redis.Error = (*scriptsUnavailableError)(nil)

// retryScripts runs again, the other way, each script call of live that the master could
// not run the way the pipeline sent it, and sets the master's way for the next pipelines:
//
//   - FCALL, and the function is not there (no library, another version of it, Redis < 7)
//     or the user may not FCALL: EVAL (which also caches the script); when that works the
//     master uses EVALSHA from then on (with SCRIPT LOAD before the next pipeline).
//   - EVALSHA and NOSCRIPT (a restarted master lost its script cache): EVAL, as before
//     functions; the next pipelines try FCALL again, since the admin loads the library
//     at every start.
//   - EVALSHA and the user may not run scripts: FCALL.
//
// A call refused both ways gets a *scriptsUnavailableError (NOPERM: what to fix), and
// the master keeps trying FCALL first, so that a library the admin loads later is used
// at once.
func (m *master) retryScripts(ctx context.Context, live []*request) {
	type retry struct {
		orig  *redis.Cmd
		first error // the reply the pipeline got
		cmd   *redis.Cmd
		via   int
	}
	var retries []retry
	noScript := false
	for _, r := range live {
		for i, c := range r.calls {
			if c.script == nil {
				continue
			}
			err := r.cmds[i].Err()
			var via int
			switch {
			case m.scriptsVia == viaFunctions && functionsUnavailable(err):
				via = viaScripts
			case m.scriptsVia == viaScripts && isNoScript(err):
				via, noScript = viaScripts, true
			case m.scriptsVia == viaScripts && scriptsDenied(err):
				via = viaFunctions
			default:
				continue
			}
			retries = append(retries, retry{orig: r.cmds[i], first: err, cmd: c.command(ctx, via, false), via: via})
		}
	}
	if len(retries) == 0 {
		return
	}
	pipe := m.rdb.Pipeline()
	for _, rt := range retries {
		_ = pipe.Process(ctx, rt.cmd)
	}
	_, _ = pipe.Exec(ctx)
	from, evalWorked := m.scriptsVia, false
	for _, rt := range retries {
		err := rt.cmd.Err()
		switch {
		case rt.via == viaScripts && from == viaFunctions && scriptsDenied(err):
			rt.orig.SetErr(&scriptsUnavailableError{fcall: rt.first, eval: err})
			continue
		case rt.via == viaFunctions && functionsUnavailable(err):
			rt.orig.SetErr(&scriptsUnavailableError{fcall: err, eval: rt.first})
			continue
		case rt.via == viaScripts && from == viaFunctions && serverRan(err):
			evalWorked = true
		}
		rt.orig.SetVal(rt.cmd.Val())
		rt.orig.SetErr(err)
	}
	switch {
	case from == viaFunctions && evalWorked:
		m.scriptsVia, m.scriptsLoaded = viaScripts, false
	case from == viaScripts:
		// NOSCRIPT: a restarted master, which may have the library now; denied: FCALL.
		m.scriptsVia, m.scriptsLoaded = viaFunctions, m.scriptsLoaded && !noScript
	}
}

// serverRan reports whether err (a reply to a retried call) shows that the server ran the
// command: no error, or a reply of the command (a script's error, a refused key). A
// connection failure says nothing about the way of running scripts.
func serverRan(err error) bool {
	var reply redis.Error
	return err == nil || errors.Is(err, redis.Nil) || errors.As(err, &reply)
}
