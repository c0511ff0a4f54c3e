package fenceseed

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redlock-kit/redlock-kit/internal/acl"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
)

// registerPattern matches every fencing register (a lock's key + lua.FenceSuffix).
const registerPattern = "*" + lua.FenceSuffix

// readRegisters reads every fencing register of each source: the values by source, the
// sources read (in order), and what failed on the others.
func readRegisters(ctx context.Context, t acl.Target, sources []string) (map[string]map[string]int64, []string, error) {
	out := map[string]map[string]int64{}
	var read []string
	var errs []error
	for _, ep := range sources {
		regs, err := registersOf(ctx, t, ep)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[ep] = regs
		read = append(read, ep)
	}
	return out, read, errors.Join(errs...)
}

// registersOf scans one master for its registers (SCAN does not block it). A key with the
// suffix that holds no integer is not a register (the library refuses such lock names).
func registersOf(ctx context.Context, t acl.Target, ep string) (map[string]int64, error) {
	c, err := t.Connect(ctx, ep)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	regs := map[string]int64{}
	var cursor uint64
	for {
		keys, next, err := c.ScanType(ctx, cursor, registerPattern, 1000, "string").Result()
		if err != nil {
			return nil, &acl.EndpointError{Endpoint: ep, Err: fmt.Errorf("SCAN for fence registers: %w", err)}
		}
		if len(keys) > 0 {
			vals, err := c.MGet(ctx, keys...).Result()
			if err != nil {
				return nil, &acl.EndpointError{Endpoint: ep, Err: fmt.Errorf("MGET fence registers: %w", err)}
			}
			for i, v := range vals {
				s, ok := v.(string)
				if !ok {
					continue // gone since the scan
				}
				if n, err := strconv.ParseInt(s, 10, 64); err == nil {
					regs[keys[i]] = n
				}
			}
		}
		if cursor = next; cursor == 0 {
			return regs, nil
		}
	}
}

// maxOver is, per register, the largest value the masters of from hold.
func maxOver(registers map[string]map[string]int64, from []string) map[string]int64 {
	out := map[string]int64{}
	for _, ep := range from {
		for k, v := range registers[ep] {
			if cur, ok := out[k]; !ok || v > cur {
				out[k] = v
			}
		}
	}
	return out
}
