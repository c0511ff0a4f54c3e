package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsQuoteTheProgram: every Go block of the README and the library guide that calls
// redlock.Open is an excerpt of this program, which TestProgramAgainstRealMasters builds
// and runs, so the docs cannot show code that does not compile or work.
func TestDocsQuoteTheProgram(t *testing.T) {
	program, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	goBlock := regexp.MustCompile("(?s)```go\n(.*?)```")
	for _, doc := range []string{"README.md", "templates/guides/lock-library.md.tmpl"} {
		text, err := os.ReadFile(filepath.Join("..", "..", doc))
		if err != nil {
			t.Fatal(err)
		}
		quoted := 0
		for _, m := range goBlock.FindAllStringSubmatch(string(text), -1) {
			if !strings.Contains(m[1], "redlock.Open(") {
				continue
			}
			quoted++
			if !strings.Contains(string(program), m[1]) {
				t.Errorf("%s: a Go block calling redlock.Open is not an excerpt of examples/go-client/main.go: copy it from there\n%s", doc, m[1])
			}
		}
		if quoted == 0 {
			t.Errorf("%s quotes no block of examples/go-client/main.go (none calls redlock.Open)", doc)
		}
	}
}
