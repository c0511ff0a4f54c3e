package redlock_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestUnavailableErrorCollapsesRepeats: the same failure on several masters reads once,
// with how many and which ("4 of 5 masters (...): access denied: WRONGPASS ..."), and a
// different failure keeps its own line. Real masters: four refuse a wrong password, one
// is down.
func TestUnavailableErrorCollapsesRepeats(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 5})
	down := cl.Masters[2]
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	var masters []redis.UniversalClient
	for _, m := range cl.Masters {
		r := redis.NewClient(&redis.Options{Addr: m.Addr, Username: redistest.LockUser, Password: "not-the-password",
			MaxRetries: -1, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = r.Close() })
		masters = append(masters, r)
	}
	c, err := redlock.New(masters, redlock.Options{NodeTimeout: testNodeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_, err = acquireOrHang(t, c, "collapsed")
	var ue *redlock.UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, redlock.ErrDenied) {
		t.Fatalf("Acquire with a wrong password and a master down: %v, want an *UnavailableError matching ErrDenied", err)
	}
	msg := err.Error()
	t.Logf("the error: %s", msg)
	if len(ue.Errors) != 5 {
		t.Errorf("%d per-master errors, want 5 (the error is still one per master for errors.As): %v", len(ue.Errors), ue.Errors)
	}
	if n := strings.Count(msg, "WRONGPASS"); n != 1 {
		t.Errorf("WRONGPASS appears %d times, want once for the four masters that refused:\n%s", n, msg)
	}
	var refusing []string
	for _, m := range cl.Masters {
		if m != down {
			refusing = append(refusing, m.Addr)
		}
	}
	if want := "4 of 5 masters (" + strings.Join(refusing, ", ") + "): access denied: WRONGPASS"; !strings.Contains(msg, want) {
		t.Errorf("error lacks %q:\n%s", want, msg)
	}
	if want := "master 2 (" + down.Addr + "): "; !strings.Contains(msg, want) {
		t.Errorf("the master that is down is not named on its own (%q):\n%s", want, msg)
	}
}

// A failure on a single master keeps the form "master i (addr): ..." and distinct failures
// are all kept, in order.
func TestUnavailableErrorKeepsDistinctFailures(t *testing.T) {
	e := &redlock.UnavailableError{Op: "release", Key: "k", Votes: 1, Masters: 3, Quorum: 2, Errors: []redlock.MasterError{
		{Master: 1, Addr: "127.0.0.12:7379", Err: errors.New("first")},
		{Master: 2, Addr: "127.0.0.13:7379", Err: errors.New("second")},
	}}
	want := `redlock: release "k": 1/3 masters confirmed, need 2: master 1 (127.0.0.12:7379): first; master 2 (127.0.0.13:7379): second`
	if got := e.Error(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
