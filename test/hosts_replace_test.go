package test

import (
	"sync"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/hostlab"
)

// TestHostsRollingReplacement is the day-2 guide's "Replace a host" on five real systemd
// hosts rendered with seed_fences: three of them are replaced one at a time (an empty disk,
// cloud-init afresh) while separate `lockagent run` processes contend for two locks, each
// logging its fence under its lock. Each new host holds its restart delay, starts with its
// lock user off and marks itself unseeded; the seeding (what redlock_users runs) seeds it
// from the other four and turns the user on, and the host's journal gives the reason. Then
// the two original hosts are cut off from the client and a new client takes every lock:
// no fence in the log ever goes backwards, no two holds of a lock overlap. The negative
// control then replaces the three hosts again without seeding: a cold lock's fence goes
// back to 1.
func TestHostsRollingReplacement(t *testing.T) {
	started := time.Now()
	c := startRollingCluster(t, []string{"r1", "r2", "r3", "r4", "r5"}, nil,
		func(int, *hostlab.Host) rollingHost { return rollingHost{} })
	userData := make([]string, len(c.hosts))
	for i := range c.hosts {
		userData[i] = c.render(i, rollingHost{})
	}
	k := c.newContention("")
	coldKeys, hotKeys := []string{"app:cold-1", "app:cold-2"}, []string{"app:hot-1", "app:hot-2"}
	warm := c.lockClient()
	for _, key := range coldKeys {
		for n := 0; n < 30; n++ {
			k.take(warm, key)
		}
	}
	k.start(4, hotKeys)
	k.waitHolds(20)

	for _, i := range []int{0, 1, 2} {
		before := largest(readHolds(t, k.holds))
		c.replace(i, userData[i])
		k.waitHolds(20)
		t.Logf("replaced %s: largest fence before %d, after %d", c.hosts[i].Name(), before, largest(readHolds(t, k.holds)))
	}
	k.stopWorkers()

	probe := func() {
		t.Helper()
		if err := c.lab.CutClient(0, c.hosts[3], c.hosts[4]); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := c.lab.Heal(); err != nil {
				t.Fatal(err)
			}
		}()
		lc := c.lockClient()
		for _, key := range append(append([]string{}, coldKeys...), hotKeys...) {
			k.take(lc, key)
		}
	}
	probe()
	holds := readHolds(t, k.holds)
	back, overlapping := holdViolations(holds)
	t.Logf("seeded: %d acquisitions logged, %d overlaps, %d fences out of order %q, %d failed runs, %s",
		len(begins(holds)), len(overlapping), len(back), back, k.failedRuns(), time.Since(started).Round(time.Second))
	if failed := k.failedRuns(); len(back) > 0 || len(overlapping) > 0 || failed > 0 {
		t.Fatalf("with seeding: fences out of order %q, overlaps %q, %d failed runs\n%s", back, overlapping, failed, k.failureLines())
	}

	// The negative control: the three replaced again, together, their users let in unseeded.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for _, i := range []int{0, 1, 2} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = c.hosts[i].Replace(c.ctx, userData[i]) }()
	}
	wg.Wait()
	for _, i := range []int{0, 1, 2} {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		c.waitUnseeded(i)
	}
	c.seedAndOpen(false, 0)
	probe()
	back, _ = holdViolations(readHolds(t, k.holds))
	t.Logf("negative control, not seeded: %d fences out of order %q", len(back), back)
	if len(back) == 0 {
		t.Fatal("negative control: without seeding no fence went backwards, so the test cannot tell")
	}
}
