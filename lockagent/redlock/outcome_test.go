package redlock

import (
	"errors"
	"testing"
	"time"
)

// TestLateRefusalsAreExpiry: a fence or release round that a majority refused is ErrLost
// only when their refusals came back before the lock's deadline (the key changed hands
// within the validity); refusals that came back after it are ErrExpired (the keys expired
// on the way: TestTinyValidity's 3ms locks on a loaded machine, a release kept off the
// CPU); a majority that confirmed is success whatever else came back.
func TestLateRefusalsAreExpiry(t *testing.T) {
	c := &Client{masters: make([]*master, 3), quorum: 2}
	deadline := time.Now()
	cases := []struct {
		name string
		t    timedTally
		want error
	}{
		{"a majority refused in time", timedTally{votes: votes{refused: 2}, refusedInTime: 2, lastRefusal: deadline.Add(-time.Millisecond)}, ErrLost},
		{"a majority refused, one in time", timedTally{votes: votes{refused: 2}, refusedInTime: 1, lastRefusal: deadline.Add(time.Millisecond)}, ErrExpired},
		{"a majority refused, all late", timedTally{votes: votes{refused: 3}, lastRefusal: deadline.Add(2 * time.Millisecond)}, ErrExpired},
		{"a majority confirmed", timedTally{votes: votes{confirmed: 2, refused: 1}, refusedInTime: 1}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for op, err := range map[string]error{
				"fence":   c.fenceOutcome("k", tc.t, deadline, nil),
				"release": c.releaseOutcome("k", tc.t, deadline.Add(-time.Second), deadline, nil),
			} {
				if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
					t.Errorf("%s: %v, want %v", op, err, tc.want)
				}
				if tc.want == ErrExpired && errors.Is(err, ErrLost) {
					t.Errorf("%s: %v: late refusals taken for a lost lock", op, err)
				}
			}
		})
	}
}
