package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

// TestHelpListsOperatorModes: --help (every form) prints, on stdout with exit 0, the
// provider's usage naming every operator mode; each mode's --help is its usage on stdout.
func TestHelpListsOperatorModes(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"stop [-timeout 2m] <data_dir>", "crash <data_dir>", "supervise <data_dir>", "-debug", "fault drill", "make down"}},
		{[]string{"-h"}, []string{"stop", "crash", "supervise"}},
		{[]string{"-help"}, []string{"stop", "crash", "supervise"}},
		{[]string{"help"}, []string{"stop", "crash", "supervise"}},
		{[]string{"stop", "--help"}, []string{"usage: terraform-provider-redlock stop [-timeout 2m] <data_dir>"}},
		{[]string{"stop", "-h"}, []string{"usage: terraform-provider-redlock stop"}},
		{[]string{"crash", "--help"}, []string{"usage: terraform-provider-redlock crash <data_dir>"}},
		{[]string{"crash", "-h"}, []string{"usage: terraform-provider-redlock crash"}},
		{[]string{"supervise", "--help"}, []string{"usage: terraform-provider-redlock supervise <data_dir>"}},
	}
	var table strings.Builder
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code, handled := operatorMode(tt.args, &stdout, &stderr)
		first, _, _ := strings.Cut(stdout.String(), "\n")
		table.WriteString(strings.Join(tt.args, " ") + "\texit " + strconv.Itoa(code) + "\tstdout: " + first + "\n")
		if !handled || code != 0 || stderr.Len() > 0 {
			t.Errorf("%v: handled %v, exit %d, stderr %q; want the help on stdout, exit 0", tt.args, handled, code, stderr.String())
		}
		for _, w := range tt.want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("%v: stdout lacks %q:\n%s", tt.args, w, stdout.String())
			}
		}
	}
	t.Logf("help forms:\n%s", table.String())
	// The provider's own invocation (terraform's, with -debug or none) is not an operator mode.
	for _, args := range [][]string{nil, {"-debug"}} {
		if _, handled := operatorMode(args, &bytes.Buffer{}, &bytes.Buffer{}); handled {
			t.Errorf("%v: taken for an operator mode; the provider must serve", args)
		}
	}
	// A mode without its data dir is a usage error, on stderr.
	for _, args := range [][]string{{"supervise"}, {"crash"}, {"stop"}} {
		var stdout, stderr bytes.Buffer
		if code, _ := operatorMode(args, &stdout, &stderr); code != 2 || stdout.Len() > 0 || !strings.HasPrefix(stderr.String(), "usage: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and the mode's usage on stderr", args, code, stdout.String(), stderr.String())
		}
	}
}
