package redlock

import (
	"strconv"
	"testing"
)

func TestFenceCache(t *testing.T) {
	t.Run("unknown keys are 0 and a hint never goes down", func(t *testing.T) {
		fc := newFenceCache(8)
		if f := fc.get("k"); f != 0 {
			t.Fatalf("unknown key: %d, want 0", f)
		}
		for _, tc := range []struct{ see, want uint64 }{{5, 5}, {3, 5}, {0, 5}, {9, 9}} {
			fc.see("k", tc.see)
			if got := fc.get("k"); got != tc.want {
				t.Errorf("after see(%d): %d, want %d", tc.see, got, tc.want)
			}
		}
	})

	t.Run("it stays bounded and keeps the recently used names", func(t *testing.T) {
		const size = 8
		fc := newFenceCache(size)
		fc.see("hot", 42)
		for i := 0; i < 10*size; i++ {
			fc.see("cold-"+strconv.Itoa(i), uint64(i+1))
			if fc.get("hot") != 42 { // used all along: moved forward each time
				t.Fatalf("after %d other names the hot name was forgotten", i+1)
			}
			if n := len(fc.cur) + len(fc.prev); n > size {
				t.Fatalf("%d entries, bound %d", n, size)
			}
		}
		if f := fc.get("cold-0"); f != 0 {
			t.Errorf("the oldest unused name is still remembered (%d)", f)
		}
	})
}
