// Package handofftrace tells the kit's benchmark, inside one process, two moments of the
// Redlock library's hand-off: when a master's goroutine starts sending it a request, and
// when a hand-off notice for one of the process's waiters arrives from a master. The
// benchmark's worker processes (one Client each) set the functions, to show where a
// hand-off's time goes; nothing else does. Unset, each moment costs the library one
// atomic load.
package handofftrace

import "sync/atomic"

var sent, notice atomic.Pointer[func(master int)]

// Set installs onSent, called as a master's goroutine starts sending it a pipeline (before
// go-redis builds and writes it), and onNotice, called as a hand-off notice for a waiter
// of the process arrives from a master (not a window's notice, nor one for a token no
// waiter has); nil removes one. master is the master's index in the Client's list. The
// functions run on the library's goroutines, onNotice with the Client's notifier locked:
// they must be fast and safe for concurrent use. The two are stored one after the other:
// set them before the Client works.
func Set(onSent, onNotice func(master int)) {
	store(&sent, onSent)
	store(&notice, onNotice)
}

func store(p *atomic.Pointer[func(int)], f func(int)) {
	if f == nil {
		p.Store(nil)
		return
	}
	p.Store(&f)
}

// Sent reports that master's goroutine starts sending it a pipeline.
func Sent(master int) {
	if f := sent.Load(); f != nil {
		(*f)(master)
	}
}

// Notice reports that a hand-off notice for a waiter arrived from master.
func Notice(master int) {
	if f := notice.Load(); f != nil {
		(*f)(master)
	}
}
