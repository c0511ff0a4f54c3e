// Package handofftrace tells the kit's benchmark, inside one process, two moments of the
// Redlock library's hand-off: when a request leaves for a master, and when a hand-off
// notice arrives from one. The benchmark's worker processes set the functions, to show
// where a hand-off's time goes; nothing else does. Unset, each moment costs the library
// one atomic load.
package handofftrace

import "sync/atomic"

var sent, notice atomic.Pointer[func()]

// Set installs onSent, called as a request (one pipeline) leaves for a master, and
// onNotice, called as a hand-off notice arrives from a master; nil removes one. The
// functions run on the library's goroutines: they must be fast and safe for concurrent
// use.
func Set(onSent, onNotice func()) {
	store(&sent, onSent)
	store(&notice, onNotice)
}

func store(p *atomic.Pointer[func()], f func()) {
	if f == nil {
		p.Store(nil)
		return
	}
	p.Store(&f)
}

// Sent reports that a request leaves for a master.
func Sent() {
	if f := sent.Load(); f != nil {
		(*f)()
	}
}

// Notice reports that a hand-off notice arrived from a master.
func Notice() {
	if f := notice.Load(); f != nil {
		(*f)()
	}
}
