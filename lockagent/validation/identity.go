package validation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/audit"
)

// The behaviour and contention phases must talk to the servers the audit saw: a balancer
// or NAT in front of several servers can hand the audit one and a lock client another.
// Before phase 2 the admin writes, on each endpoint, a marker key holding the run_id the
// audit read there (on a connection whose own INFO says that run_id); every connection a
// lock client of phases 2 and 3 opens reads it first (the lock user may GET its own keys).
// A connection that finds no marker, or another run_id, reached another server.

// identityWatch checks every lock connection against the marker of its endpoint.
type identityWatch struct {
	key      string
	timeout  time.Duration     // bounds each marker read (not the lock command's node timeout)
	expected map[string]string // endpoint -> run_id the marker holds; absent: not checked

	mu         sync.Mutex
	mismatches []string
	unchecked  []string
	checked    map[string]int
}

// identityMarkerTTL bounds how long a marker outlives a validate that could not clean up.
const identityMarkerTTL = 10 * time.Minute

// newIdentityWatch writes the markers. Endpoints whose run_id the audit did not read are
// not checked (the audit already reports them).
func newIdentityWatch(ctx context.Context, o *validateOptions, rep *audit.Report, key string) *identityWatch {
	iw := &identityWatch{key: key, timeout: o.auditTimeout, expected: map[string]string{}, checked: map[string]int{}}
	for i, ep := range o.cfg.Endpoints {
		if i >= len(rep.Masters) || rep.Masters[i].RunID == "" {
			continue
		}
		want := rep.Masters[i].RunID
		opt := ClientOptions(o.cfg, ep, o.dialer)
		opt.Username, opt.Password, opt.PoolSize = o.cfg.AdminUsername, o.cfg.AdminPassword, 1
		c := redis.NewClient(opt)
		wctx, cancel := context.WithTimeout(ctx, o.auditTimeout)
		info, err := c.Info(wctx, "server").Result()
		if err == nil {
			if got := parseRunID(info); got != want {
				iw.mismatch(fmt.Sprintf("Endpoint %s reached run_id %s on the connection that writes the identity marker, not %s as in the audit: the endpoint is not one server.", ep, got, want))
			} else {
				err = c.Set(wctx, key, want, identityMarkerTTL).Err()
			}
		}
		cancel()
		_ = c.Close()
		if err != nil {
			iw.uncheck(fmt.Sprintf("The identity marker could not be written on %s (%v), so whether phases 2 and 3 reached the audited server there is unknown.", ep, err))
			continue
		}
		iw.expected[ep] = want
	}
	return iw
}

func parseRunID(info string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v
		}
	}
	return ""
}

// onConnect is the redis.Options.OnConnect of the lock clients of endpoint ep.
func (iw *identityWatch) onConnect(ep string) func(context.Context, *redis.Conn) error {
	want, ok := iw.expected[ep]
	if !ok {
		return nil
	}
	return func(ctx context.Context, cn *redis.Conn) error {
		// Its own deadline, not the lock command's node timeout: a marker read cut short
		// would leave the new connection broken, and the next attempt would dial again.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), iw.timeout)
		defer cancel()
		got, err := cn.Get(ctx, iw.key).Result()
		switch {
		case errors.Is(err, redis.Nil):
			iw.mismatch(fmt.Sprintf("Endpoint %s: a lock connection of phases 2-3 reached a server without the identity marker the audited server (run_id %s) holds: the endpoint is not one server (a balancer or NAT in front of several), so two clients can count its vote from different servers.", ep, want))
		case err == nil && got != want:
			iw.mismatch(fmt.Sprintf("Endpoint %s: a lock connection of phases 2-3 reached a server whose identity marker says run_id %s, not %s as in the audit: the endpoint is not one server.", ep, got, want))
		case err == nil:
			iw.mu.Lock()
			iw.checked[ep]++
			iw.mu.Unlock()
		case audit.IsDenied(err):
			iw.uncheck(fmt.Sprintf("Endpoint %s: the lock user may not read the identity marker %s (%v), so whether phases 2 and 3 reached the audited server is unknown.", ep, iw.key, err))
		}
		// A timeout says nothing about identity; the phases report availability.
		return nil
	}
}

func (iw *identityWatch) mismatch(s string) {
	iw.mu.Lock()
	defer iw.mu.Unlock()
	if !slices.Contains(iw.mismatches, s) {
		iw.mismatches = append(iw.mismatches, s)
	}
}

func (iw *identityWatch) uncheck(s string) {
	iw.mu.Lock()
	defer iw.mu.Unlock()
	if !slices.Contains(iw.unchecked, s) {
		iw.unchecked = append(iw.unchecked, s)
	}
}

// file adds what the watch found to res.
func (iw *identityWatch) file(res *Report) {
	iw.mu.Lock()
	defer iw.mu.Unlock()
	for _, m := range iw.mismatches {
		res.add(statusFailed, m)
	}
	for _, u := range iw.unchecked {
		res.add(statusInconclusive, u)
	}
}
