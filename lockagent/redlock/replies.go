package redlock

// Reading the masters' replies to the acquisition and release scripts.

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// acquireReply is one master's answer to an acquisition.
type acquireReply struct {
	ok          bool          // the key was set with our token
	pttl        time.Duration // refused: the key's remaining TTL (-1ms: none; other negatives: unknown)
	register    uint64        // fencing only: the register before the optimistic write
	registerErr error         // the register could not be read (ok stays true)
	handed      uint64        // queued attempt, key already ours: the fence its hand-off gave (0: unknown)
	err         error         // no usable answer
}

// parseAcquire reads one master's reply: the acquire script's with fencing, else the
// pipeline SET NX PX, PTTL.
func parseAcquire(req *request, fencing bool) acquireReply {
	if req.err != nil {
		return acquireReply{err: req.err}
	}
	if fencing {
		return parseAcquireScript(req.cmds[0])
	}
	var rep acquireReply
	switch v, e := req.cmds[0].Result(); {
	case e == nil && v == "OK":
		rep.ok = true
	case errors.Is(e, redis.Nil):
	case e != nil:
		return acquireReply{err: e}
	default:
		return acquireReply{err: fmt.Errorf("unexpected SET reply %v", v)}
	}
	rep.pttl = parsePTTL(req.cmds[1].Int64())
	return rep
}

func parsePTTL(ms int64, err error) time.Duration {
	if err != nil {
		return -1 // unknown
	}
	return time.Duration(ms) * time.Millisecond
}

// parseAcquireScript reads {1, register} (set) or {0, pttl, register} (held).
func parseAcquireScript(cmd *redis.Cmd) acquireReply {
	vals, err := cmd.Slice()
	if err != nil {
		return acquireReply{err: err}
	}
	var flag int64 = -1
	if len(vals) > 0 {
		flag, _ = vals[0].(int64)
	}
	switch {
	case len(vals) == 2 && flag == 1:
		rep := acquireReply{ok: true}
		rep.register, rep.registerErr = parseRegister(vals[1])
		return rep
	case len(vals) == 3 && flag == 0:
		ms, ok := vals[1].(int64)
		rep := acquireReply{pttl: -1}
		if ok {
			rep.pttl = time.Duration(ms) * time.Millisecond
		}
		rep.register, _ = parseRegister(vals[2]) // only a hint for the cache
		return rep
	default:
		return acquireReply{err: fmt.Errorf("unexpected acquire script reply %v", vals)}
	}
}

// parseRegister reads a fencing register as the script returned it.
func parseRegister(v any) (uint64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("fencing register came back as %T, not a string", v)
	}
	f, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("fencing register holds %q, not a number", s)
	}
	if f >= fenceLimit {
		// Lua numbers are exact below 2^53 only, and one more would not fit anyway: a fence
		// handed out from it could be equal to or below an earlier one.
		return 0, fmt.Errorf("fencing register holds %d, at or above the limit 2^53: fences are exhausted for this lock name; use another name", f)
	}
	return f, nil
}

// fenceLimit bounds fencing registers: a register at or above it is an error, so every
// fence handed out is at most 2^53 and exact in the scripts.
const fenceLimit = 1 << 53

func parseRelease(req *request) (bool, error) {
	if req.err != nil {
		return false, req.err
	}
	v, err := req.cmds[0].Int64()
	if err != nil {
		return false, err
	}
	return v >= 1, nil
}

// parseQueuedReply reads {1, reg} (holder "new"), {2, reg} (holder "ours") or
// {0, pttl, reg, holder}.
func parseQueuedReply(req *request) (acquireReply, string) {
	if req.err != nil {
		return acquireReply{err: req.err}, ""
	}
	vals, err := req.cmds[0].Slice()
	if err != nil {
		return acquireReply{err: err}, ""
	}
	var flag int64 = -1
	if len(vals) > 0 {
		flag, _ = vals[0].(int64)
	}
	switch {
	case (len(vals) == 2 || len(vals) == 3 && flag == 2) && (flag == 1 || flag == 2):
		rep := acquireReply{ok: true}
		rep.register, rep.registerErr = parseRegister(vals[1])
		if flag == 1 {
			return rep, "new"
		}
		if len(vals) == 3 {
			rep.handed, _ = parseRegister(vals[2])
		}
		return rep, "ours"
	case len(vals) == 4 && flag == 0:
		rep := acquireReply{pttl: -1}
		if ms, ok := vals[1].(int64); ok {
			rep.pttl = time.Duration(ms) * time.Millisecond
		}
		rep.register, _ = parseRegister(vals[2])
		holder, _ := vals[3].(string)
		return rep, holder
	default:
		return acquireReply{err: fmt.Errorf("unexpected queued acquire reply %v", vals)}, ""
	}
}
