package test

import (
	"bufio"
	"context"
	"crypto/tls"
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
	"github.com/redlock-kit/redlock-kit/internal/overlap"
	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// replaceTTL is the rolling tests' largest lock TTL: short, so that a new host's restart
// hold (derived from it) is short too.
const replaceTTL = 2 * time.Second

// rollingCluster is five real systemd hosts rendered with seed_fences (internal/hostconfig,
// what modules/redlock-hosts renders with seed_fences = true), and the day-2 guide's
// "Replace a host" as steps: a new host boots from its user-data, holds restart_delay,
// starts with its lock user off and marks itself unseeded; the operator's apply
// (redlock_users: fenceseed.Seed, then the user on) seeds its fence registers from the
// others and lets the user in. The user-data may change at each replacement: a new
// certificate, another server package.
type rollingCluster struct {
	t         *testing.T
	ctx       context.Context
	lab       *hostlab.Lab
	hosts     []*hostlab.Host
	endpoints []string
	units     []string // each host's server unit (redis-server.service or valkey-server.service)
	adminPass string
	tenant    redisconf.LockUser
	// trust is what the operator's tools and the test's clients verify the masters
	// against (nil: plain text). During a CA rotation it holds the old and the new CA.
	trust   *tls.Config
	created bool // redlock_users' first apply (a create) is the only one that may seed a new deployment
}

// rollingHost is what one host of a rollingCluster runs: its server package ("" is
// redis-server) and its TLS material (nil: plain text).
type rollingHost struct {
	server string
	tls    *master.TLS
}

// startRollingCluster boots len(names) hosts, each from the user-data of rollingHost(i),
// waits until each has marked itself unseeded, and seeds them as a new deployment (what
// redlock_users' create does).
func startRollingCluster(t *testing.T, names []string, trust *tls.Config, host func(i int, h *hostlab.Host) rollingHost) *rollingCluster {
	t.Helper()
	specs := make([]hostlab.HostSpec, len(names))
	for i, n := range names {
		specs[i] = hostlab.HostSpec{Name: n}
	}
	lab := hostlab.Start(t, hostlab.Options{Hosts: specs, Clients: 1, NoBoot: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	t.Cleanup(cancel)
	c := &rollingCluster{t: t, ctx: ctx, lab: lab, hosts: lab.Hosts(), endpoints: make([]string, len(names)),
		units: make([]string, len(names)), adminPass: strings.Repeat("a", 64), trust: trust,
		tenant: redisconf.LockUser{Name: "app", KeyPrefix: "app:", Password: strings.Repeat("b", 64)}}
	userData := make([]string, len(names))
	for i, h := range c.hosts {
		userData[i] = c.render(i, host(i, h))
	}
	if err := lab.ProvisionAll(ctx, userData); err != nil {
		t.Fatal(err)
	}
	for i := range c.hosts {
		c.waitUnseeded(i)
	}
	// A new deployment: every master unseeded, so the first seeding seeds all of them.
	c.seedAndOpen(true, len(c.hosts))
	return c
}

// render renders host i's user-data and records its endpoint and unit.
func (c *rollingCluster) render(i int, r rollingHost) string {
	c.t.Helper()
	h := c.hosts[i]
	b, err := hostconfig.Render(hostconfig.Host{SeedFences: true, Server: r.server, Spec: master.Spec{Name: h.Name(),
		Bind: h.Address(), MaxLockTTL: replaceTTL, AdminPassword: c.adminPass, LockUsers: []redisconf.LockUser{c.tenant},
		TLS: r.tls}})
	if err != nil {
		c.t.Fatalf("render %s: %v", h.Name(), err)
	}
	c.endpoints[i], c.units[i] = b.Spec.Addr(), b.Server.Unit
	return b.UserData
}

// dialer opens connections from the client namespace, with TLS verified against c.trust
// when the cluster serves TLS.
func (c *rollingCluster) dialer() pki.Dialer {
	dial := pki.Dialer(c.lab.DialContext(0))
	if c.trust != nil {
		dial = pki.WrapDialer(dial, c.trust)
	}
	return dial
}

func (c *rollingCluster) client(i int, name, password string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: c.endpoints[i], Username: name, Password: password, Dialer: c.dialer(),
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 2 * time.Second, ContextTimeoutEnabled: true, MaxRetries: -1,
		DisableIdentity: true})
}

// adminTarget is how the operator's apply (redlock_users) reaches the masters.
func (c *rollingCluster) adminTarget() acl.Target {
	return acl.Target{Password: c.adminPass, Dialer: pki.Dialer(c.lab.DialContext(0)), TLS: c.trust}
}

// waitUnseeded waits until host i serves and has marked itself unseeded.
func (c *rollingCluster) waitUnseeded(i int) {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		admin := c.client(i, "", c.adminPass)
		s, err := audit.ReadFenceSeed(c.ctx, admin)
		_ = admin.Close()
		if err == nil && s.Unseeded() {
			return
		}
		if time.Now().After(deadline) {
			journal, _ := c.hosts[i].Exec(c.ctx, "journalctl", "--no-pager", "-n", "40", "-u", c.units[i])
			c.t.Fatalf("host %s never marked itself unseeded (%+v, %v):\n%s", c.hosts[i].Name(), s, err, journal)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// seedAndOpen is redlock_users' apply: seed the unseeded masters (when seed is set; want
// of them) from the others, then turn the lock user on everywhere.
func (c *rollingCluster) seedAndOpen(seed bool, want int) {
	c.t.Helper()
	target := c.adminTarget()
	if seed {
		done, failed := fenceseed.Seed(c.ctx, target, c.endpoints, fenceseed.Options{NewDeployment: !c.created})
		c.created = true
		if failed != nil || len(done) != want {
			c.t.Fatalf("seeding: %d seeded, want %d; failures %v", len(done), want, failed)
		}
		for _, s := range done {
			c.t.Logf("seeded %s: %s (%d registers)", s.Endpoint, s.Reason, s.Registers)
		}
	}
	user := acl.User{Name: c.tenant.Name, KeyPrefix: c.tenant.KeyPrefix, PasswordHashes: []string{redisconf.HashPassword(c.tenant.Password)}}
	if failed := target.ApplyChangeAll(c.ctx, c.endpoints, acl.Change{Users: []acl.User{user}}); failed != nil {
		c.t.Fatalf("lock user on: %v", failed)
	}
}

// replace is the guide's procedure for one host: a new machine takes host i's address
// with userData, holds restart_delay, marks itself unseeded; the apply seeds it from the
// others (the reason in its journal) and lets its user in.
func (c *rollingCluster) replace(i int, userData string) {
	c.t.Helper()
	if err := c.hosts[i].Replace(c.ctx, userData); err != nil {
		c.t.Fatal(err)
	}
	c.waitUnseeded(i)
	c.seedAndOpen(true, 1)
	journal, _ := c.hosts[i].Exec(c.ctx, "journalctl", "--no-pager", "-u", c.units[i])
	if !strings.Contains(journal, "redlock-kit: fence registers seeded") {
		c.t.Errorf("host %s's journal does not give the seeding's reason:\n%s", c.hosts[i].Name(), journal)
	}
}

// lockClient is an in-process Redlock client of the tenant over every master.
func (c *rollingCluster) lockClient() *redlock.Client {
	c.t.Helper()
	masters := make([]redis.UniversalClient, len(c.endpoints))
	for i := range c.endpoints {
		masters[i] = c.client(i, c.tenant.Name, c.tenant.Password)
	}
	lc, err := redlock.New(masters, redlock.Options{MaxTTL: replaceTTL, NodeTimeout: 200 * time.Millisecond})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { _ = lc.Close() })
	return lc
}

// contention is separate `lockagent run` processes in the client namespace, each run a
// new process (its own connections and fence cache), taking locks in a loop while the
// cluster changes under them. Every holder logs "<key> <fence> begin" and, 50 ms later,
// "<key> <fence> end" to one log, under its lock; a run that fails is logged with its exit
// code. The log is what the checkers read.
type contention struct {
	c           *rollingCluster
	holds       string // the holders' log
	failures    string // one line per failed run: "<key> exit <code>"
	stderr      string // the runs' stderr, for diagnosis
	agentConfig string
	stop        string // its existence stops the workers after their current run
	workers     sync.WaitGroup
}

// newContention writes the clients' agent.json (trusting caPEM when not empty) and
// returns the logs the holders write to; start starts the clients.
func (c *rollingCluster) newContention(caPEM string) *contention {
	dir := c.t.TempDir()
	k := &contention{c: c, holds: filepath.Join(dir, "holds.log"), failures: filepath.Join(dir, "failures.log"),
		stderr: filepath.Join(dir, "stderr.log"), agentConfig: filepath.Join(dir, "agent.json"), stop: filepath.Join(dir, "stop")}
	k.writeAgentConfig(caPEM)
	c.t.Cleanup(k.stopWorkers)
	return k
}

// writeAgentConfig rolls a new client config out to the clients: each run reads it when
// it starts, and the rename makes the switch atomic.
func (k *contention) writeAgentConfig(caPEM string) {
	k.c.t.Helper()
	k.writeAgentConfigTo(k.agentConfig, caPEM)
}

// writeAgentConfigTo writes the tenant's agent.json (trusting caPEM when not empty) to path.
func (k *contention) writeAgentConfigTo(path, caPEM string) {
	k.c.t.Helper()
	cfg := map[string]any{"endpoints": k.c.endpoints, "username": k.c.tenant.Name, "password": k.c.tenant.Password,
		"max_lock_ttl": replaceTTL.String()}
	if caPEM != "" {
		cfg["tls"], cfg["ca_cert_pem"] = true, caPEM
	}
	b, _ := json.Marshal(cfg)
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		k.c.t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		k.c.t.Fatal(err)
	}
}

// start starts workers looping `lockagent run` on keys (worker w on keys[w%len(keys)]),
// again after stopWorkers too (the same logs go on). A run waits up to a minute for its
// lock, so that the workers end when the test does.
func (k *contention) start(workers int, keys []string) {
	k.c.t.Helper()
	if err := os.Remove(k.stop); err != nil && !os.IsNotExist(err) {
		k.c.t.Fatal(err)
	}
	hold := fmt.Sprintf(`echo "$LOCKAGENT_KEY $LOCKAGENT_FENCE begin" >>%q; sleep 0.05; echo "$LOCKAGENT_KEY $LOCKAGENT_FENCE end" >>%q`,
		k.holds, k.holds)
	for w := 0; w < workers; w++ {
		key := keys[w%len(keys)]
		loop := fmt.Sprintf(`while [ ! -e %q ]; do %q run -c %q --key %q --ttl %s --wait 1m -- sh -c %s >/dev/null 2>>%q || echo "%s exit $?" >>%q; done`,
			k.stop, lockagentBin, k.agentConfig, key, replaceTTL, shellQuote(hold), k.stderr, key, k.failures)
		cmd := k.c.lab.ClientCommand(k.c.ctx, 0, "sh", "-c", loop)
		if err := cmd.Start(); err != nil {
			k.c.t.Fatal(err)
		}
		k.workers.Add(1)
		go func() { defer k.workers.Done(); _ = cmd.Wait() }()
	}
}

// stopWorkers lets every worker finish its current run and waits for them.
func (k *contention) stopWorkers() {
	_ = os.WriteFile(k.stop, nil, 0o644)
	k.workers.Wait()
}

// waitHolds waits until more holds than now are logged.
func (k *contention) waitHolds(more int) {
	k.c.t.Helper()
	start := len(begins(readHolds(k.c.t, k.holds)))
	deadline := time.Now().Add(3 * time.Minute)
	for len(begins(readHolds(k.c.t, k.holds))) < start+more {
		if time.Now().After(deadline) {
			k.c.t.Fatalf("the workers took fewer than %d locks in 3 minutes; failures:\n%s", more, k.failureLines())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// take acquires key in-process, logs the hold like the workers do, and releases it.
func (k *contention) take(lc *redlock.Client, key string) {
	k.c.t.Helper()
	lock, err := lc.Acquire(k.c.ctx, key, replaceTTL)
	if err != nil {
		k.c.t.Fatalf("acquire %s: %v", key, err)
	}
	appendHold(k.c.t, k.holds, key, lock.Fence(), "begin")
	appendHold(k.c.t, k.holds, key, lock.Fence(), "end")
	if err := lock.Release(k.c.ctx); err != nil {
		k.c.t.Fatalf("release %s: %v", key, err)
	}
}

// failureLines are the failed runs ("<key> exit <code>") and the runs' last messages,
// without the progress reports of runs still waiting.
func (k *contention) failureLines() string {
	failures, _ := os.ReadFile(k.failures)
	stderr, _ := os.ReadFile(k.stderr)
	var messages []string
	for _, line := range strings.Split(string(stderr), "\n") {
		if line != "" && !strings.Contains(line, "waiting for lock") {
			messages = append(messages, line)
		}
	}
	return fmt.Sprintf("%s\nstderr of the runs:\n%s", failures, tailLines(strings.Join(messages, "\n"), 20))
}

// failedRuns counts the runs that failed, and of them those whose lock outlived its
// validity on a busy machine: each exited 70 (lost) after the run said its validity expired
// (a 2 s TTL: a run kept off the CPU, or an extension round slower than what was left, ends
// that way whatever the hosts do). A run refused by the masters (another holder, a TLS
// error, no majority) is never among the expired.
func (k *contention) failedRuns() (failed, expired int) {
	b, err := os.ReadFile(k.failures)
	if err != nil {
		return 0, 0
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if string(b) == "" {
		return 0, 0
	}
	stderr, _ := os.ReadFile(k.stderr)
	said := map[string]int{} // key -> runs that said their validity expired
	for _, line := range strings.Split(string(stderr), "\n") {
		if key, ok := strings.CutPrefix(line, `lockagent run: lock "`); ok {
			if key, rest, ok := strings.Cut(key, `" lost (`); ok && strings.HasPrefix(rest, "redlock: lock validity expired)") {
				said[key]++
			}
		}
	}
	for _, line := range lines {
		if key, ok := strings.CutSuffix(line, " exit 70"); ok && said[key] > 0 {
			said[key]--
			expired++
		}
	}
	return len(lines), expired
}

// holdEvent is one line of the holders' log.
type holdEvent struct {
	key   string
	fence uint64
	end   bool
}

func appendHold(t *testing.T, path, key string, fence uint64, what string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %d %s\n", key, fence, what)
}

// readHolds reads the log in the order the holders wrote it (each under its lock, with
// O_APPEND: the file's order is the order in time).
func readHolds(t *testing.T, path string) []holdEvent {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []holdEvent
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || (fields[2] != "begin" && fields[2] != "end") {
			continue // a line being written
		}
		fence, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			continue
		}
		out = append(out, holdEvent{key: fields[0], fence: fence, end: fields[2] == "end"})
	}
	return out
}

func begins(events []holdEvent) []holdEvent {
	var out []holdEvent
	for _, e := range events {
		if !e.end {
			out = append(out, e)
		}
	}
	return out
}

// holdViolations checks the log with the kit's history checker (internal/overlap): each
// hold is an interval from its begin line to its end line, the log's line numbers as the
// clock (the file's order is the order in time). It returns the fences not above an
// earlier hold's of their key, and the holds that began while another of their key had not
// ended. A hold with no end (its holder was stopped) lasts to the end of the log.
func holdViolations(events []holdEvent) (backwards, overlapping []string) {
	type open struct {
		line  int
		fence uint64
	}
	at := func(line int) time.Time { return time.Unix(0, int64(line)) }
	checker := overlap.New()
	holding := map[string][]open{} // key -> holds begun, not yet ended
	for line, e := range events {
		if !e.end {
			holding[e.key] = append(holding[e.key], open{line, e.fence})
			continue
		}
		for j, o := range holding[e.key] {
			if o.fence == e.fence {
				checker.Record(e.key, fmt.Sprint(o.line), at(o.line), at(line), o.fence)
				holding[e.key] = append(holding[e.key][:j], holding[e.key][j+1:]...)
				break
			}
		}
	}
	for key, opens := range holding {
		for _, o := range opens {
			checker.Record(key, fmt.Sprint(o.line), at(o.line), at(len(events)), o.fence)
		}
	}
	for _, v := range checker.Violations() {
		if v.Kind == overlap.KindFence {
			backwards = append(backwards, fmt.Sprintf("%s: fence %d after %d", v.Key, v.Second.Fence, v.First.Fence))
		} else {
			overlapping = append(overlapping, fmt.Sprintf("%s: fence %d began while fence %d held it", v.Key, v.Second.Fence, v.First.Fence))
		}
	}
	return backwards, overlapping
}

func largest(events []holdEvent) uint64 {
	var m uint64
	for _, e := range events {
		m = max(m, e.fence)
	}
	return m
}

// shellQuote quotes s for sh as one word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
