package test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/retry"
	"github.com/gruntwork-io/terratest/modules/terraform"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// The fault runbook: kill one master, kill a majority, pause one; at every step Redlock
// either still works or fails safely, and the delayed restart brings masters back only
// after every lock they knew has expired elsewhere.
func TestFaultRunbook(t *testing.T) {
	t.Parallel()
	d := deployLocalFive(t, "4s")
	client, err := redlock.New(d.lockClients(t), redlock.Options{MaxTTL: d.maxLockTTL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	ctx := t.Context()
	// acquire takes a lock that should be free: retried for a bounded time, because a lone
	// attempt can miss a majority when this shared machine stalls an fsync past the node
	// timeout. A lost majority still fails it.
	acquire := func(t *testing.T, key string, ttl time.Duration) *redlock.Lock {
		t.Helper()
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		lock, err := client.Acquire(actx, key, ttl)
		if err != nil {
			t.Fatalf("acquire %s: %v", key, err)
		}
		return lock
	}

	t.Run("one master SIGKILLed: locks still acquired, master held back, acknowledged writes survive", func(t *testing.T) {
		admin := d.admin(t, 0)
		// An acknowledged write with a TTL that outlives the restart delay: with
		// appendfsync always it must be there when the master returns.
		if err := admin.Set(ctx, "e2e:durable-probe", "acknowledged", 10*time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		before := acquire(t, "e2e:fence-probe", time.Second)
		fenceBefore := before.Fence()
		if err := before.Release(ctx); err != nil {
			t.Fatalf("release before the kill: %v", err)
		}

		killed := d.state(t, 0).RedisPID
		kill(t, killed)

		lock := acquire(t, "e2e:one-down", 2*time.Second)
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("release with one master down: %v", err)
		}

		// The supervisor holds the master down until restart_delay after it was last seen
		// alive; while it holds, nothing answers on the master's address.
		held := d.waitHolding(t, 0)
		if got := held.RestartAt.Sub(held.LastAlive); got < d.restartDelay {
			t.Fatalf("supervisor restarts %v after the master was last seen alive, want at least restart_delay %v", got, d.restartDelay)
		}
		probedAt := time.Now()
		if !refuses(d.endpoints[0]) && probedAt.Before(held.RestartAt) {
			t.Fatalf("master 0 accepts connections at %v, before its restart at %v", probedAt, held.RestartAt)
		}
		waitAccepting(t, d.endpoints[0], d.restartDelay)
		if got, err := admin.Get(ctx, "e2e:durable-probe").Result(); err != nil || got != "acknowledged" {
			t.Fatalf("acknowledged write lost across the crash: %q, %v", got, err)
		}
		if now := time.Now(); now.Before(held.RestartAt) {
			t.Fatalf("master 0 answers at %v, before its restart time %v", now, held.RestartAt)
		}
		// The probe is not a lock: remove it so that destroy has no live key to wait for.
		_ = admin.Del(ctx, "e2e:durable-probe").Err()
		after := acquire(t, "e2e:fence-probe", time.Second)
		if after.Fence() <= fenceBefore {
			t.Fatalf("fencing token went backwards across the crash: %d then %d", fenceBefore, after.Fence())
		}
		_ = after.Release(ctx)

		// Outputs are as of the last refresh: a refresh shows the restarted server's pid,
		// never the killed one.
		terraform.RunTerraformCommand(t, d.opts, terraform.FormatArgs(d.opts, "apply", "-refresh-only", "-auto-approve", "-input=false")...)
		if pids := terraform.OutputList(t, d.opts, "pids"); len(pids) != 5 || pids[0] != fmt.Sprint(d.state(t, 0).RedisPID) || pids[0] == fmt.Sprint(killed) {
			t.Fatalf("pids output after a refresh = %v; want master 0's live pid %d (killed: %d)", pids, d.state(t, 0).RedisPID, killed)
		}
	})

	t.Run("majority SIGKILLed: acquire fails as unavailable, never a false success; all recover", func(t *testing.T) {
		for i := 1; i <= 3; i++ {
			kill(t, d.state(t, i).RedisPID)
		}
		lock, err := client.TryAcquire(ctx, "e2e:majority-down", 2*time.Second)
		if err == nil {
			_ = lock.Release(ctx)
			t.Fatal("acquired a lock with three of five masters down")
		}
		var unavailable *redlock.UnavailableError
		if !errors.As(err, &unavailable) {
			t.Fatalf("error = %v (%T), want *redlock.UnavailableError", err, err)
		}
		for i := 1; i <= 3; i++ {
			waitAccepting(t, d.endpoints[i], d.restartDelay)
			d.waitVouched(t, i)
		}
		_ = acquire(t, "e2e:majority-back", 2*time.Second).Release(ctx)
		d.validateSafe(t) // SAFE after the recovery
	})

	t.Run("one master SIGSTOPped longer than the node timeout: acquire still succeeds", func(t *testing.T) {
		pid := d.state(t, 4).RedisPID
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
		lock := acquire(t, "e2e:one-paused", 2*time.Second)
		if !lock.Deadline().After(time.Now()) {
			t.Fatalf("lock acquired with no validity left (deadline %v)", lock.Deadline())
		}
		_ = lock.Release(ctx)
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if got := d.state(t, 4); got.RedisPID != pid {
			t.Fatalf("a paused master was restarted (pid %d -> %d); a pause is not a crash", pid, got.RedisPID)
		}
	})
}

func kill(t *testing.T, pid int) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("no redis pid to kill (%d)", pid)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL %d: %v", pid, err)
	}
}

// waitAccepting waits until addr accepts connections again: the restart delay plus time
// for the supervisor to restart the master and redis to replay its AOF.
// waitVouched waits until master i's runtime has published the deployment record for the
// server now running (its run_id). After a crash the record comes back from the AOF naming
// the previous run, and the audit rightly says UNSAFE until the supervisor, which starts the
// server first, has written it again: the recovery is done when it has.
func (d *deployment) waitVouched(t *testing.T, i int) {
	t.Helper()
	admin := d.admin(t, i)
	retry.DoWithRetry(t, fmt.Sprintf("%s vouched for by its runtime", d.endpoints[i]), int((d.restartDelay+30*time.Second)/(250*time.Millisecond)),
		250*time.Millisecond, func() (string, error) {
			info, err := admin.InfoMap(t.Context(), "server").Result()
			if err != nil {
				return "", err
			}
			runID := info["Server"]["run_id"]
			vouched, err := admin.HGet(t.Context(), hold.DeploymentKey, hold.FieldRunID).Result()
			if err != nil || vouched != runID {
				return "", fmt.Errorf("the record names run %q, the server is run %q (%v)", vouched, runID, err)
			}
			return "vouched", nil
		})
}

func waitAccepting(t *testing.T, addr string, restartDelay time.Duration) {
	t.Helper()
	retry.DoWithRetry(t, fmt.Sprintf("%s accepts connections", addr), int((restartDelay+30*time.Second)/(250*time.Millisecond)),
		250*time.Millisecond, func() (string, error) {
			if refuses(addr) {
				return "", errStillRefusing
			}
			return "accepting", nil
		})
}
