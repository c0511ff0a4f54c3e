package redlock

import "sync"

// fenceCacheSize bounds how many lock names a Client remembers a fence for. Past it, the
// names not used for the longest time are forgotten first (roughly: two generations).
const fenceCacheSize = 4096

// fenceCache remembers, per lock key, the largest fence this Client has seen (its own
// fences and the registers masters returned). It is only a hint for the optimistic
// proposal: a wrong or missing value costs a second round, never safety, because a fence
// is only handed out after a majority of registers proved it larger (see the package doc).
//
// Two generations bound it without a list: lookups hit the current map, then the
// previous one (and move the entry forward); when the current map is full it becomes the
// previous one and the old previous one is dropped.
type fenceCache struct {
	mu        sync.Mutex
	limit     int // entries per generation
	cur, prev map[string]uint64
}

func newFenceCache(size int) *fenceCache {
	limit := max(size/2, 1)
	return &fenceCache{limit: limit, cur: make(map[string]uint64, limit)}
}

// get returns the largest fence seen for key, 0 when unknown.
func (fc *fenceCache) get(key string) uint64 {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if f, ok := fc.cur[key]; ok {
		return f
	}
	f, ok := fc.prev[key]
	if ok {
		delete(fc.prev, key)
		fc.putLocked(key, f)
	}
	return f
}

// see records that fence f exists for key; the hint never goes down.
func (fc *fenceCache) see(key string, f uint64) {
	if f == 0 {
		return
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if old, ok := fc.cur[key]; ok {
		if f > old {
			fc.cur[key] = f
		}
		return
	}
	if old, ok := fc.prev[key]; ok {
		delete(fc.prev, key)
		f = max(f, old)
	}
	fc.putLocked(key, f)
}

func (fc *fenceCache) putLocked(key string, f uint64) {
	if len(fc.cur) >= fc.limit {
		fc.prev, fc.cur = fc.cur, make(map[string]uint64, fc.limit)
	}
	fc.cur[key] = f
}
