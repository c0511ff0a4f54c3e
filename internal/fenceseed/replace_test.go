package fenceseed_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/acl"
	"github.com/redlock-kit/redlock-kit/internal/chaos"
	"github.com/redlock-kit/redlock-kit/internal/fenceseed"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// The tenant the workers lock as; its prefix confines it (and its fence registers).
var tenant = redisconf.LockUser{Name: "app", Password: "app-secret-for-fence-seeding", KeyPrefix: "app:"}

const (
	lockTTL = 2 * time.Second
	// coldAcquisitions raise each cold lock's fence before the replacements; nothing takes
	// a cold lock again until the final probe.
	coldAcquisitions = 30
)

var (
	hotKeys  = []string{"app:hot-1", "app:hot-2", "app:hot-3"}
	coldKeys = []string{"app:cold-1", "app:cold-2"}
)

// TestRollingReplacementKeepsFencesMonotonic replaces three of five masters one at a time,
// each with an empty disk, while workers (each its own Client, as separate processes are)
// contend for a few locks and a fenced register refuses any fence not above the last one
// it saw. Each new master comes up as a new host does: lock users off (its ACL file as
// rendered) and marked unseeded; Seed (what redlock_users runs) then seeds its registers
// from a majority of the other masters and the lock user is turned on. Finally two of
// the original masters are stopped, so that the replaced ones are the majority, and a new
// Client takes every lock: with seeding every fence is above every earlier one. The
// negative control does the same without seeding and sees fences go backwards.
func TestRollingReplacementKeepsFencesMonotonic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		seed bool
	}{
		{name: "seeded: no fence goes backwards", seed: true},
		{name: "negative control, not seeded: fences go backwards", seed: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := rollingReplacement(t, tc.seed)
			t.Logf("%d acquisitions under contention, %d fenced operations refused or not above the last fence", res.acquisitions, len(res.violations))
			for _, v := range res.violations {
				t.Logf("  %s", v)
			}
			switch {
			case res.acquisitions == 0:
				t.Fatal("no acquisition succeeded: the test proved nothing")
			case tc.seed && len(res.violations) > 0:
				t.Fatalf("fences went backwards with seeding: %q", res.violations)
			case !tc.seed && len(res.violations) == 0:
				t.Fatal("negative control: without seeding no fence went backwards, so the test cannot tell")
			}
		})
	}
}

type replacementResult struct {
	acquisitions int64
	violations   []string
}

func rollingReplacement(t *testing.T, seed bool) replacementResult {
	c := redistest.StartKit(t, redistest.Options{Masters: 5, LockUsers: []redisconf.LockUser{tenant}, ACLFile: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	target := acl.Target{Password: redistest.AdminPassword}
	endpoints := c.Addrs()
	// The deployment as it runs today: every master seeded (a new deployment's first apply).
	for _, m := range c.Masters {
		if err := fenceseed.MarkUnseeded(ctx, m.Admin()); err != nil {
			t.Fatal(err)
		}
	}
	if done, failed := fenceseed.Seed(ctx, target, endpoints, fenceseed.Options{NewDeployment: true}); failed != nil || len(done) != 5 {
		t.Fatalf("first seeding: %d seeded, failures %v", len(done), failed)
	}

	reg := chaos.NewRegister(func() int64 { return time.Now().UnixNano() })
	// The cold locks' fences go up first; then they rest.
	warm := newClient(t, c)
	for _, key := range coldKeys {
		for i := 0; i < coldAcquisitions; i++ {
			if err := takeAndUsePatiently(ctx, warm, reg, key, fmt.Sprintf("warm-%d", i)); err != nil {
				t.Fatalf("warm %s: %v", key, err)
			}
		}
	}

	var acquisitions atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		client := newClient(t, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key := hotKeys[(w+n)%len(hotKeys)]
				if err := takeAndUse(ctx, client, reg, key, fmt.Sprintf("worker-%d-%d", w, n)); err == nil {
					acquisitions.Add(1)
				} else {
					time.Sleep(5 * time.Millisecond) // taken or a master away: try again
				}
			}
		}()
	}

	for _, i := range []int{0, 1, 2} {
		before := largestFence(reg)
		replaceMaster(ctx, t, c.Masters[i])
		if seed {
			done, failed := fenceseed.Seed(ctx, target, endpoints, fenceseed.Options{})
			if failed != nil || len(done) != 1 {
				t.Fatalf("seeding %s: %d seeded, failures %v", c.Masters[i].Addr, len(done), failed)
			}
			t.Logf("replaced %s (largest fence so far %d): %s; %d registers written", c.Masters[i].Addr, before, done[0].Reason, done[0].Registers)
		} else {
			t.Logf("replaced %s (largest fence so far %d), not seeded", c.Masters[i].Addr, before)
		}
		user := acl.User{Name: tenant.Name, KeyPrefix: tenant.KeyPrefix, PasswordHashes: []string{redisconf.HashPassword(tenant.Password)}}
		if failed := target.ApplyChangeAll(ctx, []string{c.Masters[i].Addr}, acl.Change{Users: []acl.User{user}}); failed != nil {
			t.Fatalf("lock user on: %v", failed)
		}
		// Contention reaches the new master before the next replacement.
		for start := acquisitions.Load(); acquisitions.Load() < start+20; {
			time.Sleep(10 * time.Millisecond)
		}
	}
	close(stop)
	wg.Wait()

	// The replaced masters are the majority now: stop the two others.
	for _, m := range c.Masters[3:] {
		if err := m.Pause(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Resume() })
	}
	probe := newClient(t, c)
	for _, key := range append(append([]string{}, coldKeys...), hotKeys...) {
		if err := takeAndUsePatiently(ctx, probe, reg, key, "probe"); err != nil {
			t.Fatalf("probe %s: %v", key, err)
		}
	}
	states, ops := reg.Snapshot()
	res := replacementResult{acquisitions: acquisitions.Load()}
	for _, op := range ops {
		if op.Op == chaos.OpRead && (!op.Accepted || op.Fence <= op.MaxBefore) {
			res.violations = append(res.violations, fmt.Sprintf("%s: holder %s read with fence %d after fence %d", op.Key, op.Holder, op.Fence, op.MaxBefore))
		}
	}
	keys := make([]string, 0, len(states))
	for k := range states {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%s: largest fence %d, %d accepted writes", k, states[k].MaxFence, states[k].Accepted)
	}
	return res
}

// replaceMaster destroys m's host and brings up a new one on the same address: an empty
// disk, its ACL file as rendered (lock users off), a start after the largest TTL, and the
// unseeded mark its runtime writes at start.
func replaceMaster(ctx context.Context, t *testing.T, m *redistest.Master) {
	t.Helper()
	if err := m.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(m.DataDir, "appendonlydir")); err != nil {
		t.Fatal(err)
	}
	rendered, err := redisconf.Config{AdminPassword: redistest.AdminPassword, LockUsers: []redisconf.LockUser{tenant}, LockUsersOff: true}.RenderACL()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(m.DataDir, "users.acl"), []byte(rendered), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(lockTTL) // the restart delay a new host holds: every lock it could know has expired
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := fenceseed.MarkUnseeded(ctx, m.Admin()); err != nil {
		t.Fatal(err)
	}
	if n, err := fenceseed.DataKeys(ctx, m.Admin()); err != nil || n != 1 {
		t.Fatalf("the new master should hold only its mark (and its deployment record): %d keys besides the record (%v)", n, err)
	}
}

// newClient is a Client of its own (its own fence cache, as a separate process has) over
// every master, as the tenant.
func newClient(t *testing.T, c *redistest.Cluster) *redlock.Client {
	t.Helper()
	var masters []redis.UniversalClient
	for _, m := range c.Masters {
		rdb := m.ClientAs(tenant.Name, tenant.Password)
		t.Cleanup(func() { _ = rdb.Close() })
		masters = append(masters, rdb)
	}
	client, err := redlock.New(masters, redlock.Options{MaxTTL: lockTTL, NodeTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// takeAndUse takes key and, under it, increments its counter in the fenced register (which
// logs a stale fence it refuses: the checks read that log).
func takeAndUse(ctx context.Context, client *redlock.Client, reg *chaos.Register, key, holder string) error {
	lock, err := client.TryAcquire(ctx, key, lockTTL)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Release(context.WithoutCancel(ctx)) }()
	if v, ok, _ := reg.Read(key, holder, lock.Fence()); ok {
		reg.Write(key, holder, lock.Fence(), v+1)
	}
	return nil
}

// takeAndUsePatiently is takeAndUse for a client that must get the lock (see patiently).
func takeAndUsePatiently(ctx context.Context, client *redlock.Client, reg *chaos.Register, key, holder string) error {
	return patiently(ctx, func() error { return takeAndUse(ctx, client, reg, key, holder) })
}

// patiently runs acquire, which nothing else contends with, until it succeeds: on a loaded
// machine a master can miss the node timeout (ErrUnavailable), and the keys such a failed try
// left behind make the next try ErrTaken until they expire. These tests are about fence
// order, not latency: it tries again until ctx ends.
func patiently(ctx context.Context, acquire func() error) error {
	for {
		err := acquire()
		if err == nil || !(errors.Is(err, redlock.ErrUnavailable) || errors.Is(err, redlock.ErrTaken)) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (until %v)", err, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// quietRedis keeps go-redis from logging every dial to a master that is down on purpose.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	redis.SetLogger(quietRedis{})
	os.Exit(m.Run())
}

// largestFence is the largest fence the register has seen, over every key.
func largestFence(reg *chaos.Register) uint64 {
	states, _ := reg.Snapshot()
	var largest uint64
	for _, s := range states {
		largest = max(largest, s.MaxFence)
	}
	return largest
}
