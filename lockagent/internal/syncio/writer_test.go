package syncio

import (
	"strings"
	"sync"
	"testing"
)

// Lines written from many goroutines arrive whole, in the buffer or in W.
func TestWriterKeepsLinesWhole(t *testing.T) {
	const goroutines, lines = 8, 200
	line := strings.Repeat("x", 100) + "\n"
	write := func(w *Writer) {
		var wg sync.WaitGroup
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range lines {
					_, _ = w.Write([]byte(line))
				}
			}()
		}
		wg.Wait()
	}
	check := func(t *testing.T, got string) {
		t.Helper()
		if n := strings.Count(got, line); n != goroutines*lines || len(got) != goroutines*lines*len(line) {
			t.Fatalf("%d whole lines of %d bytes in %d bytes, want %d", n, len(line), len(got), goroutines*lines)
		}
	}
	t.Run("internal buffer", func(t *testing.T) {
		var w Writer
		write(&w)
		check(t, w.String())
	})
	t.Run("given writer", func(t *testing.T) {
		var sb strings.Builder
		w := Writer{W: &sb}
		write(&w)
		check(t, sb.String())
		if w.String() != "" {
			t.Errorf("String() = %q with W set, want empty", w.String())
		}
	})
}
