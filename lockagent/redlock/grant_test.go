package redlock

import (
	"testing"
	"time"
)

// TestGrantedKeepsOnlyTheLatestHandOff: hand-off notices are late, duplicated or lost,
// and a grant recorded earlier may be stale. A notice counts only when its hand-off is
// the latest the waiter knows of on that master.
func TestGrantedKeepsOnlyTheLatestHandOff(t *testing.T) {
	t0 := time.Now()
	at := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	newWait := func() *queuedWait {
		qw := &queuedWait{grants: make([]grantState, 1), queued: []time.Time{at(0)}, sent: map[uint64]time.Time{}}
		for n := uint64(1); n <= 5; n++ {
			qw.sent[n] = at(int(n))
		}
		return qw
	}
	t.Run("a newer hand-off replaces a stale grant and its fence", func(t *testing.T) {
		qw := newWait()
		qw.granted(grantMsg{master: 0, fence: "2", attempt: "1"})
		qw.granted(grantMsg{master: 0, fence: "150", attempt: "3"})
		if g := qw.grants[0]; !g.ours || g.fence != 150 || !g.since.Equal(at(3)) {
			t.Fatalf("grant after a newer hand-off: %+v, want fence 150 since attempt 3", g)
		}
	})
	t.Run("a late notice of an older hand-off is ignored", func(t *testing.T) {
		qw := newWait()
		qw.granted(grantMsg{master: 0, fence: "150", attempt: "3"})
		qw.granted(grantMsg{master: 0, fence: "2", attempt: "1"})
		if g := qw.grants[0]; g.fence != 150 {
			t.Fatalf("grant after a late notice: %+v, want fence 150 kept", g)
		}
	})
	t.Run("a late notice of an older hand-off does not replace a grant without a fence", func(t *testing.T) {
		qw := newWait()
		qw.grants[0] = grantState{ours: true, since: at(4), reg: 300, regOK: true} // set by our own attempt 4
		qw.granted(grantMsg{master: 0, fence: "2", attempt: "1"})
		if g := qw.grants[0]; g.raised || !g.since.Equal(at(4)) {
			t.Fatalf("grant after a late notice: %+v, want attempt 4's grant kept", g)
		}
	})
	t.Run("a notice older than the last queued answer is stale", func(t *testing.T) {
		qw := newWait()
		qw.queued[0] = at(2) // attempt 2 was answered "queued": the key was not ours then
		qw.granted(grantMsg{master: 0, fence: "7", attempt: "1"})
		if qw.grants[0].ours {
			t.Fatalf("a notice of a hand-off before the queued answer made the grant ours: %+v", qw.grants[0])
		}
		qw.granted(grantMsg{master: 0, fence: "8", attempt: "2"})
		if g := qw.grants[0]; !g.ours || g.fence != 8 {
			t.Fatalf("a notice naming the queued attempt: %+v, want ours with fence 8", g)
		}
	})
	t.Run("a duplicate adds what it knows", func(t *testing.T) {
		qw := newWait()
		qw.granted(grantMsg{master: 0, fence: "r40", attempt: "2"})
		qw.granted(grantMsg{master: 0, fence: "41", attempt: "2"})
		qw.granted(grantMsg{master: 0, fence: "r40", attempt: "2"})
		if g := qw.grants[0]; !g.raised || g.fence != 41 {
			t.Fatalf("grant after duplicates: %+v, want fence 41", g)
		}
	})
}
