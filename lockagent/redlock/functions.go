package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// FunctionLibraryName is the name of the kit's Redis Function library (Redis >= 7.0,
// Valkey): FUNCTION LOAD REPLACE of FunctionLibrary().Code replaces the previous version.
const FunctionLibraryName = lua.LibraryName

// FunctionLib is the kit's function library (package lua): every script of the library as
// a Redis function, for the admin to load (FUNCTION LOAD REPLACE Code) at every start of a
// master. Lock users then need FCALL only, not EVAL, EVALSHA or SCRIPT: they can run the
// kit's scripts and nothing else.
type FunctionLib = lua.Library

// FunctionLibrary returns the kit's function library (lua.FunctionLibrary).
func FunctionLibrary() FunctionLib { return lua.FunctionLibrary() }

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
	function    string // the function FCALL asked for
	fcall, eval error
}

func (e *scriptsUnavailableError) Error() string {
	if strings.Contains(strings.ToLower(e.fcall.Error()), "function not found") {
		// Every function name ends in the library version (lua.Script.Function): the
		// master runs another version of the library, or none.
		return fmt.Sprintf("NOPERM the master has no function %s (%v): its %q function library is not this client's "+
			"version %s (another version, or none is loaded), and this user may not run the client's own scripts "+
			"(EVAL failed: %v). A lock user's client and the masters must run the same function-library version "+
			"(`lockagent validate` prints each master's function_library_version); the call ran nothing there. Fix: use a "+
			"client built at the masters' version, or load this client's library on every master as the admin "+
			"(FUNCTION LOAD REPLACE with redlock.FunctionLibrary().Code, or `lockagent functions`; masters the kit "+
			"runs load their own at every start: upgrade them), or give the client a user with +eval +evalsha "+
			"+script|load", e.function, e.fcall, FunctionLibraryName, FunctionLibrary().Version, e.eval)
	}
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
		orig     *redis.Cmd
		first    error // the reply the pipeline got
		cmd      *redis.Cmd
		via      int
		function string
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
			retries = append(retries, retry{orig: r.cmds[i], first: err, cmd: c.command(ctx, via, false), via: via, function: c.script.Function})
		}
	}
	if len(retries) == 0 {
		return
	}
	pipe := m.rdb.Pipeline()
	for _, rt := range retries {
		_ = pipe.Process(ctx, m.onceOnly(rt.cmd))
	}
	_, _ = pipe.Exec(ctx)
	from, evalWorked := m.scriptsVia, false
	for _, rt := range retries {
		err := rt.cmd.Err()
		switch {
		case rt.via == viaScripts && from == viaFunctions && scriptsDenied(err):
			rt.orig.SetErr(&scriptsUnavailableError{function: rt.function, fcall: rt.first, eval: err})
			continue
		case rt.via == viaFunctions && functionsUnavailable(err):
			rt.orig.SetErr(&scriptsUnavailableError{function: rt.function, fcall: err, eval: rt.first})
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
