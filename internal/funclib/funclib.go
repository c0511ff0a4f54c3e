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
	// Forged is true when a shadowed function cannot be a kit version's: it is registered
	// by a library of another name, or by one that claims this build's version with other
	// code. Otherwise (an older or newer kit library) the code is merely unverified.
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
		if l.Name == lib.Name && l.Code == lib.Code {
			continue
		}
		for _, f := range l.Functions {
			if !slices.Contains(lib.Functions, f.Name) {
				continue
			}
			st.Shadowed = append(st.Shadowed, fmt.Sprintf("%s (library %s)", f.Name, l.Name))
			if l.Name != lib.Name || lua.LibraryVersion(l.Code) == lib.Version {
				st.Forged = true
			}
		}
	}
	return st, nil
}

// CurrentVersion is this build's library version.
func CurrentVersion() string { return lua.FunctionLibrary().Version }
