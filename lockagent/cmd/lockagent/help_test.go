package main

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"text/tabwriter"
)

// cliCall is one run of the lockagent binary: what it printed where, and its exit code.
type cliCall struct {
	args           []string
	code           int
	stdout, stderr string
}

// callBinary runs the built lockagent binary (TestMain) with a clean LOCKAGENT_*
// environment: the streams and the exit code are the process's own.
func callBinary(t *testing.T, args ...string) cliCall {
	t.Helper()
	cmd := exec.Command(lockagentBin, args...)
	cmd.Env = cleanEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("lockagent %v: %v", args, err)
	}
	return cliCall{args: args, code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// lines counts the lines of s (0 for "").
func lines(s string) int { return strings.Count(s, "\n") }

// logCLITable prints the calls as a table in the test's -v output.
func logCLITable(t *testing.T, title string, calls []cliCall) {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "command\texit\tstdout lines\tstderr lines\tfirst line\n")
	for _, c := range calls {
		first, _, _ := strings.Cut(c.stdout+c.stderr, "\n")
		if len(first) > 90 {
			first = first[:87] + "..."
		}
		fmt.Fprintf(w, "lockagent %s\t%d\t%d\t%d\t%s\n", strings.Join(c.args, " "), c.code, lines(c.stdout), lines(c.stderr), first)
	}
	_ = w.Flush()
	t.Logf("%s\n%s", title, b.String())
}

// TestHelpForms: every command's help, in every form users type (`lockagent help X`,
// `lockagent X --help`, `-h`, `-help`), and the top-level help, is the command's usage on
// stdout, nothing on stderr, exit 0.
func TestHelpForms(t *testing.T) {
	usageStart := map[string]string{
		"":          "lockagent: Redlock locks",
		"help":      "lockagent: Redlock locks",
		"run":       "Usage: lockagent run ",
		"validate":  "Usage: lockagent validate ",
		"bench":     "Usage: lockagent bench ",
		"functions": "Usage: lockagent functions",
		"version":   "Usage: lockagent version",
	}
	type form struct {
		cmd  string
		args []string
	}
	var forms []form
	for _, top := range [][]string{{"help"}, {"--help"}, {"-h"}, {"-help"}, {"help", "help"}, {"help", "--help"}} {
		forms = append(forms, form{"", top})
	}
	for _, cmd := range []string{"run", "validate", "bench", "functions", "version"} {
		for _, args := range [][]string{{"help", cmd}, {cmd, "--help"}, {cmd, "-h"}, {cmd, "-help"}} {
			forms = append(forms, form{cmd, args})
		}
	}
	var calls []cliCall
	for _, f := range forms {
		c := callBinary(t, f.args...)
		calls = append(calls, c)
		if c.code != exitOK || c.stderr != "" || !strings.HasPrefix(c.stdout, usageStart[f.cmd]) {
			t.Errorf("lockagent %s: exit %d, stdout starts %q, stderr %q; want exit 0, %q... on stdout, nothing on stderr",
				strings.Join(f.args, " "), c.code, firstLine(c.stdout), c.stderr, usageStart[f.cmd])
		}
	}
	logCLITable(t, "help forms: usage on stdout, nothing on stderr, exit 0", calls)
}

// TestUsageErrorFormat: a bad flag, value or argument, in any command, is one line on
// stderr that names it and points at the command's --help, nothing on stdout, exit 64.
// validate used to print the flag package's message and its whole usage.
func TestUsageErrorFormat(t *testing.T) {
	tests := []struct {
		args []string
		want string // the whole stderr
	}{
		{[]string{"run", "--no-such-flag"}, "lockagent run: --no-such-flag: no such flag (see lockagent run --help)\n"},
		{[]string{"validate", "--no-such-flag"}, "lockagent validate: --no-such-flag: no such flag (see lockagent validate --help)\n"},
		{[]string{"bench", "--no-such-flag"}, "lockagent bench: --no-such-flag: no such flag (see lockagent bench --help)\n"},
		{[]string{"functions", "--no-such-flag"}, "lockagent functions: --no-such-flag: no such flag (see lockagent functions --help)\n"},
		{[]string{"version", "--no-such-flag"}, "lockagent version: --no-such-flag: no such flag (see lockagent version --help)\n"},
		{[]string{"run", "--ttl", "ten"}, "lockagent run: --ttl \"ten\": want a duration such as 30s, 1500ms or 2m (see lockagent run --help)\n"},
		{[]string{"run", "--wait", "always"}, "lockagent run: --wait \"always\": want a duration such as 5m, 0 for one attempt, or forever (see lockagent run --help)\n"},
		{[]string{"run", "--key"}, "lockagent run: --key: needs a value (see lockagent run --help)\n"},
		{[]string{"validate", "--clients", "many"}, "lockagent validate: --clients \"many\": want a whole number (see lockagent validate --help)\n"},
		{[]string{"validate", "--json=maybe"}, "lockagent validate: --json \"maybe\": want true or false (see lockagent validate --help)\n"},
		{[]string{"validate", "-c"}, "lockagent validate: -c: needs a value (see lockagent validate --help)\n"},
		{[]string{"bench", "--iterations", "1.5"}, "lockagent bench: --iterations \"1.5\": want a whole number (see lockagent bench --help)\n"},
		{[]string{"functions", "extra"}, "lockagent functions: unexpected argument \"extra\": functions takes only --version (see lockagent functions --help)\n"},
		{[]string{"version", "extra"}, "lockagent version: unexpected argument \"extra\": version takes none (see lockagent version --help)\n"},
		// Settings are checked after the flags parse: the same one-line form.
		{[]string{"validate", "--endpoints", "127.0.0.1:1,127.0.0.1:2", "--max-lock-ttl", "5s", "--password", "x", "--admin-password", "y"}, ""},
		{[]string{"run", "--endpoints", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "--password", "p", "--key", "jobs:waitq", "--", "true"}, ""},
		{[]string{"help", "frobnicate"}, "lockagent help: unknown command \"frobnicate\"; commands: run, validate, bench, functions, version\n"},
		{[]string{"frobnicate"}, "lockagent: unknown command \"frobnicate\"; run `lockagent help` for the commands\n"},
	}
	var calls []cliCall
	for _, tt := range tests {
		c := callBinary(t, tt.args...)
		calls = append(calls, c)
		name := "lockagent " + strings.Join(tt.args, " ")
		if c.code != exitUsage || c.stdout != "" || lines(c.stderr) != 1 {
			t.Errorf("%s: exit %d, %d stdout and %d stderr lines; want exit %d and one line on stderr only\nstdout:\n%s\nstderr:\n%s",
				name, c.code, lines(c.stdout), lines(c.stderr), exitUsage, c.stdout, c.stderr)
		}
		if tt.want != "" && c.stderr != tt.want {
			t.Errorf("%s: stderr\n  %q, want\n  %q", name, c.stderr, tt.want)
		}
		if tt.want == "" && !strings.HasSuffix(c.stderr, " (see lockagent "+tt.args[0]+" --help)\n") {
			t.Errorf("%s: stderr does not point at lockagent %s --help: %q", name, tt.args[0], c.stderr)
		}
	}
	logCLITable(t, "usage errors: one line on stderr, exit 64", calls)
	// No arguments at all is a usage error too: the command list, on stderr.
	c := callBinary(t)
	if c.code != exitUsage || c.stdout != "" || !strings.HasPrefix(c.stderr, "lockagent: Redlock locks") {
		t.Errorf("lockagent with no arguments: exit %d, stdout %q, stderr starts %q; want 64 and the command list on stderr", c.code, c.stdout, firstLine(c.stderr))
	}
	logCLITable(t, "no command", []cliCall{c})
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
