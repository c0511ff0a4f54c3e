package supervisor

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

// The state's instants are kept twice on disk: as wall-clock times, for people and for the
// metrics, and as whole milliseconds of CLOCK_BOOTTIME with the boot id, which are what a
// hold is timed by. A wall-clock step between the write and the read (NTP, an operator)
// would otherwise shorten or lengthen a hold rebuilt from the state.
//
// Read back, the boot-clock times become time.Time values with a monotonic reading, so
// every comparison and timer in this process uses the monotonic clock. A record of another
// boot (or of an earlier version, without the boot clock) tells nothing about when, on this
// boot's clocks, the master last served: it counts as having served until now, under the
// delay it recorded (HoldFloor - LastAlive). A record out of bounds (a negative value, a
// last-alive moment after now, a recorded delay above hold.MaxRestartDelay, a floor or
// restart time beyond now + that delay) is unreadable; ReadState also bounds the floor and
// restart time by now + the largest delay ever configured (see ReadState). Unreadable,
// ReadState fails, and the supervisor refuses to start.

// stateJSON is State on disk: its own fields, and the boot clock beside them.
type stateJSON struct {
	stateFields
	BootID      string `json:"boot_id,omitempty"`
	LastAliveMS *int64 `json:"last_alive_boot_ms,omitempty"`
	RestartAtMS *int64 `json:"restart_at_boot_ms,omitempty"`
	HoldFloorMS *int64 `json:"hold_floor_boot_ms,omitempty"`
	// LargestDelayMS is State.LargestDelay in whole ms.
	// Absent (a state of an earlier version): the delay the state was written under.
	LargestDelayMS *int64 `json:"largest_delay_ms,omitempty"`
}

// maxBootMS bounds every boot-clock value read from disk: a hundred years of uptime, far
// from 64-bit overflow once converted to nanoseconds.
const maxBootMS = 100 * 365 * 24 * 3600 * 1000

// stateFields is State without its methods (no recursion into MarshalJSON).
type stateFields State

// MarshalJSON writes the state with its instants on the boot clock too. An instant is
// rounded up to the next millisecond: a hold rebuilt from it never ends earlier.
func (st State) MarshalJSON() ([]byte, error) {
	out := stateJSON{stateFields: stateFields(st)}
	if st.LargestDelay > 0 {
		ms := delayMS(st.LargestDelay)
		out.LargestDelayMS = &ms
	}
	clock, err := readClockPair()
	boot := bootID()
	if err == nil && boot != "unknown" {
		at := func(t time.Time) *int64 {
			if t.IsZero() {
				return nil
			}
			// Nothing of this boot happened before it started: an instant before is
			// written as its start (later: a hold never ends earlier).
			ms := max(clock.msAtOrAfter(t), 0)
			return &ms
		}
		out.BootID, out.LastAliveMS, out.RestartAtMS, out.HoldFloorMS = boot, at(st.LastAlive), at(st.RestartAt), at(st.HoldFloor)
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads a state, rebuilding its instants from the boot clock (see above).
func (st *State) UnmarshalJSON(data []byte) error {
	var in stateJSON
	if err := json.Unmarshal(data, &in); err != nil {
		return err
	}
	*st = State(in.stateFields)
	maxMS := hold.MaxRestartDelay.Milliseconds()
	clock, err := readClockPair()
	now, nowMS := clock.now, clock.nowMS()
	boot := bootID()
	if l := in.LargestDelayMS; l != nil {
		if *l < 0 || *l > maxMS {
			return fmt.Errorf("largest_delay_ms %d is not between 0 and %d: unreadable", *l, maxMS)
		}
		st.LargestDelay = time.Duration(*l) * time.Millisecond
	}
	// Every boot-clock value is range-checked before any arithmetic: a value past 64-bit
	// arithmetic would otherwise wrap (an overflowed until reads as long past).
	for _, f := range []struct {
		name string
		ms   *int64
	}{{"last_alive_boot_ms", in.LastAliveMS}, {"restart_at_boot_ms", in.RestartAtMS}, {"hold_floor_boot_ms", in.HoldFloorMS}} {
		if f.ms != nil && (*f.ms < 0 || *f.ms > maxBootMS) {
			return fmt.Errorf("%s %d is not between 0 and %d: unreadable", f.name, *f.ms, int64(maxBootMS))
		}
	}
	// A master that never served has no last_alive; held for its address (another data
	// dir's master served there), it has a floor.
	if err == nil && boot != "unknown" && in.BootID == boot && (in.LastAliveMS != nil || in.HoldFloorMS != nil) {
		// This boot: every instant from the boot clock, bounded by now (never subtracted
		// from: every value and now are at least 0 and at most maxBootMS).
		var lastMS int64
		if in.LastAliveMS != nil {
			lastMS = *in.LastAliveMS
		}
		if lastMS > nowMS+1 {
			return fmt.Errorf("last_alive_boot_ms %d is after now (%d): unreadable", lastMS, nowMS)
		}
		at := func(name string, ms *int64, wall time.Time) (time.Time, error) {
			if ms == nil {
				return time.Time{}, nil
			}
			if *ms > nowMS+maxMS+1 {
				return time.Time{}, fmt.Errorf("%s %d is more than %s (the largest restart delay) after now (%d): unreadable",
					name, *ms, hold.MaxRestartDelay, nowMS)
			}
			return sameInstant(clock, *ms, wall), nil
		}
		st.LastAlive, _ = at("last_alive_boot_ms", in.LastAliveMS, st.LastAlive)
		if st.RestartAt, err = at("restart_at_boot_ms", in.RestartAtMS, st.RestartAt); err != nil {
			return err
		}
		if st.HoldFloor, err = at("hold_floor_boot_ms", in.HoldFloorMS, st.HoldFloor); err != nil {
			return err
		}
		if in.LargestDelayMS == nil && in.LastAliveMS != nil && in.HoldFloorMS != nil && *in.HoldFloorMS > lastMS {
			st.LargestDelay = min(time.Duration(*in.HoldFloorMS-lastMS)*time.Millisecond, hold.MaxRestartDelay)
		}
		return nil
	}
	if err != nil {
		now = time.Now()
	}
	// Another boot, or no boot clock: only the delay the record was written under counts
	// (a difference of two times of one clock), from now.
	if st.LastAlive.IsZero() {
		st.RestartAt, st.HoldFloor = time.Time{}, time.Time{}
		return nil
	}
	ranUnder := st.HoldFloor.Sub(st.LastAlive)
	if in.LastAliveMS != nil && in.HoldFloorMS != nil {
		// Both range-checked above: the difference cannot overflow.
		ranUnder = time.Duration(*in.HoldFloorMS-*in.LastAliveMS) * time.Millisecond
	}
	if ranUnder > hold.MaxRestartDelay {
		return fmt.Errorf("hold_floor is %s after last_alive, more than %s (the largest restart delay): unreadable", ranUnder, hold.MaxRestartDelay)
	}
	st.LastAlive = now
	if in.LargestDelayMS == nil {
		st.LargestDelay = max(ranUnder, 0)
	}
	st.HoldFloor = now.Add(max(ranUnder, 0))
	st.RestartAt = st.HoldFloor
	return nil
}

// sameInstant is the instant the boot clock's ms (rounded up when written) stands for, as a
// time.Time with a monotonic reading. When the wall-clock time written beside it still
// agrees with the boot clock (no step since: it lies within the ms the rounding and the two
// clock readings leave open, and not after), the wall time is kept to the nanosecond, so
// that reading a state twice gives the same instant; otherwise the boot clock's.
func sameInstant(clock clockPair, ms int64, wall time.Time) time.Time {
	byBoot := clock.timeAtOrAfter(ms)
	if wall.IsZero() {
		return byBoot
	}
	byWall := clock.now.Add(wall.Sub(clock.now.Round(0)))
	if d := byBoot.Sub(byWall); d >= 0 && d <= time.Millisecond+2*maxClockPairWindow {
		return byWall
	}
	return byBoot
}
