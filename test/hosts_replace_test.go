package test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/acl"
	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/fenceseed"
	"github.com/redlock-kit/redlock-kit/internal/hostconfig"
	"github.com/redlock-kit/redlock-kit/internal/hostlab"
	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

const replaceTTL = 2 * time.Second

// TestHostsRollingReplacement is the day-2 guide's "Replace a host" on five real systemd
// hosts rendered with seed_fences: three of them are replaced one at a time (an empty disk,
// cloud-init afresh) while separate `lockagent run` processes contend for two locks, each
// appending its fence to a log under its lock. Each new host holds its restart delay,
// starts with its lock user off and marks itself unseeded; the seeding (what redlock_users
// runs) seeds it from the other four and turns the user on, and the host's journal gives
// the reason. Then the two original hosts are cut off from the client and a new client
// takes every lock: no fence in the log ever goes backwards. The negative control then
// replaces the three hosts again without seeding: a cold lock's fence goes back to 1.
func TestHostsRollingReplacement(t *testing.T) {
	specs := []hostlab.HostSpec{{Name: "r1"}, {Name: "r2"}, {Name: "r3"}, {Name: "r4"}, {Name: "r5"}}
	lab := hostlab.Start(t, hostlab.Options{Hosts: specs, Clients: 1, NoBoot: true})
	adminPass := strings.Repeat("a", 64)
	tenant := redisconf.LockUser{Name: "app", KeyPrefix: "app:", Password: strings.Repeat("b", 64)}
	hosts := lab.Hosts()
	userData := make([]string, len(hosts))
	endpoints := make([]string, len(hosts))
	var unit string
	for i, h := range hosts {
		b, err := hostconfig.Render(hostconfig.Host{SeedFences: true, Spec: master.Spec{Name: h.Name(), Bind: h.Address(),
			MaxLockTTL: replaceTTL, AdminPassword: adminPass, LockUsers: []redisconf.LockUser{tenant}}})
		if err != nil {
			t.Fatal(err)
		}
		userData[i], endpoints[i], unit = b.UserData, b.Spec.Addr(), b.Server.Unit
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	dial := pki.Dialer(lab.DialContext(0))
	target := acl.Target{Password: adminPass, Dialer: dial}
	user := acl.User{Name: tenant.Name, KeyPrefix: tenant.KeyPrefix, PasswordHashes: []string{redisconf.HashPassword(tenant.Password)}}
	client := func(i int, name, password string) *redis.Client {
		return redis.NewClient(&redis.Options{Addr: endpoints[i], Username: name, Password: password, Dialer: dial,
			DialTimeout: 500 * time.Millisecond, ReadTimeout: 2 * time.Second, ContextTimeoutEnabled: true, MaxRetries: -1,
			DisableIdentity: true})
	}
	// waitUnseeded waits until host i serves and has marked itself unseeded.
	waitUnseeded := func(i int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Minute)
		for {
			admin := client(i, "", adminPass)
			s, err := audit.ReadFenceSeed(ctx, admin)
			_ = admin.Close()
			if err == nil && s.Unseeded() {
				return
			}
			if time.Now().After(deadline) {
				journal, _ := hosts[i].Exec(ctx, "journalctl", "--no-pager", "-n", "40", "-u", unit)
				t.Fatalf("host %s never marked itself unseeded (%+v, %v):\n%s", hosts[i].Name(), s, err, journal)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	created := false // redlock_users' first apply (a create) is the only one that may seed a new deployment
	seedAndOpen := func(seed bool, want int) {
		t.Helper()
		if seed {
			done, failed := fenceseed.Seed(ctx, target, endpoints, fenceseed.Options{NewDeployment: !created})
			created = true
			if failed != nil || len(done) != want {
				t.Fatalf("seeding: %d seeded, want %d; failures %v", len(done), want, failed)
			}
			for _, s := range done {
				t.Logf("seeded %s: %s (%d registers)", s.Endpoint, s.Reason, s.Registers)
			}
		}
		if failed := target.ApplyChangeAll(ctx, endpoints, acl.Change{Users: []acl.User{user}}); failed != nil {
			t.Fatalf("lock user on: %v", failed)
		}
	}

	for i, h := range hosts {
		if err := h.Provision(ctx, userData[i]); err != nil {
			t.Fatal(err)
		}
	}
	for i := range hosts {
		waitUnseeded(i)
	}
	// A new deployment: every master unseeded, so the first seeding seeds all five.
	seedAndOpen(true, len(hosts))

	dir := t.TempDir()
	fenceLog := filepath.Join(dir, "fences.log")
	appendFence := func(key string, fence uint64) {
		f, err := os.OpenFile(fenceLog, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fmt.Fprintf(f, "%s %d\n", key, fence)
	}
	lockClient := func() *redlock.Client {
		masters := make([]redis.UniversalClient, len(endpoints))
		for i := range endpoints {
			masters[i] = client(i, tenant.Name, tenant.Password)
		}
		c, err := redlock.New(masters, redlock.Options{MaxTTL: replaceTTL, NodeTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	take := func(c *redlock.Client, key string) {
		t.Helper()
		lock, err := c.Acquire(ctx, key, replaceTTL)
		if err != nil {
			t.Fatalf("acquire %s: %v", key, err)
		}
		appendFence(key, lock.Fence())
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("release %s: %v", key, err)
		}
	}
	coldKeys, hotKeys := []string{"app:cold-1", "app:cold-2"}, []string{"app:hot-1", "app:hot-2"}
	warm := lockClient()
	for _, key := range coldKeys {
		for n := 0; n < 30; n++ {
			take(warm, key)
		}
	}

	// Separate client processes in the client namespace, each `lockagent run` a new process
	// (its own fence cache): the command appends the fence it holds to the log.
	agentConfig := filepath.Join(dir, "agent.json")
	cfg, _ := json.Marshal(map[string]any{"endpoints": endpoints, "username": tenant.Name, "password": tenant.Password,
		"max_lock_ttl": replaceTTL.String()})
	if err := os.WriteFile(agentConfig, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	stop := filepath.Join(dir, "stop")
	var workers sync.WaitGroup
	for w := 0; w < 4; w++ {
		key := hotKeys[w%len(hotKeys)]
		loop := fmt.Sprintf(`while [ ! -e %q ]; do %q run -c %q --key %q --ttl %s -- sh -c 'echo "$LOCKAGENT_KEY $LOCKAGENT_FENCE" >>%q' >/dev/null 2>&1; done`,
			stop, lockagentBin, agentConfig, key, replaceTTL, fenceLog)
		cmd := lab.ClientCommand(ctx, 0, "sh", "-c", loop)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		workers.Add(1)
		go func() { defer workers.Done(); _ = cmd.Wait() }()
	}
	stopWorkers := func() {
		_ = os.WriteFile(stop, nil, 0o644)
		workers.Wait()
	}
	t.Cleanup(stopWorkers)
	waitFences := func(more int) {
		t.Helper()
		start := len(readFences(t, fenceLog))
		deadline := time.Now().Add(3 * time.Minute)
		for len(readFences(t, fenceLog)) < start+more {
			if time.Now().After(deadline) {
				t.Fatalf("the workers took fewer than %d locks in 3 minutes", more)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitFences(20)

	for _, i := range []int{0, 1, 2} {
		before := largest(readFences(t, fenceLog))
		if err := hosts[i].Replace(ctx, userData[i]); err != nil {
			t.Fatal(err)
		}
		waitUnseeded(i)
		seedAndOpen(true, 1)
		journal, _ := hosts[i].Exec(ctx, "journalctl", "--no-pager", "-u", unit)
		if !strings.Contains(journal, "redlock-kit: fence registers seeded") {
			t.Errorf("host %s's journal does not give the seeding's reason:\n%s", hosts[i].Name(), journal)
		}
		waitFences(20)
		t.Logf("replaced %s: largest fence before %d, after %d", hosts[i].Name(), before, largest(readFences(t, fenceLog)))
	}
	stopWorkers()

	probe := func() {
		t.Helper()
		if err := lab.CutClient(0, hosts[3], hosts[4]); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := lab.Heal(); err != nil {
				t.Fatal(err)
			}
		}()
		c := lockClient()
		for _, key := range append(append([]string{}, coldKeys...), hotKeys...) {
			take(c, key)
		}
	}
	probe()
	fences := readFences(t, fenceLog)
	back := backwards(fences)
	t.Logf("seeded: %d acquisitions logged, %d fences out of order %q", len(fences), len(back), back)
	if len(back) > 0 {
		t.Fatalf("fences went backwards with seeding: %q", back)
	}

	// The negative control: the three replaced again, together, their users let in unseeded.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for _, i := range []int{0, 1, 2} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = hosts[i].Replace(ctx, userData[i]) }()
	}
	wg.Wait()
	for _, i := range []int{0, 1, 2} {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		waitUnseeded(i)
	}
	seedAndOpen(false, 0)
	probe()
	back = backwards(readFences(t, fenceLog))
	t.Logf("negative control, not seeded: %d fences out of order %q", len(back), back)
	if len(back) == 0 {
		t.Fatal("negative control: without seeding no fence went backwards, so the test cannot tell")
	}
}

type loggedFence struct {
	key   string
	fence uint64
}

// readFences reads the log: one "key fence" line per acquisition, in the order the
// holders wrote them (each under its lock).
func readFences(t *testing.T, path string) []loggedFence {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []loggedFence
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, n, ok := strings.Cut(sc.Text(), " ")
		fence, err := strconv.ParseUint(n, 10, 64)
		if !ok || err != nil {
			continue // a line being written
		}
		out = append(out, loggedFence{key, fence})
	}
	return out
}

// backwards lists every logged fence not above the last one logged for its key.
func backwards(fences []loggedFence) []string {
	last := map[string]uint64{}
	var out []string
	for _, f := range fences {
		if f.fence <= last[f.key] {
			out = append(out, fmt.Sprintf("%s: fence %d after %d", f.key, f.fence, last[f.key]))
		}
		last[f.key] = max(last[f.key], f.fence)
	}
	return out
}

func largest(fences []loggedFence) uint64 {
	var m uint64
	for _, f := range fences {
		m = max(m, f.fence)
	}
	return m
}
