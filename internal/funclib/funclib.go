// Package funclib is the admin's side of the kit's Redis Function library
// (lockagent/redlock.FunctionLibrary): every runtime that starts a master loads it there,
// and the audit checks that the loaded library is the current one.
//
// Lock users may run FCALL only (internal/redisconf.LockUserCommands): the library's
// functions are the only Lua they can run, and only the admin can load functions.
package funclib

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// Load loads (FUNCTION LOAD REPLACE) the current library on the master admin is
// connected to, as the admin. Functions persist in the AOF, so a restarted master
// already has the version it ran before; loading at every start replaces it with the
// current one.
func Load(ctx context.Context, admin redis.Cmdable) error {
	lib := redlock.FunctionLibrary()
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
	Loaded bool // a library named redlock.FunctionLibraryName is loaded
	// Current: its code is the current library's (this build's scripts, byte for byte).
	Current bool
	// Version is the loaded library's version ("" when not loaded, or unreadable).
	Version string
}

// Check reads the library the master holds (FUNCTION LIST, as the admin).
func Check(ctx context.Context, admin redis.Cmdable) (Status, error) {
	lib := redlock.FunctionLibrary()
	libs, err := admin.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: lib.Name, WithCode: true}).Result()
	if err != nil {
		return Status{}, fmt.Errorf("FUNCTION LIST: %w", err)
	}
	for _, l := range libs {
		if l.Name != lib.Name {
			continue // the pattern is a glob; the name is exact
		}
		return Status{Loaded: true, Current: l.Code == lib.Code, Version: Version(l.Code)}, nil
	}
	return Status{}, nil
}

// Version reads the version from a library's code (its header line), "" when absent.
func Version(code string) string {
	const marker = "function library, version "
	i := strings.Index(code, marker)
	if i < 0 {
		return ""
	}
	v, _, _ := strings.Cut(code[i+len(marker):], ":")
	return v
}

// CurrentVersion is this build's library version.
func CurrentVersion() string { return redlock.FunctionLibrary().Version }
