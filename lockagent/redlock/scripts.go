package redlock

import "github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"

// script is one of the library's Lua scripts (package lua, which documents each). A
// master that has the kit's function library (FunctionLibrary, loaded by the admin) runs
// it as a function with FCALL; elsewhere the batcher sends it by EVALSHA, loads it (SCRIPT
// LOAD) on a master whose cache is unknown and falls back to EVAL on NOSCRIPT (a restarted
// master). See functions.go.
type script struct {
	lua.Script
	shaArg any // SHA1 as a command argument, boxed once
	fnArg  any // Function boxed once
}

func newScript(s lua.Script) *script {
	return &script{Script: s, shaArg: s.SHA1, fnArg: s.Function}
}

var (
	acquireScript        = newScript(lua.Acquire)
	acquireQueuedScript  = newScript(lua.AcquireQueued)
	releaseScript        = newScript(lua.Release)
	durableReleaseScript = newScript(lua.ReleaseDurable)
	extendScript         = newScript(lua.Extend)
	fenceScript          = newScript(lua.Fence)
)

var allScripts = []*script{acquireScript, acquireQueuedScript, releaseScript, durableReleaseScript, extendScript, fenceScript}
