package redlock

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// hotPathFiles are the files an acquisition, an extension or a release runs through.
var hotPathFiles = []string{"acquire.go", "attempt.go", "waitqueue.go", "release.go", "lock.go", "round.go",
	"master.go", "notify.go", "functions.go", "client.go", "replies.go"}

// maxHotPathLines bounds a function on the hot path: one a reader can hold in mind, each
// step of the protocol a named function.
const maxHotPathLines = 80

// TestHotPathFunctionsAreShort: no function on the hot path is longer than
// maxHotPathLines (declaration to closing brace).
func TestHotPathFunctionsAreShort(t *testing.T) {
	longest, where := 0, ""
	for _, file := range hotPathFiles {
		for name, n := range funcLengths(t, file, nil) {
			if n > longest {
				longest, where = n, file+": "+name
			}
			if n > maxHotPathLines {
				t.Errorf("%s: %s is %d lines, more than %d: split it into named steps", file, name, n, maxHotPathLines)
			}
		}
	}
	t.Logf("longest function on the hot path: %s, %d lines", where, longest)
}

// TestFuncLengthsCountsLines is the negative control: a function of 81 lines is measured
// as such, so the check above can fail.
func TestFuncLengthsCountsLines(t *testing.T) {
	src := "package p\n\nfunc long() {\n" + strings.Repeat("\t_ = 1\n", 79) + "}\n"
	if n := funcLengths(t, "long.go", []byte(src))["long"]; n != 81 || n <= maxHotPathLines {
		t.Fatalf("measured %d lines, want 81", n)
	}
}

// funcLengths parses file (src when not nil) and returns each function's length in lines,
// by name (methods as Type.Name).
func funcLengths(t *testing.T, file string, src []byte) map[string]int {
	t.Helper()
	fset := token.NewFileSet()
	var f *ast.File
	var err error
	if src != nil {
		f, err = parser.ParseFile(fset, file, src, 0)
	} else {
		f, err = parser.ParseFile(fset, file, nil, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		name := fd.Name.Name
		if fd.Recv != nil && len(fd.Recv.List) == 1 {
			typ := fd.Recv.List[0].Type
			if star, ok := typ.(*ast.StarExpr); ok {
				typ = star.X
			}
			if id, ok := typ.(*ast.Ident); ok {
				name = id.Name + "." + name
			}
		}
		out[name] = fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
	}
	return out
}
