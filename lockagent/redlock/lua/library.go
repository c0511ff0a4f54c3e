package lua

import (
	"fmt"
	"strings"
	"sync"
)

// LibraryName is the name of the kit's Redis Function library (Redis >= 7.0, Valkey):
// FUNCTION LOAD REPLACE of FunctionLibrary().Code replaces the previous version.
const LibraryName = "redlock"

// Library is the kit's function library: every script as a Redis function, for the admin
// to load (FUNCTION LOAD REPLACE Code) at every start of a master. Lock users then need
// FCALL only, not EVAL, EVALSHA or SCRIPT: they can run the kit's scripts and nothing else.
type Library struct {
	Name string // LibraryName
	// Version identifies the library's code (versionOf its scripts): two kit versions with
	// the same scripts have the same Version. Every function name ends in it.
	Version string
	// Code is the library source, starting "#!lua name=redlock".
	Code string
	// Functions are the function names (Script.Function), one per script, in registration
	// order. Each name ends in the library's Version, so a client runs every script of its
	// own version or none: on a master whose library is of another version no function of
	// the client's is found (acquire included) and the client falls back to EVALSHA, which
	// a lock user (FCALL only) may not run: it is refused before anything is written.
	Functions []string
	byScript  map[string]string
}

// Function returns the function name of the library's script named script ("acquire",
// "release", "release_durable", "extend", "fence", ...), "" when there is none.
func (l Library) Function(script string) string { return l.byScript[script] }

var library = sync.OnceValue(func() Library { return generateLibrary(All()) })

// FunctionLibrary returns the kit's function library, generated from the scripts: a
// script added to All is a function of it at once.
func FunctionLibrary() Library {
	lib := library()
	lib.Functions = append([]string(nil), lib.Functions...)
	return lib
}

// versionMarker precedes the version in the library's header line.
const versionMarker = "function library, version "

// generateLibrary writes one redis.register_function per script. The script's body
// becomes the function's body as it is: KEYS and ARGV are the function's parameters, so
// FCALL fn numkeys keys... args... runs exactly what EVAL src numkeys keys... args...
// runs (same keys, values and replies: wire-compatible with other Redlock clients). A
// prelude several scripts share (the wait queue's helpers) is defined once, at the
// library's top level, before the functions: its helpers are made once when the library
// loads, not at every call, and the library carries them once. A helper's state that
// must not outlive a call is reset by the body that uses it (queue.lua's pxt).
func generateLibrary(scripts []Script) Library {
	scripts = versioned(scripts)
	var body strings.Builder
	var names []string
	byScript := map[string]string{}
	defined := map[string]bool{}
	for _, s := range scripts {
		if s.prelude != "" && !defined[s.prelude] {
			defined[s.prelude] = true
			fmt.Fprintf(&body, "\n%s\n", Compact(s.prelude))
		}
	}
	for _, s := range scripts {
		if byScript[s.Name] != "" {
			panic(fmt.Sprintf("lua: two scripts are named %q", s.Name))
		}
		byScript[s.Name] = s.Function
		names = append(names, s.Function)
		flags := make([]string, len(s.Flags))
		for i, f := range s.Flags {
			flags[i] = "'" + f + "'"
		}
		fmt.Fprintf(&body, "\nredis.register_function{function_name='%s', flags={%s}, callback=function(KEYS, ARGV)\n%s\nend}\n",
			s.Function, strings.Join(flags, ", "), Compact(s.libraryBody()))
	}
	version := versionOf(scripts)
	code := fmt.Sprintf("#!lua name=%s\n-- redlock-kit %s%s: the Redlock scripts of\n"+
		"-- github.com/redlock-kit/redlock-kit/lockagent/redlock. The admin loads it (FUNCTION LOAD REPLACE);\n"+
		"-- lock users run it with FCALL only.\n%s", LibraryName, versionMarker, version, body.String())
	return Library{Name: LibraryName, Version: version, Code: code, Functions: names, byScript: byScript}
}

// LibraryVersion reads the version from a library's code (its header line, as
// FunctionLibrary writes it), "" when absent.
func LibraryVersion(code string) string {
	i := strings.Index(code, versionMarker)
	if i < 0 {
		return ""
	}
	v, _, _ := strings.Cut(code[i+len(versionMarker):], ":")
	return v
}

// Compact is a script's code as the library carries it: without its comment lines, blank
// lines and indentation, which Lua ignores. The library travels in every host's user-data,
// which must stay under 16 KiB; Script.Source keeps the comments (and is what EVAL sends).
// The scripts have no long strings or comments ([[ ]]), so a line whose first non-blank
// characters are "--" is a comment (TestCompactPrecondition).
func Compact(src string) string {
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
