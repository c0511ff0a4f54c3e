package audit

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// A master that starts empty (a new or replaced host, a lost data disk) has no fencing
// registers: were lock users let in at once, a majority of such masters would hand out
// fences below those already given. Its runtime marks it unseeded, with its lock users
// off; whoever seeds its registers from a majority of the other masters (redlock_users)
// records how under FenceSeedKey and turns the users on. The audit reads that record.
const (
	// FenceSeedKey is the hash that says whether the master's fence registers are seeded.
	FenceSeedKey = redisconf.KitKeyPrefix + "fence-seed"
	// FenceSeedStateField is FenceSeedUnseeded or FenceSeedSeeded.
	FenceSeedStateField = "state"
	// FenceSeedReasonField says why the state is what it is, in words.
	FenceSeedReasonField = "reason"
	// FenceSeedFromField lists the masters the registers were seeded from.
	FenceSeedFromField = "from"
	// FenceSeedMarginField is what was added to the largest register read.
	FenceSeedMarginField = "margin"
	// FenceSeedRegistersField counts the registers seeded.
	FenceSeedRegistersField = "registers"
	// FenceSeedAtField is the Unix time of the seeding, in milliseconds.
	FenceSeedAtField = "seeded_at_ms"

	// FenceSeedUnseeded is the state a runtime writes when the master starts empty.
	FenceSeedUnseeded = "unseeded"
	// FenceSeedSeeded is the state once the registers were seeded (or needed none).
	FenceSeedSeeded = "seeded"
)

// FenceSeed is what a master's FenceSeedKey holds; State "" means there is no record
// (a master not run by a runtime that marks new masters, or from before the kit did).
type FenceSeed struct {
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"`
	From   string `json:"from,omitempty"`
}

// Unseeded reports whether the master is marked as waiting for its fence registers.
func (s FenceSeed) Unseeded() bool { return s.State == FenceSeedUnseeded }

// ReadFenceSeed reads the record through c (the admin connection).
func ReadFenceSeed(ctx context.Context, c redis.Cmdable) (FenceSeed, error) {
	fields, err := c.HGetAll(ctx, FenceSeedKey).Result()
	if err != nil {
		return FenceSeed{}, fmt.Errorf("HGETALL %s: %w", FenceSeedKey, err)
	}
	s := FenceSeed{State: fields[FenceSeedStateField], Reason: fields[FenceSeedReasonField], From: fields[FenceSeedFromField]}
	if len(fields) > 0 && s.State != FenceSeedSeeded && s.State != FenceSeedUnseeded {
		return s, fmt.Errorf("%s field %s is %q, neither %s nor %s", FenceSeedKey, FenceSeedStateField, s.State, FenceSeedSeeded, FenceSeedUnseeded)
	}
	return s, nil
}

// readFenceSeed fills m.FenceSeed. A record the audit cannot read leaves the check unmade.
func (m *Master) readFenceSeed(ctx context.Context, c *redis.Client, t Target) {
	s, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (FenceSeed, error) { return ReadFenceSeed(ctx, c) })
	if err != nil {
		m.uncheck("whether the master's fence registers are seeded could not be read", err)
		return
	}
	m.FenceSeed = s
}

// fenceSeedFindings: an unseeded master whose lock users can log in is a problem (its
// empty registers can vote fences backwards); one that keeps them off only waits.
func (m Master) fenceSeedFindings() (problems, warnings []string) {
	if !m.FenceSeed.Unseeded() {
		return nil, nil
	}
	var on []string
	for _, u := range m.LockUsers {
		if u.Enabled && len(u.keyPatterns()) > 0 {
			on = append(on, u.Name)
		}
	}
	why := ""
	if m.FenceSeed.Reason != "" {
		why = " (" + m.FenceSeed.Reason + ")"
	}
	if len(on) > 0 {
		problems = append(problems, fmt.Sprintf("Master %s's fence registers are not seeded%s, yet lock users %s can log in: it started empty, and "+
			"once a majority of the masters that held a lock's register are such masters, fences go backwards. Fix: run terraform apply "+
			"(redlock_users seeds its registers from a majority of the other masters, then turns the users on), or ACL SETUSER <user> off "+
			"on it until then.", m.Endpoint, why, strings.Join(on, ", ")))
		return problems, nil
	}
	warnings = append(warnings, fmt.Sprintf("Master %s waits for its fence registers to be seeded%s: its lock users are off, so it "+
		"cannot vote for locks. Fix: run terraform apply (redlock_users seeds it from a majority of the other masters).", m.Endpoint, why))
	return nil, warnings
}
