package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

const functionsUsage = `Usage: lockagent functions [--version]

Prints the kit's Redis Function library: the library's scripts (acquire, release, extend,
fence, ...) as functions of the library "redlock". Lock users run them with FCALL and may
run no other Lua. Masters the kit runs (redlock_master, the host rendering) load it at
every start; the admin of a master the kit does not run loads it (Redis >= 7.0, Valkey):

  lockagent functions | redis-cli --user default --askpass -x FUNCTION LOAD REPLACE

and gives lock users +fcall instead of +eval +evalsha +script|load. Clients on a user
that may EVAL and not FCALL (or on a server without Functions) keep working with EVALSHA.

Flags:
  --version   print only the library's version (the one lockagent validate compares)

Exit codes:
  0   printed
  64  usage error
`

// functionsMain is `lockagent functions`.
func functionsMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("functions", flag.ContinueOnError)
	version := fs.Bool("version", false, "print only the version")
	if code, ok := parseFlags(fs, args, "functions", functionsUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "functions", fmt.Errorf("unexpected argument %q: functions takes only --version", fs.Arg(0)))
	}
	lib := redlock.FunctionLibrary()
	if *version {
		fmt.Fprintln(stdout, lib.Version)
		return exitOK
	}
	fmt.Fprint(stdout, lib.Code)
	return exitOK
}
