// Package syncio holds the one writer that concurrent goroutines share here: validate's
// progress lines and a bench worker's stderr.
package syncio

import (
	"bytes"
	"io"
	"sync"
)

// Writer serialises writes to W from concurrent goroutines. The zero value writes to an
// internal buffer, which String reads.
type Writer struct {
	mu  sync.Mutex
	W   io.Writer // nil: the internal buffer
	buf bytes.Buffer
}

func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.W == nil {
		return w.buf.Write(p)
	}
	return w.W.Write(p)
}

// String is what was written to the internal buffer (nothing when W is set).
func (w *Writer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
