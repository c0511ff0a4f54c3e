package audit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestDeploymentRecordBinding: the deployment record vouches for the server run and the
// config file its runtime started, nothing else. Each broken binding is UNSAFE, naming
// what is wrong; the record as the runtime wrote it is the negative control.
func TestDeploymentRecordBinding(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3})
	ctx := context.Background()
	if rep := run(t, target(c)); !rep.Safe {
		t.Fatalf("the record as published: unsafe: %q", rep.Problems)
	}
	admin := c.Masters[1].Admin()
	for _, tc := range []struct {
		name        string
		field, to   string
		wantFinding []string
	}{
		{"a record of another server run", hold.FieldRunID, strings.Repeat("0", 40), []string{"started outside its runtime", "run 0000"}},
		{"a record naming no run", hold.FieldRunID, "", []string{"has no run_id"}},
		{"the config changed on disk", hold.FieldConfigDrift, "/etc/redis.conf changed on disk since the runtime rendered it: appendfsync",
			[]string{"/etc/redis.conf", "appendfsync", "next start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved, err := admin.HGet(ctx, hold.DeploymentKey, tc.field).Result()
			if err != nil && err.Error() != "redis: nil" {
				t.Fatal(err)
			}
			if err := admin.HSet(ctx, hold.DeploymentKey, tc.field, tc.to).Err(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { admin.HSet(context.Background(), hold.DeploymentKey, tc.field, saved) })
			rep := run(t, target(c))
			all := strings.Join(rep.Problems, "\n")
			if rep.Safe {
				t.Fatalf("SAFE with %s = %q", tc.field, tc.to)
			}
			// A record that does not vouch for the server shows no hold (validate's summary
			// line, redlock_audit's published_restart_delay_ms).
			if ms := rep.Masters[1].PublishedRestartDelayMS(); ms != -1 {
				t.Errorf("PublishedRestartDelayMS = %d for a record that does not vouch for the server, want -1", ms)
			}
			for _, w := range append(tc.wantFinding, c.Masters[1].Addr) {
				if !strings.Contains(all, w) {
					t.Errorf("problems %q lack %q", all, w)
				}
			}
		})
	}
}

// TestDatasetReplacedWhileServing: a master whose dataset was replaced while it served (it
// replicated another master and was promoted back; a FLUSHALL) is UNSAFE, naming how; a
// fresh cluster is the negative control (TestDeploymentRecordBinding's first audit).
func TestDatasetReplacedWhileServing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		replace func(t *testing.T, c *redistest.Cluster)
		want    string
	}{
		{"replicated another master, then REPLICAOF NO ONE", func(t *testing.T, c *redistest.Cluster) {
			r, p := c.Masters[1].Admin(), c.Masters[0]
			if err := r.ConfigSet(t.Context(), "masterauth", redistest.AdminPassword).Err(); err != nil {
				t.Fatal(err)
			}
			if err := r.ReplicaOf(t.Context(), p.Host, fmt.Sprint(p.Port)).Err(); err != nil {
				t.Fatal(err)
			}
			// Wait for the sync: the dataset is the other master's once the link is up.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				info, _ := r.Info(t.Context(), "replication").Result()
				if strings.Contains(info, "master_link_status:up") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the replica never synced:\n%s", info)
				}
			}
			if err := r.ReplicaOf(t.Context(), "NO", "ONE").Err(); err != nil {
				t.Fatal(err)
			}
		}, "was a replica since it started"},
		{"FLUSHALL", func(t *testing.T, c *redistest.Cluster) {
			if err := c.Masters[1].Admin().FlushAll(t.Context()).Err(); err != nil {
				t.Fatal(err)
			}
		}, "FLUSHALL ran 1 time"},
		{"a lock key moved out of db 0 (MOVE)", func(t *testing.T, c *redistest.Cluster) {
			a := c.Masters[1].Admin()
			if err := a.Set(t.Context(), "lock:moved", "tok", 5*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			if err := a.Move(t.Context(), "lock:moved", 1).Err(); err != nil {
				t.Fatal(err)
			}
		}, "MOVE ran 1 time"},
		{"a lock key migrated to another server (MIGRATE)", func(t *testing.T, c *redistest.Cluster) {
			a, to := c.Masters[1].Admin(), c.Masters[0]
			if err := a.Set(t.Context(), "lock:migrated", "tok", 5*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			if err := a.Do(t.Context(), "MIGRATE", to.Host, fmt.Sprint(to.Port), "lock:migrated", 0, 5000,
				"AUTH", redistest.AdminPassword).Err(); err != nil {
				t.Fatal(err)
			}
		}, "MIGRATE ran 1 time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := startKit(t, redistest.Options{Masters: 3})
			tc.replace(t, c)
			// What the runtime published stays (a replica's dataset lost it: written back).
			if err := c.PublishDeployment(testRestartDelay); err != nil {
				t.Fatal(err)
			}
			rep := run(t, target(c))
			all := strings.Join(rep.Problems, "\n")
			if rep.Safe || !strings.Contains(all, tc.want) || !strings.Contains(all, c.Masters[1].Addr) {
				t.Fatalf("safe %v, problems %q; want one naming %s and %q", rep.Safe, all, c.Masters[1].Addr, tc.want)
			}
		})
	}
}

// TestFlushHiddenFromCommandStatsIsUnsafe: CONFIG RESETSTAT after a FLUSHALL clears the
// count that names it, but the flush took the deployment record with it (only the runtime
// writes it, at the start): the master is UNSAFE all the same.
func TestFlushHiddenFromCommandStatsIsUnsafe(t *testing.T) {
	c := startKit(t, redistest.Options{Masters: 3})
	a := c.Masters[1].Admin()
	if err := a.FlushAll(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.ConfigResetStat(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	rep := run(t, target(c))
	all := strings.Join(rep.Problems, "\n")
	if strings.Contains(all, "FLUSHALL ran") {
		t.Fatalf("the count survived CONFIG RESETSTAT (the case tests nothing): %q", all)
	}
	if rep.Safe || !strings.Contains(all, hold.DeploymentKey+" is missing") || !strings.Contains(all, c.Masters[1].Addr) {
		t.Fatalf("safe %v, problems %q; want %s's record named missing", rep.Safe, all, c.Masters[1].Addr)
	}
}

// TestReplicaOfNoOneOnAMasterIsNotAReplacement: REPLICAOF NO ONE on a master (the
// provider's update runs it on every master) leaves its dataset as it was: still SAFE.
func TestReplicaOfNoOneOnAMasterIsNotAReplacement(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3})
	if err := c.Masters[1].Admin().ReplicaOf(t.Context(), "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if rep := run(t, target(c)); !rep.Safe {
		t.Fatalf("REPLICAOF NO ONE on a master made it unsafe: %q", rep.Problems)
	}
}

// TestReplicaOfSeenAfterTheBacklogIsFreed: a master that replicated another server and was
// promoted back keeps master_replid2 only until repl-backlog-ttl frees its backlog; with the
// record written again for this run (as a runtime that republishes would), the replication
// id it vouches for still tells: UNSAFE. The same master before REPLICAOF is the negative
// control.
func TestReplicaOfSeenAfterTheBacklogIsFreed(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3})
	ctx := t.Context()
	if rep := run(t, target(c)); !rep.Safe {
		t.Fatalf("negative control: %q", rep.Problems)
	}
	startReplID, _ := c.Masters[1].Admin().InfoMap(ctx, "replication").Result()
	r, p := c.Masters[1].Admin(), c.Masters[0]
	if err := r.ConfigSet(ctx, "masterauth", redistest.AdminPassword).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.ReplicaOf(ctx, p.Host, fmt.Sprint(p.Port)).Err(); err != nil {
		t.Fatal(err)
	}
	waitInfo := func(what, want string) {
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			info, _ := r.Info(ctx, "replication").Result()
			if strings.Contains(info, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no %q in\n%s", what, want, info)
			}
		}
	}
	waitInfo("the sync", "master_link_status:up")
	if err := r.ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.ConfigSet(ctx, "repl-backlog-ttl", "1").Err(); err != nil {
		t.Fatal(err)
	}
	waitInfo("the backlog freed", "master_replid2:"+strings.Repeat("0", 40))
	// The record as the runtime published it at the start, rebound to this run.
	info, _ := r.InfoMap(ctx, "server").Result()
	if err := r.HSet(ctx, hold.DeploymentKey, hold.FieldRestartDelayMS, redistest.KitRestartDelay.Milliseconds(),
		hold.FieldRuntime, hold.RuntimeLocal, hold.FieldRunID, info["Server"]["run_id"],
		hold.FieldReplID, startReplID["Replication"]["master_replid"]).Err(); err != nil {
		t.Fatal(err)
	}
	rep := run(t, target(c))
	all := strings.Join(rep.Problems, "\n")
	if rep.Safe || !strings.Contains(all, "replication id") || !strings.Contains(all, c.Masters[1].Addr) {
		t.Fatalf("safe %v, problems %q; want one naming %s and its replication id", rep.Safe, all, c.Masters[1].Addr)
	}
}

// TestHostRecordWithoutConfigDrift: a host record without config_drift (a host provisioned
// before hosts compared their config file) is SAFE with a warning that a hand edit of the
// file goes unseen; the same record with config_drift (empty) has no such warning (the
// control), and a local record without it none either (the test harness's records: a
// supervisor always writes it, and its absence is the heartbeat rule's business).
func TestHostRecordWithoutConfigDrift(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3})
	ctx := context.Background()
	const warning = "does not compare the server's config file on disk"
	warned := func() bool {
		t.Helper()
		rep := run(t, target(c))
		if !rep.Safe {
			t.Fatalf("unsafe: %q", rep.Problems)
		}
		return strings.Contains(strings.Join(rep.Warnings, "\n"), warning)
	}
	if warned() {
		t.Fatal("a local record without config_drift is warned about")
	}
	admin := c.Masters[2].Admin()
	if err := admin.HSet(ctx, hold.DeploymentKey, hold.FieldRuntime, hold.RuntimeHost).Err(); err != nil {
		t.Fatal(err)
	}
	if !warned() {
		t.Error("a host record without config_drift: no warning")
	}
	if err := admin.HSet(ctx, hold.DeploymentKey, hold.FieldConfigDrift, "").Err(); err != nil {
		t.Fatal(err)
	}
	if warned() {
		t.Error("a host record with config_drift: warned all the same")
	}
}

// TestDataDirStorage: the record says what storage the data dir is on (hold.FieldDataFS).
// A volatile one (tmpfs, ramfs: a reboot empties it, fsync or not) is UNSAFE, naming the
// master; a record without the field (an earlier runtime) is SAFE with a warning; the
// harness's records, with the real filesystem of each data dir, are neither (the control).
func TestDataDirStorage(t *testing.T) {
	c := startKit(t, redistest.Options{Masters: 3})
	ctx := context.Background()
	const warning = "does not say what storage its data dir is on"
	rep := run(t, target(c))
	if !rep.Safe || strings.Contains(strings.Join(rep.Warnings, "\n"), warning) {
		t.Fatalf("the harness's records (data_fs %q): safe %v, problems %q, warnings %q", rep.Masters[0].DataFS, rep.Safe, rep.Problems, rep.Warnings)
	}
	if rep.Masters[0].DataFS == "" || hold.Volatile(rep.Masters[0].DataFS) {
		t.Fatalf("the harness's data dir is on %q: the control needs a disk", rep.Masters[0].DataFS)
	}
	admin := c.Masters[1].Admin()
	for _, fs := range hold.VolatileFS {
		if err := admin.HSet(ctx, hold.DeploymentKey, hold.FieldDataFS, fs).Err(); err != nil {
			t.Fatal(err)
		}
		rep := run(t, target(c))
		all := strings.Join(rep.Problems, "\n")
		if rep.Safe || !strings.Contains(all, "keeps its data dir on "+fs) || !strings.Contains(all, c.Masters[1].Addr) {
			t.Errorf("data_fs %s: safe %v, problems %q; want one naming %s", fs, rep.Safe, all, c.Masters[1].Addr)
		}
	}
	// Present but empty: the runtime could not tell. Not vouched for.
	if err := admin.HSet(ctx, hold.DeploymentKey, hold.FieldDataFS, "").Err(); err != nil {
		t.Fatal(err)
	}
	rep = run(t, target(c))
	if rep.Safe || !strings.Contains(strings.Join(rep.Masters[1].Unchecked, "\n"), "what storage the data dir is on") {
		t.Errorf("an empty %s: safe %v, unchecked %q; want it unchecked", hold.FieldDataFS, rep.Safe, rep.Masters[1].Unchecked)
	}
	if err := admin.HDel(ctx, hold.DeploymentKey, hold.FieldDataFS).Err(); err != nil {
		t.Fatal(err)
	}
	rep = run(t, target(c))
	if !rep.Safe || !strings.Contains(strings.Join(rep.Warnings, "\n"), warning) {
		t.Errorf("a record without %s: safe %v, problems %q, warnings %q; want SAFE with a warning", hold.FieldDataFS, rep.Safe, rep.Problems, rep.Warnings)
	}
}
