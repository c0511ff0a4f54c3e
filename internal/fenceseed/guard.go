package fenceseed

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/acl"
	"github.com/redlock-kit/redlock-kit/internal/audit"
)

// ErrNotSeeded refuses redlock_users' change on a master whose fence registers are not
// seeded when the change reaches it: it restarted empty after Seed ran (its runtime marked
// it unseeded, or is about to), so its lock users must stay off until the next apply
// seeds it.
var ErrNotSeeded = errors.New("the master's fence registers are not seeded")

// LetInGuard is redlock_users' acl.Change.Guard: it refuses the change on a master marked
// unseeded and, where the deployment seeds (seeds: a master has a record), on an empty
// master with no record (a runtime marks it next, after it turned its lock users off:
// a change in between would turn them on again).
func LetInGuard(seeds bool) func(ctx context.Context, c redis.Cmdable) error {
	return func(ctx context.Context, c redis.Cmdable) error {
		s, err := audit.ReadFenceSeed(ctx, c)
		if err != nil {
			return err
		}
		if s.Unseeded() {
			return fmt.Errorf("%w: %s says %s (it restarted empty during the apply): apply again to seed it", ErrNotSeeded,
				audit.FenceSeedKey, audit.FenceSeedUnseeded)
		}
		if s.State != "" || !seeds {
			return nil
		}
		n, err := dataKeys(ctx, c)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: it holds no key and no %s (it restarted empty during the apply, and its runtime has "+
				"not marked it yet): apply again to seed it", ErrNotSeeded, audit.FenceSeedKey)
		}
		return nil
	}
}

// Seeds reports whether the deployment seeds its fence registers: a master of states has
// a record.
func Seeds(states map[string]audit.FenceSeed) bool {
	for _, s := range states {
		if s.State != "" {
			return true
		}
	}
	return false
}

// LetIn is redlock_users' change after Seed: change made on the masters of ready (of
// endpoints), each guarded by LetInGuard; the failures by endpoint.
func LetIn(ctx context.Context, t acl.Target, endpoints, ready []string, change acl.Change) map[string]error {
	states, _ := ReadStates(ctx, t, endpoints)
	change.Guard = LetInGuard(Seeds(states))
	return t.ApplyChangeAll(ctx, ready, change)
}
