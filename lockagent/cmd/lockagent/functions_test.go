package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/funclib"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestFunctionsPrintsTheLibrary: what `lockagent functions` prints is the library an
// admin loads with FUNCTION LOAD REPLACE, and a real server takes it as the current one.
func TestFunctionsPrintsTheLibrary(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := lockagent(context.Background(), []string{"functions"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	cl := redistest.Start(t, redistest.Options{Masters: 1})
	admin := cl.Masters[0].Admin()
	ctx := context.Background()
	if err := admin.FunctionDelete(ctx, redlock.FunctionLibraryName).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.FunctionLoadReplace(ctx, stdout.String()).Err(); err != nil {
		t.Fatalf("FUNCTION LOAD REPLACE of the output: %v", err)
	}
	if st, err := funclib.Check(ctx, admin); err != nil || !st.Current {
		t.Fatalf("after loading the output: %+v %v, want the current library", st, err)
	}
	stdout.Reset()
	if code := lockagent(context.Background(), []string{"functions", "--version"}, &stdout, &stderr); code != exitOK ||
		strings.TrimSpace(stdout.String()) != redlock.FunctionLibrary().Version {
		t.Fatalf("functions --version: exit %d, %q", code, stdout.String())
	}
}
