package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
)

// Every command parses its flags with parseFlags and reports bad input with usageError, so
// that the CLI behaves one way: help (-h, --help, `lockagent help X`) on stdout with exit
// 0; a bad flag, argument or setting as one line on stderr, "lockagent X: <what and the
// fix> (see lockagent X --help)", with exit 64.

// parseFlags parses a command's flags. It returns ok = false with the exit code to end
// with when the command must not run: help asked for (usage on stdout, exit 0) or a bad
// flag (one line on stderr, exit 64).
func parseFlags(fs *flag.FlagSet, args []string, cmd, usage string, stdout, stderr io.Writer) (code int, ok bool) {
	fs.SetOutput(io.Discard) // the flag package's own messages and usage are replaced below
	err := fs.Parse(args)
	switch {
	case err == nil:
		return exitOK, true
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return exitOK, false
	default:
		return usageError(stderr, cmd, flagError(fs, err)), false
	}
}

// usageError writes err as cmd's one-line usage error on stderr and returns exitUsage.
func usageError(stderr io.Writer, cmd string, err error) int {
	msg := strings.ReplaceAll(strings.TrimSpace(err.Error()), "\n", "; ") // one line, even for joined errors
	fmt.Fprintf(stderr, "lockagent %s: %s (see lockagent %s --help)\n", cmd, msg, cmd)
	return exitUsage
}

// The flag package's parse errors (Go's flag.go), restated by flagError.
var (
	flagUndefined = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)
	flagNoValue   = regexp.MustCompile(`^flag needs an argument: -+(.+)$`)
	flagBadValue  = regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-+([^:]+): (.*)$`)
)

// flagError restates a parse error of the flag package in the CLI's words: the flag as the
// help writes it (--name, or -c), and for a bad value what the flag wants instead of Go's
// "parse error". Errors it does not know pass through.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := flagUndefined.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s: no such flag", dashed(m[1]))
	}
	if m := flagNoValue.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s: needs a value", dashed(m[1]))
	}
	if m := flagBadValue.FindStringSubmatch(msg); m != nil {
		value, name, reason := m[1], m[2], m[3]
		if want := flagWants(fs.Lookup(name)); want != "" && (reason == "parse error" || reason == "value out of range") {
			reason = "want " + want
		}
		return fmt.Errorf("%s %s: %s", dashed(name), value, reason)
	}
	return err
}

// dashed writes a flag as the help does: -c, --name.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagWants says what kind of value a flag of a built-in type takes ("" for others, whose
// Set explains itself).
func flagWants(f *flag.Flag) string {
	if f == nil {
		return ""
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return "a duration such as 30s, 1500ms or 2m"
	case bool:
		return "true or false"
	case int, int64, uint, uint64:
		return "a whole number"
	case float64:
		return "a number"
	}
	return ""
}
