// Package fenceseed seeds the fencing registers of a master that started empty (a new or
// replaced host) from the other masters, before its lock users are let in.
//
// Why: a fence is at or below the register of a majority of the masters. A master that
// comes back empty has no registers; once a majority of the masters that held a lock's
// register were replaced so, a majority of empty registers can hand out a fence below one
// already given. Seeding closes that: the new master's register for every lock becomes the
// largest value that SourcesNeeded(N) of the other masters hold, plus Margin.
//
// Why SourcesNeeded(N) = N - N/2 of the others suffice: a fence F was written to a quorum
// Q of N/2+1 masters; without the new master X, at least N/2 of them are among the N-1
// others, and any N - N/2 of the others meet them (N/2 + N - N/2 > N-1). So the largest
// register read is at least every fence handed out before the read. A fence handed out
// after (or during) it comes from a quorum without X, whose lock users are still off, and
// any later quorum meets that one among the others. The margin is room on top: the wait
// queue's hand-offs move registers by up to 100 at a time.
//
// The state lives on each master (audit.FenceSeedKey): its runtime writes "unseeded" when
// it starts with no data; Seed writes "seeded", with the reason and the sources, and logs
// the reason in the server's log (redis.log, which a host's journal keeps).
package fenceseed

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/acl"
	"github.com/redlock-kit/redlock-kit/internal/audit"
)

// Margin is added to the largest register read: above any single move of the protocol's.
const Margin = 1000

// SourcesNeeded is how many of the other masters of n a master must be seeded from.
func SourcesNeeded(n int) int { return n - n/2 }

// ErrNoMajority is the failure of a master that cannot be seeded: not enough of the other
// masters are seeded and reachable.
var ErrNoMajority = errors.New("not enough seeded masters reachable to seed from")

// ErrEveryMasterUnseeded is the failure of every master when all of them are unseeded in
// a deployment whose lock users were let in before (Options.NewDeployment false): every
// register is gone, and seeding them from each other would restart every fence at 1,
// below fences already given.
var ErrEveryMasterUnseeded = errors.New("every master lost its fence registers")

// Options says what Seed may assume about the deployment.
type Options struct {
	// NewDeployment says no lock user was ever let in on these masters (redlock_users'
	// first apply): only then are masters that are all unseeded a new deployment, seeded
	// from each other (every register from 0). The zero value refuses them
	// (ErrEveryMasterUnseeded): every master was replaced or emptied since its users were
	// let in.
	NewDeployment bool
}

// Seeded is what Seed did to one master.
type Seeded struct {
	Endpoint  string
	From      []string // the masters its registers were read from
	Registers int      // registers written
	Reason    string   // as recorded on the master
}

// Seed seeds every master of endpoints whose record says unseeded (audit.FenceSeed) and
// returns what it did, and the failures by endpoint: a master it could not read, and an
// unseeded one it could not seed (ErrNoMajority, or an error of a source or of the write).
// A master with no record, or a seeded one, is left alone and is a source, except an
// empty master with no record where another master has one (ErrUnmarked). When every
// master is reachable and unseeded, each is seeded from all the others all the same (every
// register from 0) if opts.NewDeployment, and refused (ErrEveryMasterUnseeded) if not.
func Seed(ctx context.Context, t acl.Target, endpoints []string, opts Options) ([]Seeded, map[string]error) {
	states, failed := ReadStates(ctx, t, endpoints)
	if failed == nil {
		failed = map[string]error{}
	}
	unmarked := unmarkedEmpty(ctx, t, endpoints, states, failed)
	var unseeded, sources []string
	for _, ep := range endpoints {
		s, ok := states[ep]
		switch {
		case !ok, unmarked[ep]:
		case s.Unseeded():
			unseeded = append(unseeded, ep)
		default:
			sources = append(sources, ep)
		}
	}
	if len(unseeded) == 0 {
		return nil, nilIfEmpty(failed)
	}
	reason := fmt.Sprintf("seeded from %%d of the other %d masters (%%s), every register at the largest they hold + %d, "+
		"before its lock users were let in", len(endpoints)-1, Margin)
	need := SourcesNeeded(len(endpoints))
	if len(sources) == 0 && len(unseeded) == len(endpoints) && !opts.NewDeployment {
		for _, ep := range unseeded {
			failed[ep] = &acl.EndpointError{Endpoint: ep, Err: fmt.Errorf("%w: every master (%s) started empty and is "+
				"unseeded, after lock users were let in: seeded from each other, fences would restart at 1, below "+
				"fences already given. Restore a master's data (its appendonlydir) and apply again; if this is "+
				"intended (a new cluster, every old fence void), replace redlock_users: terraform apply "+
				"-replace=<its address, e.g. redlock_users.this>", ErrEveryMasterUnseeded, strings.Join(unseeded, ", "))}
		}
		return nil, failed
	}
	if len(sources) == 0 && len(unseeded) == len(endpoints) {
		// A new deployment: no master has let a lock user in, so no fence exists anywhere.
		sources = unseeded
		reason = fmt.Sprintf("a new deployment: every master was unseeded, so none had let a lock user in; seeded from "+
			"%%d of the other %d masters (%%s), every register at the largest they hold + %d", len(endpoints)-1, Margin)
	} else if len(sources) < need {
		for _, ep := range unseeded {
			failed[ep] = &acl.EndpointError{Endpoint: ep, Err: fmt.Errorf("%w: its fence registers must be seeded from %d of "+
				"the other masters before its lock users are let in, and only %d are seeded and reachable (%s). Bring the "+
				"other masters back (a replaced master is seeded once a majority of the others are) and apply again",
				ErrNoMajority, need, len(sources), orNone(sources))}
		}
		return nil, failed
	}
	genesis := len(sources) == len(endpoints)
	registers, readFrom, readErr := readRegisters(ctx, t, sources)
	var done []Seeded
	for _, ep := range unseeded {
		from := without(readFrom, ep)
		if len(from) < need && !genesis {
			detail := fmt.Sprintf("read %d of the %d other masters needed (%s)", len(from), need, orNone(from))
			if readErr != nil {
				detail += ": " + readErr.Error()
			}
			failed[ep] = &acl.EndpointError{Endpoint: ep, Err: fmt.Errorf("%w: %s", ErrNoMajority, detail)}
			continue
		}
		values := maxOver(registers, from)
		why := fmt.Sprintf(reason, len(from), strings.Join(from, ", "))
		n, err := write(ctx, t, ep, values, from, why)
		if err != nil {
			failed[ep] = &acl.EndpointError{Endpoint: ep, Err: fmt.Errorf("seed the fence registers: %w", err)}
			continue
		}
		done = append(done, Seeded{Endpoint: ep, From: from, Registers: n, Reason: why})
	}
	return done, nilIfEmpty(failed)
}

// ErrUnmarked is the failure of an empty master with no record in a deployment whose
// other masters have one: a new server its runtime has not marked yet (the mark comes
// after the server starts), or a flushed one. It is no source (it holds no register), and
// its lock users must not be let in: it is seeded once its runtime marked it.
var ErrUnmarked = errors.New("empty master with no fence-seed record")

// unmarkedEmpty are the masters with no record that hold no key, when another master has a
// record (so the deployment seeds, and an empty master with no record was not seeded);
// each is added to failed. Where no master has a record (a deployment that does not seed),
// none is.
func unmarkedEmpty(ctx context.Context, t acl.Target, endpoints []string, states map[string]audit.FenceSeed, failed map[string]error) map[string]bool {
	out := map[string]bool{}
	if !Seeds(states) {
		return out
	}
	for _, ep := range endpoints {
		if s, ok := states[ep]; !ok || s.State != "" {
			continue
		}
		n, err := keysOf(ctx, t, ep)
		switch {
		case err != nil:
			failed[ep] = err
		case n == 0:
			failed[ep] = &acl.EndpointError{Endpoint: ep, Err: fmt.Errorf("%w (%s): it holds no key, so it started empty "+
				"or was flushed and has no fence registers, while the other masters are seeded. Its lock users stay as they "+
				"are: wait until its runtime marked it unseeded (at its start) and apply again; for a master no runtime "+
				"marks, HSET %s %s %s as the admin", ErrUnmarked, audit.FenceSeedKey, audit.FenceSeedKey, audit.FenceSeedStateField,
				audit.FenceSeedUnseeded)}
		default:
			continue
		}
		out[ep] = true
	}
	return out
}

// keysOf is how many keys ep holds besides its deployment record (dataKeys).
func keysOf(ctx context.Context, t acl.Target, ep string) (int64, error) {
	c, err := t.Connect(ctx, ep)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	n, err := dataKeys(ctx, c)
	if err != nil {
		return 0, &acl.EndpointError{Endpoint: ep, Err: err}
	}
	return n, nil
}

// ReadStates reads every master's record; the failures by endpoint.
func ReadStates(ctx context.Context, t acl.Target, endpoints []string) (map[string]audit.FenceSeed, map[string]error) {
	states := map[string]audit.FenceSeed{}
	var failed map[string]error
	for _, ep := range endpoints {
		s, err := readState(ctx, t, ep)
		if err != nil {
			if failed == nil {
				failed = map[string]error{}
			}
			failed[ep] = err
			continue
		}
		states[ep] = s
	}
	return states, failed
}

func readState(ctx context.Context, t acl.Target, ep string) (audit.FenceSeed, error) {
	c, err := t.Connect(ctx, ep)
	if err != nil {
		return audit.FenceSeed{}, err
	}
	defer c.Close()
	s, err := audit.ReadFenceSeed(ctx, c)
	if err != nil {
		return s, &acl.EndpointError{Endpoint: ep, Err: err}
	}
	return s, nil
}

// MarkUnseeded is what a runtime does when a master starts with no data: the record says
// unseeded unless there is one already (HSETNX). The host's script does the same.
func MarkUnseeded(ctx context.Context, c redis.Cmdable) error {
	return c.HSetNX(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedUnseeded).Err()
}

// write seeds ep's registers (each raised to its value, never lowered), then records the
// seeding and logs it in the server's log.
func write(ctx context.Context, t acl.Target, ep string, values map[string]int64, from []string, reason string) (int, error) {
	client, err := t.Connect(ctx, ep)
	if err != nil {
		return 0, err
	}
	defer client.Close()
	// One connection, which does not reconnect: a master that restarts during the writes
	// fails the seeding, instead of getting the record without the registers.
	c := client.Conn()
	defer c.Close()
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	written := 0
	for start := 0; start < len(keys); start += batch {
		part := keys[start:min(start+batch, len(keys))]
		args := make([]any, len(part))
		for i, k := range part {
			args[i] = values[k] + Margin
		}
		n, err := raiseScript.Run(ctx, c, part, args...).Int()
		if err != nil {
			return written, fmt.Errorf("raise registers: %w", err)
		}
		written += n
	}
	err = recordScript.Run(ctx, c, []string{audit.FenceSeedKey},
		audit.FenceSeedStateField, audit.FenceSeedSeeded, audit.FenceSeedReasonField, reason,
		audit.FenceSeedFromField, strings.Join(from, ","), audit.FenceSeedMarginField, Margin,
		audit.FenceSeedRegistersField, len(keys), audit.FenceSeedAtField, time.Now().UnixMilli()).Err()
	if err != nil {
		return written, fmt.Errorf("record the seeding in %s: %w", audit.FenceSeedKey, err)
	}
	return written, nil
}

// batch bounds the registers one script raises: a script blocks the master while it runs.
const batch = 500

// raiseScript raises each KEYS[i] to ARGV[i] where it holds less (or nothing), and counts
// the registers it wrote.
var raiseScript = redis.NewScript(`
local n = 0
for i = 1, #KEYS do
  local cur = tonumber(redis.call('GET', KEYS[i]))
  local want = tonumber(ARGV[i])
  if cur == nil or cur < want then
    redis.call('SET', KEYS[i], ARGV[i])
    n = n + 1
  end
end
return n`)

// recordScript writes the record (ARGV: field, value, ...) and logs its reason (ARGV[4]).
var recordScript = redis.NewScript(`
redis.call('HSET', KEYS[1], unpack(ARGV))
redis.log(redis.LOG_WARNING, 'redlock-kit: fence registers ' .. ARGV[2] .. ': ' .. ARGV[4])
return 1`)

func without(list []string, s string) []string {
	var out []string
	for _, e := range list {
		if e != s {
			out = append(out, e)
		}
	}
	return out
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

func nilIfEmpty(m map[string]error) map[string]error {
	if len(m) == 0 {
		return nil
	}
	return m
}
