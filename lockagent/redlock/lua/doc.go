// Package lua holds the Redlock scripts of github.com/redlock-kit/redlock-kit/lockagent/redlock
// as Lua files (embedded), and the kit's Redis Function library made of them: what the
// library's Client runs (FCALL, or EVALSHA/EVAL of Script.Source) and what the admin loads
// on every master (FunctionLibrary().Code), from one place.
//
// It has no dependencies beyond the standard library, so the host rendering and the admin
// tools import it without importing the client.
//
// Each script is a file: a header of comment lines (what it does, its KEYS and ARGV, its
// reply), then the code. The header is documentation only and is not part of the script
// (Script.Source starts after it), so that rewording it changes no script's SHA-1, and so
// no function name or library version. The wait queue's helpers (queue.lua) come before
// the two scripts that use them (release.lua, acquire_queued.lua) in Script.Source; the
// library defines them once, at its top level, for all the functions that use them.
package lua
