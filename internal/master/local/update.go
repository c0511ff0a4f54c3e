package local

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/funclib"
	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// Update changes the master from runs as to in place: a running server gets what can change
// at runtime (the safety settings are set again, which also repairs drift; the lock user;
// the admin password last), then the files are rewritten so that a restart starts from the
// same settings, and the supervisor reloads them. The master keeps its address: to's port
// is from's. A master that does not run gets the files only, with a warning.
func Update(ctx context.Context, from, to Master) (obs Observed, warnings []Warning, err error) {
	to.Spec.Port = from.Spec.Port
	dir, name, addr := to.Spec.DataDir, to.Spec.Name, from.Spec.Addr()
	if (from.Spec.TLS == nil) != (to.Spec.TLS == nil) {
		return obs, nil, fieldError("tls", "tls cannot change in place", fmt.Sprintf("redlock_master %q: switching "+
			"tls on or off changes which port serves what: replace the master instead.", name))
	}
	trust := updateTLS(from, to)
	st, inspectErr := supervisor.Inspect(dir)
	running := inspectErr == nil && st.Status == supervisor.StatusRunning && st.RedisAlive
	if running {
		if live, err := readLive(ctx, addr, from.Spec.AdminPassword, trust); err == nil && live.ReplicaOf != "" && st.SupervisorAlive {
			// A replica (REPLICAOF behind Terraform's back): its dataset is, or may soon be,
			// another server's, so the lock keys and fence registers it held may be gone.
			// REPLICAOF NO ONE would leave it serving that dataset; its supervisor treats a
			// changed replication id as lost data anyway. So it is restarted through its
			// hold, as after a crash: the files first, then SIGKILL; the restart loads them.
			return restartReplica(ctx, from, to, st, live)
		}
	}
	if running {
		if err := applyRuntime(ctx, from, to, trust); err != nil {
			return obs, nil, &Error{Summary: "Cannot change the running master",
				Detail: fmt.Sprintf("redlock_master %q at %s: %v.", name, addr, err)}
		}
	} else {
		warnings = append(warnings, Warning{"Master not running: changes apply at its restart",
			fmt.Sprintf("redlock_master %q is %q; the new settings were written to its config files and take effect when it starts.",
				name, status(st.State, inspectErr))})
	}
	if err := writeFiles(to); err != nil {
		return obs, warnings, err
	}
	if running && to.Spec.TLS != nil && *to.Spec.TLS != *from.Spec.TLS {
		if err := reloadTLS(ctx, addr, from.Spec.AdminPassword, trust, to.Spec.TLSFiles(dir)); err != nil {
			return obs, warnings, &Error{Summary: "Cannot load the new TLS certificate",
				Detail: fmt.Sprintf("redlock_master %q at %s: %v. The new files are written; the master loads them at its next restart.", name, addr, err)}
		}
	}
	if running && to.Spec.AdminPassword != from.Spec.AdminPassword {
		// Last: had anything before failed, the server would still have the password the
		// caller's record holds, and the next update could reach it.
		if err := setAdminPassword(ctx, addr, from.Spec.AdminPassword, to.Spec.AdminPassword, trust); err != nil {
			rollback := to
			rollback.Spec.AdminPassword = from.Spec.AdminPassword
			return obs, warnings, errors.Join(writeFiles(rollback), &Error{Summary: "Cannot change the admin password",
				Detail: fmt.Sprintf("redlock_master %q at %s: %v. The master keeps the old password.", name, addr, err)})
		}
	}
	if inspectErr == nil {
		w, err := reloadSupervisor(ctx, name, dir, st)
		if warnings = append(warnings, w...); err != nil {
			return obs, warnings, err
		}
	}
	obs = Observed{Status: status(st.State, inspectErr), Processes: Processes{Supervisor: st.SupervisorPID}}
	if running {
		live, err := readLive(ctx, addr, to.Spec.AdminPassword, to.Spec.ClientTLS())
		if err != nil {
			return obs, warnings, &Error{Summary: "Master does not answer after the change", Detail: err.Error()}
		}
		obs.Status, obs.Processes.Redis, obs.Live = StatusRunning, live.PID, &live
	}
	return obs, warnings, nil
}

// status is the Status of a supervisor state read with err.
func status(st supervisor.State, err error) string {
	if err != nil {
		return StatusUnknown
	}
	return st.Status
}

// applyRuntime sends the commands that change a running master in place, as from's admin
// (the admin password itself changes last: setAdminPassword). Every safety setting is set,
// changed or not: that is also how drift is repaired.
func applyRuntime(ctx context.Context, from, to Master, trust *tls.Config) error {
	c := adminClient(from.Spec.Addr(), from.Spec.AdminPassword, trust)
	defer c.Close()
	for _, kv := range [][2]string{
		{"appendfsync", to.Spec.AppendFsync},
		{"no-appendfsync-on-rewrite", redisconf.NoAppendfsyncOnRewrite},
	} {
		if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			return fmt.Errorf("%s: CONFIG SET %s %s: %w", strings.ReplaceAll(kv[0], "-", "_"), kv[0], kv[1], err)
		}
	}
	if err := restoreAppendOnly(ctx, c); err != nil {
		return fmt.Errorf("appendonly: %w", err)
	}
	for _, kv := range [][2]string{
		{"maxmemory", to.Spec.MaxMemory},
		{"maxmemory-policy", redisconf.MaxmemoryPolicy},
		{"busy-reply-threshold", strconv.Itoa(redisconf.BusyReplyThreshold)},
		{"latency-monitor-threshold", strconv.Itoa(redisconf.LatencyMonitorThreshold)},
	} {
		if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			return fmt.Errorf("%s: CONFIG SET %s %s: %w", strings.ReplaceAll(kv[0], "-", "_"), kv[0], kv[1], err)
		}
	}
	if err := c.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("replica_of: REPLICAOF NO ONE: %w", err)
	}
	// The kit's function library of this provider version (the supervisor loads it at
	// every start too): lock users may FCALL it and run no other Lua.
	if err := funclib.Load(ctx, c); err != nil {
		return fmt.Errorf("function library: %w", err)
	}
	if err := updateLockUsers(ctx, c, from.Spec.Users(), to.Spec.Users()); err != nil {
		return err
	}
	if err := updateMonitorUser(ctx, c, from.Spec, to.Spec); err != nil {
		return err
	}
	if to.RepairManaged != nil {
		return repairManaged(ctx, c, to.Spec, from.Spec.AdminPassword, to.RepairManaged)
	}
	return nil
}

// updateMonitorUser defines the monitoring user from scratch when it is new or changed, and
// removes it when it is gone or renamed.
func updateMonitorUser(ctx context.Context, c *redis.Client, from, to master.Spec) error {
	if from.MonitorUser == to.MonitorUser && from.MonitorPassword == to.MonitorPassword {
		return nil
	}
	if from.MonitorPassword != "" && from.MonitorUser != to.MonitorUser {
		if err := c.Do(ctx, "ACL", "DELUSER", from.MonitorUser).Err(); err != nil {
			return fmt.Errorf("monitor_user: ACL DELUSER %s: %w", from.MonitorUser, err)
		}
	}
	if to.MonitorPassword == "" {
		return nil
	}
	if err := c.ACLSetUser(ctx, to.MonitorUser, redisconf.MonitorUserRules(to.MonitorPassword)...).Err(); err != nil {
		return fmt.Errorf("monitor_password: ACL SETUSER %s: %w", to.MonitorUser, err)
	}
	return nil
}

// updateLockUsers redefines the lock users that changed (ACL SETUSER from scratch) and
// removes those that are gone (ACL DELUSER, which also disconnects their clients). Users
// that did not change are left alone: re-running ACL SETUSER for nothing would only
// disturb connected lock clients.
func updateLockUsers(ctx context.Context, c *redis.Client, from, to []master.LockUser) error {
	old := map[string]master.LockUser{}
	for _, u := range from {
		old[u.Name] = u
	}
	for _, u := range to {
		if prev, ok := old[u.Name]; ok && prev == u {
			delete(old, u.Name)
			continue
		}
		delete(old, u.Name)
		rules := u.ACLRules()
		if err := c.ACLSetUser(ctx, u.Name, rules...).Err(); err != nil {
			return fmt.Errorf("%s: ACL SETUSER %s: %w", userField(to), u.Name, err)
		}
	}
	for name := range old {
		if err := c.Do(ctx, "ACL", "DELUSER", name).Err(); err != nil {
			return fmt.Errorf("%s: ACL DELUSER %s: %w", userField(from), name, err)
		}
	}
	return nil
}

// userField names the attribute that defines users, for errors.
func userField(users []master.LockUser) string {
	if len(users) == 1 && users[0].KeyPrefix == "" {
		return "lock_user"
	}
	return "lock_users"
}

// reloadWait bounds how long an update waits for the supervisor to confirm a reload.
const reloadWait = 10 * time.Second

// waitReloaded waits until supervisor pid has written its state after sent (it does so on
// every reload).
func waitReloaded(ctx context.Context, dir string, pid int, sent time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, reloadWait)
	defer cancel()
	for {
		st, err := supervisor.ReadState(dir)
		if err == nil && st.SupervisorPID == pid && st.UpdatedAt.After(sent) {
			return nil
		}
		if !ProcessAlive(pid) {
			return errors.New("it exited")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no state written since the SIGHUP: %w", ctx.Err())
		case <-time.After(pollInterval / 10):
		}
	}
}

// setAdminPassword changes requirepass from password to next.
func setAdminPassword(ctx context.Context, addr, password, next string, trust *tls.Config) error {
	c := adminClient(addr, password, trust)
	defer c.Close()
	if err := c.ConfigSet(ctx, "requirepass", next).Err(); err != nil {
		return fmt.Errorf("admin_password: CONFIG SET requirepass: %w", err)
	}
	return nil
}

// aofRewriteWait bounds how long an update waits for the AOF rewrite that turning the AOF
// back on starts (it writes the whole dataset).
const aofRewriteWait = 5 * time.Minute

// restoreAppendOnly turns the AOF back on when someone turned it off, and waits until the
// rewrite that starts it has finished: until then what the master acknowledged while the
// AOF was off is on no disk.
func restoreAppendOnly(ctx context.Context, c *redis.Client) error {
	const want = "yes"
	v, err := c.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		return fmt.Errorf("CONFIG GET appendonly: %w", err)
	}
	if v["appendonly"] == want {
		return nil
	}
	if err := c.ConfigSet(ctx, "appendonly", want).Err(); err != nil {
		return fmt.Errorf("CONFIG SET appendonly %s: %w", want, err)
	}
	ctx, cancel := context.WithTimeout(ctx, aofRewriteWait)
	defer cancel()
	for {
		info, err := c.Info(ctx, "persistence").Result()
		if err != nil {
			return fmt.Errorf("INFO persistence: %w", err)
		}
		f := ParseInfo(info)
		if f["aof_enabled"] == "1" && f["aof_rewrite_in_progress"] == "0" && f["aof_rewrite_scheduled"] == "0" {
			if f["aof_last_bgrewrite_status"] != "ok" {
				return fmt.Errorf("the AOF rewrite that turns the AOF on failed (aof_last_bgrewrite_status %s): see redis.log",
					f["aof_last_bgrewrite_status"])
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the AOF rewrite that turns the AOF on has not finished: %w", ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// updateTLS is how an update reaches a TLS master: trusting the old CA and the new one,
// since the master presents the old certificate until it loads the new one. nil without TLS.
func updateTLS(from, to Master) *tls.Config {
	if from.Spec.TLS == nil {
		return nil
	}
	cas := []string{from.Spec.TLS.CACertPEM}
	if to.Spec.TLS != nil {
		cas = append(cas, to.Spec.TLS.CACertPEM)
	}
	return master.ClientTLS(cas...)
}

// reloadTLS makes a running master load its TLS files again (they were just rewritten under
// the same names): setting any tls-* file makes Redis and Valkey reload the whole TLS
// configuration, and a bad file is refused with the old one kept.
func reloadTLS(ctx context.Context, addr, password string, trust *tls.Config, files *redisconf.TLSFiles) error {
	c := adminClient(addr, password, trust)
	defer c.Close()
	if err := c.ConfigSet(ctx, "tls-cert-file", files.CertFile).Err(); err != nil {
		return fmt.Errorf("CONFIG SET tls-cert-file: %w", err)
	}
	return nil
}

// restartReplica is Update for a master found replicating another server: the files are
// written, the server is killed (SIGKILL through its pidfd, as `crash` does), and its
// supervisor holds it down for restart_delay from the exit, then starts it on the new files
// (no REPLICAOF there). Update returns with the master held, and says so.
func restartReplica(ctx context.Context, from, to Master, st supervisor.Live, live Live) (Observed, []Warning, error) {
	dir, name := to.Spec.DataDir, to.Spec.Name
	if err := writeFiles(to); err != nil {
		return Observed{}, nil, err
	}
	warnings, err := reloadSupervisor(ctx, name, dir, st)
	if err != nil {
		return Observed{}, warnings, err
	}
	if _, err := supervisor.Crash(dir); err != nil {
		// Its supervisor may have killed it first (it saw the replication id change).
		if now, ierr := supervisor.Inspect(dir); ierr != nil || now.RedisAlive {
			return Observed{}, nil, &Error{Summary: "Cannot restart the replica through its hold",
				Detail: fmt.Sprintf("redlock_master %q replicates %s: %v. Stop it (kill its redis-server: its supervisor holds it down, then restarts it without REPLICAOF).", name, live.ReplicaOf, err)}
		}
	}
	warnings = append(warnings, Warning{"Replica restarted through its hold",
		fmt.Sprintf("redlock_master %q was a replica of %s: its dataset may be another server's, so REPLICAOF NO ONE would have left it serving without the locks it granted. It was killed and is held down for its restart delay (%s) from then, as after a crash, and then starts without REPLICAOF.",
			name, live.ReplicaOf, to.Spec.WithDefaults().RestartDelay)})
	// The status the supervisor records once it has seen the exit (holding).
	now, err := supervisor.Inspect(dir)
	for err == nil && now.Status == supervisor.StatusRunning && now.RedisPID == st.RedisPID && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		now, err = supervisor.Inspect(dir)
	}
	return Observed{Status: status(now.State, err), Processes: Processes{Supervisor: now.SupervisorPID}}, warnings, nil
}

// reloadSupervisor sends SIGHUP to the master's supervisor, which reloads supervisor.json
// (restart delay, hooks, password) and rewrites its state, and waits for that: a longer delay
// must be on disk before Update returns, or a crash of supervisor and master right after
// would be held too briefly. A signal that cannot be sent is an error; a reload not seen in
// time, a warning.
func reloadSupervisor(ctx context.Context, name, dir string, st supervisor.Live) ([]Warning, error) {
	if !st.SupervisorAlive {
		return nil, nil
	}
	sent := time.Now()
	if err := syscall.Kill(st.SupervisorPID, syscall.SIGHUP); err != nil {
		return nil, &Error{Summary: "Cannot signal the supervisor", Detail: fmt.Sprintf("SIGHUP to pid %d: %v.", st.SupervisorPID, err)}
	}
	if err := waitReloaded(ctx, dir, st.SupervisorPID, sent); err != nil {
		return []Warning{{"Supervisor reload not confirmed", fmt.Sprintf("redlock_master %q: supervisor "+
			"pid %d: %v. See %s.", name, st.SupervisorPID, err, filepath.Join(dir, supervisor.LogFileName))}}, nil
	}
	return nil, nil
}
