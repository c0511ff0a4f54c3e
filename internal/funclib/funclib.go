// Package funclib is the admin's side of the kit's Redis Function library
// (lockagent/redlock/lua.FunctionLibrary): every runtime that starts a master loads it there,
// and the audit checks that the loaded library is the current one.
//
// Lock users may run FCALL only (internal/redisconf.LockUserCommands): the library's
// functions are the only Lua they can run, and only the admin can load functions.
package funclib

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// Load loads (FUNCTION LOAD REPLACE) the current library on the master admin is
// connected to, as the admin. Functions persist in the AOF, so a restarted master
// already has the version it ran before; loading at every start replaces it with the
// current one.
func Load(ctx context.Context, admin redis.Cmdable) error {
	lib := lua.FunctionLibrary()
	name, err := admin.FunctionLoadReplace(ctx, lib.Code).Result()
	switch {
	case err != nil:
		return fmt.Errorf("FUNCTION LOAD REPLACE of the %q function library (version %s): %w", lib.Name, lib.Version, err)
	case name != lib.Name:
		return fmt.Errorf("FUNCTION LOAD REPLACE of the %q function library answered %q", lib.Name, name)
	}
	return nil
}

// Status is what a master holds of the library.
type Status struct {
	Loaded bool // a library named lua.LibraryName is loaded
	// Current: its code is the current library's (this build's scripts, byte for byte).
	Current bool
	// Version is the loaded library's version ("" when not loaded, or unreadable).
	Version string
	// Shadowed are this build's function names ("redlock_acquire_<version>") that the master
	// runs with code that is not this build's library, each as "name (library L)": this
	// build's clients FCALL them by name, so they run that code. Function names are global
	// across libraries, so any library can register them.
	Shadowed []string
	// Forged is true when a shadowed function cannot be a kit version's. Every function name
	// ends in the version of the library that registers it, so this build's names belong to
	// this build's library only: a library that registers them with other functions (another
	// name, another claimed version, other code) is forged. A redlock library whose code
	// differs from this build's in its header comment only runs this build's functions and
	// shadows nothing.
	Forged bool
}

// Check reads the libraries the master holds (FUNCTION LIST WITHCODE, as the admin).
func Check(ctx context.Context, admin redis.Cmdable) (Status, error) {
	lib := lua.FunctionLibrary()
	libs, err := admin.FunctionList(ctx, redis.FunctionListQuery{WithCode: true}).Result()
	if err != nil {
		return Status{}, fmt.Errorf("FUNCTION LIST: %w", err)
	}
	var st Status
	for _, l := range libs {
		if l.Name == lib.Name {
			st.Loaded, st.Current, st.Version = true, l.Code == lib.Code, lua.LibraryVersion(l.Code)
		}
		if l.Name == lib.Name && functionsOf(l.Code) == functionsOf(lib.Code) {
			continue
		}
		for _, f := range l.Functions {
			if !slices.Contains(lib.Functions, f.Name) {
				continue
			}
			st.Shadowed = append(st.Shadowed, fmt.Sprintf("%s (library %s)", f.Name, l.Name))
			st.Forged = true
		}
	}
	return st, nil
}

// functionsOf is a library's code after its header (what runs): the shebang line, then the
// comment and empty lines before its first line of code (the shared helpers the functions
// use, or the first function registration).
func functionsOf(code string) string {
	rest := code
	for n := 0; rest != ""; n++ {
		line, after, _ := strings.Cut(rest, "\n")
		// "--[": a long comment can end on its line and leave code after it there.
		// "\r": Lua ends a short comment at a carriage return too, so code can follow it.
		comment := strings.HasPrefix(line, "--") && !strings.HasPrefix(line, "--[") && !strings.Contains(line, "\r")
		if !(n == 0 && strings.HasPrefix(line, "#!lua ")) && !comment && line != "" {
			return rest
		}
		rest = after
	}
	return rest
}

// CurrentVersion is this build's library version.
func CurrentVersion() string { return lua.FunctionLibrary().Version }
