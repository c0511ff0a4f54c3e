package provider

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/provider/internal/validate"
	"github.com/redlock-kit/redlock-kit/provider/supervisor"
)

// pollInterval is how often create and destroy look at the master while they wait.
const pollInterval = 100 * time.Millisecond

// masterSettings is what the provider remembers in <data_dir>/redlock-master.json (0600)
// beyond supervisor.json, so that `terraform import` can rebuild the resource exactly.
type masterSettings struct {
	Name                   string `json:"name"`
	Bind                   string `json:"bind"`
	AllowNonLoopbackBind   bool   `json:"allow_non_loopback_bind"`
	Port                   int64  `json:"port"` // as in state: 0 when the configuration asked for any free port
	DataDir                string `json:"data_dir"`
	ServerBinary           string `json:"server_binary"` // as configured (not resolved), so import plans no change
	MaxLockTTL             string `json:"max_lock_ttl"`
	ClockDriftMargin       string `json:"clock_drift_margin"`
	RestartDelay           string `json:"restart_delay"`
	MaxMemory              string `json:"maxmemory"`
	AppendFsync            string `json:"appendfsync"`
	AllowUnsafeAppendFsync bool   `json:"allow_unsafe_appendfsync"`
	LockUser               string `json:"lock_user"`
	LockPassword           string `json:"lock_password"`
	KeepDataOnDestroy      bool   `json:"keep_data_on_destroy"`
}

func settingsFromModel(m *masterModel) masterSettings {
	return masterSettings{
		Name: m.Name.ValueString(), Bind: m.Bind.ValueString(), AllowNonLoopbackBind: m.AllowNonLoopbackBind.ValueBool(),
		Port: m.Port.ValueInt64(), DataDir: m.DataDir.ValueString(), ServerBinary: m.ServerBinary.ValueString(),
		MaxLockTTL: m.MaxLockTTL.ValueString(), ClockDriftMargin: m.ClockDriftMargin.ValueString(),
		RestartDelay: m.RestartDelay.ValueString(), MaxMemory: m.MaxMemory.ValueString(),
		AppendFsync: m.AppendFsync.ValueString(), AllowUnsafeAppendFsync: m.AllowUnsafeAppendFsync.ValueBool(),
		LockUser: m.LockUser.ValueString(), LockPassword: m.LockPassword.ValueString(),
		KeepDataOnDestroy: m.KeepDataOnDestroy.ValueBool(),
	}
}

// masterFiles writes everything the master and its supervisor start from: redis.conf
// (rendered by internal/redisconf, the one safe config), supervisor.json and the provider's
// settings. listenPort is the real port (the model's port may be 0).
func masterFiles(ctx context.Context, m *masterModel, listenPort int) diag.Diagnostics {
	var diags diag.Diagnostics
	dir := m.DataDir.ValueString()
	conf, err := redisconf.Config{
		Bind: m.Bind.ValueString(), Port: listenPort, DataDir: dir,
		AdminPassword: m.AdminPassword.ValueString(), LockUser: m.LockUser.ValueString(),
		LockPassword: m.LockPassword.ValueString(), MaxMemory: m.MaxMemory.ValueString(),
		AppendFsync: m.AppendFsync.ValueString(), LogFile: filepath.Join(dir, "redis.log"),
	}.Render()
	if err != nil {
		diags.AddError("Cannot render redis.conf", err.Error())
		return diags
	}
	if err := writeFileAtomic(filepath.Join(dir, redisConfFileName), []byte(conf)); err != nil {
		diags.AddAttributeError(path.Root("data_dir"), "Cannot write redis.conf", err.Error())
		return diags
	}
	hooks, d := hooksFromModel(ctx, m.Hooks)
	diags.Append(d...)
	bin, err := exec.LookPath(m.ServerBinary.ValueString())
	if err != nil {
		diags.AddAttributeError(path.Root("server_binary"), "Executable not found",
			fmt.Sprintf("server_binary: %s.", validate.LookPath(m.ServerBinary.ValueString())))
		return diags
	}
	if bin, err = filepath.Abs(bin); err != nil {
		diags.AddAttributeError(path.Root("server_binary"), "Executable not found", err.Error())
		return diags
	}
	delay, _ := validate.ParseDuration(m.RestartDelay.ValueString())
	err = supervisor.WriteConfig(dir, supervisor.Config{
		Name: m.Name.ValueString(), ServerBinary: bin, ConfigFile: filepath.Join(dir, redisConfFileName), DataDir: dir,
		Addr: hostPort(m.Bind.ValueString(), int64(listenPort)), AdminPassword: m.AdminPassword.ValueString(),
		RestartDelay: delay, Hooks: hooks,
	})
	if err != nil {
		diags.AddError("Cannot write supervisor.json", err.Error())
		return diags
	}
	data, err := json.MarshalIndent(settingsFromModel(m), "", "  ")
	if err == nil {
		err = writeFileAtomic(filepath.Join(dir, settingsFileName), append(data, '\n'))
	}
	if err != nil {
		diags.AddError("Cannot write "+settingsFileName, err.Error())
	}
	return diags
}

// startMaster creates the data dir, writes the files, spawns the supervisor and waits until
// the master answers with AOF on. On failure nothing it started is left running.
func startMaster(ctx context.Context, m *masterModel) (diags diag.Diagnostics) {
	dir := m.DataDir.ValueString()
	bind := m.Bind.ValueString()
	if err := validate.LookPath(m.ServerBinary.ValueString()); err != nil {
		diags.AddAttributeError(path.Root("server_binary"), "Executable not found", fmt.Sprintf("server_binary: %s.", err))
		return diags
	}
	if err := validate.DirCreatable(dir); err != nil {
		diags.AddAttributeError(path.Root("data_dir"), "data_dir is not usable", fmt.Sprintf("data_dir: %s.", err))
		return diags
	}
	// A data dir can hold a previous master of this resource (removed from state because its
	// supervisor died). A live supervisor means another master owns the dir; a redis-server
	// left without its supervisor is stopped cleanly (its AOF is then complete: no hold).
	if st, err := supervisor.Inspect(dir); err == nil {
		if st.SupervisorAlive {
			diags.AddAttributeError(path.Root("data_dir"), "data_dir is in use",
				fmt.Sprintf("data_dir %s is run by supervisor pid %d: another master uses it. Choose another data_dir, "+
					"or bring that master under Terraform with `terraform import <address> %s`.", dir, st.SupervisorPID, dir))
			return diags
		}
		if st.RedisAlive {
			if err := supervisor.Stop(ctx, dir); err != nil {
				diags.AddAttributeError(path.Root("data_dir"), "Cannot stop the unsupervised master in data_dir",
					fmt.Sprintf("redis-server pid %d still runs from %s without its supervisor, and stopping it failed: %v. "+
						"Stop it (redis-cli -a <admin password> SHUTDOWN) and apply again.", st.RedisPID, dir, err))
				return diags
			}
		}
	}

	listenPort := int(m.Port.ValueInt64())
	if listenPort != 0 {
		if err := portFree(bind, listenPort); err != nil {
			diags.AddAttributeError(path.Root("port"), "Port already in use",
				fmt.Sprintf("port %d on %s is already in use (%v): choose another port, or leave port out to pick a free one.", listenPort, bind, err))
			return diags
		}
	} else {
		// Recreating a master in its old data dir: keep its old port when it is free, so
		// that clients' endpoint lists stay valid. Otherwise any free port.
		if prev, err := supervisor.LoadConfig(dir); err == nil {
			if host, p := splitAddr(prev.Addr); host == bind && p > 0 && portFree(bind, p) == nil {
				listenPort = p
			}
		}
		if listenPort == 0 {
			p, err := freePort(bind)
			if err != nil {
				diags.AddAttributeError(path.Root("bind"), "Cannot pick a free port", fmt.Sprintf("bind %s: %v.", bind, err))
				return diags
			}
			listenPort = p
		}
		if m.Port.IsNull() || m.Port.IsUnknown() {
			m.Port = types.Int64Value(int64(listenPort))
		}
	}
	m.Address = types.StringValue(hostPort(bind, int64(listenPort)))

	// From here on the create touches the disk: a failed create removes the data dir it
	// created (nothing runs then: see the spawn failure path). If a redis-server ran there
	// (it may have granted locks before the create gave up), its data goes like in a destroy
	// and a recorded hold stays, so that a master created there later waits for those locks.
	created := !exists(dir)
	defer func() {
		if !diags.HasError() || !created {
			return
		}
		// A server that left no data never accepted a client (it opens its AOF first).
		st, err := supervisor.ReadState(dir)
		if err != nil || st.RedisPID == 0 && st.LastAlive.IsZero() || !supervisor.HasData(dir) {
			_ = os.RemoveAll(dir)
			return
		}
		delay, _ := validate.ParseDuration(m.RestartDelay.ValueString())
		now := time.Now()
		until := now.Add(destroyLockWait(now, delay, st.HoldFloor, 0, 0, false))
		if err := forgetData(dir, now, until); err != nil {
			diags.AddWarning("data_dir kept", fmt.Sprintf("A redis-server ran in %s before the create failed, and its data "+
				"could not be removed with a hold recorded (%v): the directory is left as it is.", dir, err))
			return
		}
		diags.AddWarning("data_dir kept with a restart hold",
			fmt.Sprintf("A redis-server ran in %s before the create failed and may have granted locks, valid until %s at "+
				"the latest. Its data is removed, but the directory keeps a %s that makes a master created there wait "+
				"until then; do not start another master at %s before that time.", dir, until.Format(time.RFC3339),
				supervisor.StateFileName, m.Address.ValueString()))
	}()
	if err := prepareDataDir(dir); err != nil {
		diags.AddAttributeError(path.Root("data_dir"), "data_dir is not usable", fmt.Sprintf("data_dir: %s.", err))
		return diags
	}
	diags.Append(masterFiles(ctx, m, listenPort)...)
	if diags.HasError() {
		return diags
	}
	delay, _ := validate.ParseDuration(m.RestartDelay.ValueString())
	if until, hold := supervisor.HoldUntil(dir, delay); hold {
		if deadline, ok := ctx.Deadline(); ok && until.After(deadline) {
			diags.AddAttributeError(path.Root("timeouts"), "Create timeout shorter than the restart hold",
				fmt.Sprintf("data_dir %s holds data from a master that did not stop cleanly, so the new master must stay "+
					"down until %s (restart_delay %s after it was last seen alive), after the create timeout. "+
					"Set timeouts { create = \"%s\" } or more.", dir, until.Format(time.RFC3339), delay,
					(time.Until(until)+time.Minute).Round(time.Minute)))
			return diags
		}
		diags.AddWarning("Master held back: unclean stop found",
			fmt.Sprintf("data_dir %s holds data from a master that did not stop cleanly (crash, reboot, or its supervisor "+
				"was killed). Locks it granted may still be valid on the other masters, so it stays down until %s "+
				"(restart_delay %s after it was last seen alive); create waited for that.", dir, until.Format(time.RFC3339Nano), delay))
	}

	exe, err := os.Executable()
	if err != nil {
		diags.AddError("Cannot find the provider executable", fmt.Sprintf("The supervisor is the provider binary itself: %v.", err))
		return diags
	}
	supPID, err := supervisor.Spawn(exe, []string{"supervise", dir}, dir)
	if err != nil {
		diags.AddError("Cannot start the supervisor", err.Error())
		return diags
	}
	live, err := waitRunning(ctx, dir, m.Address.ValueString(), m.AdminPassword.ValueString(), supPID)
	if err != nil {
		// Stop the supervisor spawned here, by its pid: the data dir's files may still name
		// a dead predecessor.
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stopErr := supervisor.StopSupervisor(stopCtx, dir, supPID)
		killLeftovers(dir, supPID)
		msg := fmt.Sprintf("%v.\n\n%s", err, logTails(dir))
		if stopErr != nil {
			msg += fmt.Sprintf("\n\nStopping it again also failed: %v", stopErr)
		}
		diags.AddError("Master did not start", msg)
		return diags
	}
	m.SupervisorPID = types.Int64Value(int64(supPID))
	setLive(m, live)
	return diags
}

// previousSecrets returns the passwords a previous master in dir used, if any.
func previousSecrets(dir, lockUser string) (admin, lock string) {
	if c, err := supervisor.LoadConfig(dir); err == nil {
		admin = c.AdminPassword
	}
	if raw, err := os.ReadFile(filepath.Join(dir, settingsFileName)); err == nil {
		var s masterSettings
		if json.Unmarshal(raw, &s) == nil && s.LockUser == lockUser {
			lock = s.LockPassword
		}
	}
	return admin, lock
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// prepareDataDir creates dir (0700) and proves it is writable.
func prepareDataDir(dir string) error {
	if err := validate.DirCreatable(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create %s: %v: choose a data_dir under a writable directory", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("cannot restrict %s to mode 0700: %v", dir, err)
	}
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		return fmt.Errorf("%s is not writable: %v: fix its permissions or choose another data_dir", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// waitRunning waits until the supervisor supPID reports the master running and the master
// answers PING with the admin password with AOF enabled. A hold (unclean stop) is waited out
// here. Only a state written by supPID counts: until it writes one, the data dir may still
// hold the state of a dead predecessor (say "holding" after a crash), which says nothing
// about this start.
func waitRunning(ctx context.Context, dir, addr, password string, supPID int) (liveInfo, error) {
	lastErr := errors.New("the supervisor has not reported yet")
	for {
		if !processAlive(supPID) {
			return liveInfo{}, fmt.Errorf("the supervisor (pid %d) exited", supPID)
		}
		st, err := supervisor.ReadState(dir)
		mine := err == nil && st.SupervisorPID == supPID
		switch {
		case mine && st.Status == supervisor.StatusRunning:
			live, err := readLive(ctx, addr, password)
			switch {
			case err != nil:
				lastErr = err
			case !live.AOFEnabled:
				lastErr = errors.New("the master answers but AOF is not enabled yet")
			default:
				live.SupervisorStatus = st.Status
				return live, nil
			}
		case mine && st.Status == supervisor.StatusHolding && st.LastError != "":
			// The server this supervisor started died: it would only crash again after the delay.
			return liveInfo{}, fmt.Errorf("redis-server exited right after it started (%s)", st.LastError)
		case mine:
			lastErr = fmt.Errorf("supervisor status %q", st.Status)
		}
		select {
		case <-ctx.Done():
			return liveInfo{}, fmt.Errorf("the master at %s was not ready before the create timeout (last: %v); "+
				"raise timeouts.create if the machine is slow", addr, lastErr)
		case <-time.After(pollInterval):
		}
	}
}

// refreshMaster updates m from the data dir and the live server. gone means the master no
// longer exists (no data dir, no supervisor): Terraform should plan to create it again.
func refreshMaster(ctx context.Context, m *masterModel) (gone bool, diags diag.Diagnostics) {
	dir := m.DataDir.ValueString()
	name := m.Name.ValueString()
	if !exists(dir) {
		if pid := int(m.SupervisorPID.ValueInt64()); processAlive(pid) && cmdlineHas(pid, dir) {
			// Still running from a deleted dir: the next plan must replace it (Delete stops
			// it by pid), not start a second master beside it. An empty data_dir in state
			// makes the plan show that replacement.
			diags.AddWarning("data_dir removed while the master runs",
				fmt.Sprintf("redlock_master %q: data_dir %s was removed, but its supervisor (pid %d) still runs. "+
					"The next apply stops it and creates the master again.", name, dir, pid))
			m.DataDir = types.StringValue("")
			return false, diags
		}
		diags.AddWarning("Master is gone", fmt.Sprintf("redlock_master %q: data_dir %s no longer exists; the next apply creates the master again.", name, dir))
		return true, diags
	}
	st, err := supervisor.Inspect(dir)
	if err == nil && !st.SupervisorAlive && !st.RedisAlive {
		if until, ok := destroyPending(dir); ok {
			// Forgetting the resource now would let the next apply create its replacement
			// (say at the same address in another data_dir) while those locks are valid.
			diags.AddWarning("Destroy not finished",
				fmt.Sprintf("redlock_master %q: a destroy ended before the locks it granted had expired; they may be valid "+
					"until %s. The next apply or destroy waits until then (set timeouts { delete } long enough) and then "+
					"removes %s.", name, until.Format(time.RFC3339), dir))
			m.Status = types.StringValue(statusDestroying)
			m.PID, m.SupervisorPID = types.Int64Value(0), types.Int64Value(0)
			return false, diags
		}
	}
	if err != nil || !st.SupervisorAlive && !st.RedisAlive {
		diags.AddWarning("Master is not running",
			fmt.Sprintf("redlock_master %q in %s: neither its supervisor nor redis-server runs; the next apply starts it "+
				"again (after restart_delay if it did not stop cleanly).", name, dir))
		return true, diags
	}
	if !st.SupervisorAlive {
		// redis-server serves on without supervision (own process group: killing the
		// supervisor does not reach it). Forgetting it would leave it granting locks after a
		// destroy; keep it, with the pid /proc proved, and let the plan replace it.
		diags.AddWarning("Master is not supervised",
			fmt.Sprintf("redlock_master %q: redis-server pid %d still serves from %s, but its supervisor (pid %d) is gone, so a "+
				"crash would not be held back. The next apply replaces the master: it stops that redis-server cleanly "+
				"(its AOF stays complete) and starts it again under a new supervisor.", name, st.RedisPID, dir, st.SupervisorPID))
		if live, err := readLive(ctx, m.Address.ValueString(), m.AdminPassword.ValueString()); err == nil {
			setLive(m, live)
		}
		m.Status = types.StringValue(statusUnsupervised)
		m.PID = types.Int64Value(int64(st.RedisPID))
		m.SupervisorPID = types.Int64Value(0)
		return false, diags
	}
	m.SupervisorPID = types.Int64Value(int64(st.SupervisorPID))
	m.Status = types.StringValue(st.Status)
	m.PID = types.Int64Value(0)
	if st.RedisAlive {
		m.PID = types.Int64Value(int64(st.RedisPID))
	}
	if delay, err := validate.ParseDuration(m.RestartDelay.ValueString()); err == nil {
		m.RestartDelayMS = types.Int64Value(delay.Milliseconds())
	}
	if st.Status != supervisor.StatusRunning {
		if st.Status == supervisor.StatusHolding {
			m.Status = types.StringValue(statusHolding)
		}
		return false, diags
	}
	live, err := readLive(ctx, m.Address.ValueString(), m.AdminPassword.ValueString())
	if err != nil {
		diags.AddWarning("Cannot query the master",
			fmt.Sprintf("redlock_master %q at %s: %v. Its settings could not be checked for drift.", name, m.Address.ValueString(), err))
		return false, diags
	}
	setLive(m, live)
	return false, diags
}

// setLive copies what the server reports into the model. Safety settings are copied as they
// are, so that a change made behind Terraform's back shows as a diff in the next plan.
func setLive(m *masterModel, live liveInfo) {
	m.RunID = types.StringValue(live.RunID)
	m.PID = types.Int64Value(int64(live.PID))
	m.Status = types.StringValue(statusRunning)
	m.AppendFsync = types.StringValue(live.AppendFsync)
	m.AppendOnly = types.StringValue(live.AppendOnly)
	m.NoAppendfsyncOnRewrite = types.StringValue(live.NoAppendfsyncOnRewrite)
	m.MaxMemoryPolicy = types.StringValue(live.MaxMemoryPolicy)
	m.ReplicaOf = types.StringValue(live.ReplicaOf)
	// Keep maxmemory as written ("64mb") while the live byte count matches it.
	if want, err := validate.ParseMemory(m.MaxMemory.ValueString()); err != nil || want != live.MaxMemory {
		m.MaxMemory = types.StringValue(strconv.FormatInt(live.MaxMemory, 10))
	}
}

// updateMaster applies in place what can change at runtime, then rewrites the files so a
// restart starts from the same settings.
func updateMaster(ctx context.Context, state, plan *masterModel) (diags diag.Diagnostics) {
	dir := plan.DataDir.ValueString()
	plan.Address = state.Address
	listenPort := portOf(state.Address.ValueString())
	st, err := supervisor.Inspect(dir)
	running := err == nil && st.Status == supervisor.StatusRunning && st.RedisAlive
	if running {
		if err := applyRuntime(ctx, state, plan); err != nil {
			diags.AddError("Cannot change the running master", fmt.Sprintf("redlock_master %q at %s: %v.",
				plan.Name.ValueString(), state.Address.ValueString(), err))
			return diags
		}
	} else {
		diags.AddWarning("Master not running: changes apply at its restart",
			fmt.Sprintf("redlock_master %q is %q; the new settings were written to its config files and take effect when it starts.",
				plan.Name.ValueString(), stOr(st.State, err)))
	}
	diags.Append(masterFiles(ctx, plan, listenPort)...)
	if diags.HasError() {
		return diags
	}
	if running && !plan.AdminPassword.Equal(state.AdminPassword) {
		// Last: had anything before failed, the server would still have the password that
		// Terraform's state holds, and the next apply could reach it.
		if err := setAdminPassword(ctx, state, plan); err != nil {
			rollback := *plan
			rollback.AdminPassword = state.AdminPassword
			diags.Append(masterFiles(ctx, &rollback, listenPort)...)
			diags.AddError("Cannot change the admin password", fmt.Sprintf("redlock_master %q at %s: %v. The master keeps "+
				"the old password.", plan.Name.ValueString(), state.Address.ValueString(), err))
			return diags
		}
	}
	if err == nil && st.SupervisorAlive {
		// SIGHUP: the supervisor reloads supervisor.json (restart delay, hooks, password) and
		// rewrites its state. Wait for that: a longer delay must be on disk before apply
		// returns, or a crash of supervisor and master right after would be held too briefly.
		sent := time.Now()
		if err := syscall.Kill(st.SupervisorPID, syscall.SIGHUP); err != nil {
			diags.AddError("Cannot signal the supervisor", fmt.Sprintf("SIGHUP to pid %d: %v.", st.SupervisorPID, err))
			return diags
		}
		if err := waitReloaded(ctx, dir, st.SupervisorPID, sent); err != nil {
			diags.AddWarning("Supervisor reload not confirmed", fmt.Sprintf("redlock_master %q: supervisor pid %d: %v. "+
				"See %s.", plan.Name.ValueString(), st.SupervisorPID, err, filepath.Join(dir, supervisor.LogFileName)))
		}
	}
	plan.SupervisorPID = types.Int64Value(int64(st.SupervisorPID))
	plan.Status = types.StringValue(stOr(st.State, err))
	plan.PID = types.Int64Value(0)
	plan.RunID = state.RunID
	if running {
		live, err := readLive(ctx, plan.Address.ValueString(), plan.AdminPassword.ValueString())
		if err != nil {
			diags.AddError("Master does not answer after the change", err.Error())
			return diags
		}
		plan.RunID = types.StringValue(live.RunID)
		plan.PID = types.Int64Value(int64(live.PID))
		plan.Status = types.StringValue(statusRunning)
	}
	return diags
}

func stOr(st supervisor.State, err error) string {
	if err != nil {
		return "unknown"
	}
	if st.Status == supervisor.StatusHolding {
		return statusHolding
	}
	return st.Status
}

// applyRuntime sends the commands that change a running master in place, as the admin
// password in state (the admin password itself changes last: setAdminPassword). Every
// safety setting is set, changed or not: that is also how drift is repaired.
func applyRuntime(ctx context.Context, state, plan *masterModel) error {
	c := adminClient(state.Address.ValueString(), state.AdminPassword.ValueString())
	defer c.Close()
	for _, kv := range [][2]string{
		{"appendfsync", plan.AppendFsync.ValueString()},
		{"no-appendfsync-on-rewrite", plan.NoAppendfsyncOnRewrite.ValueString()},
	} {
		if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			return fmt.Errorf("%s: CONFIG SET %s %s: %w", strings.ReplaceAll(kv[0], "-", "_"), kv[0], kv[1], err)
		}
	}
	if err := restoreAppendOnly(ctx, c, plan.AppendOnly.ValueString()); err != nil {
		return fmt.Errorf("appendonly: %w", err)
	}
	for _, kv := range [][2]string{
		{"maxmemory", plan.MaxMemory.ValueString()},
		{"maxmemory-policy", plan.MaxMemoryPolicy.ValueString()},
	} {
		if err := c.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			return fmt.Errorf("%s: CONFIG SET %s %s: %w", strings.ReplaceAll(kv[0], "-", "_"), kv[0], kv[1], err)
		}
	}
	if err := c.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("replica_of: REPLICAOF NO ONE: %w", err)
	}
	user := plan.LockUser.ValueString()
	if user == state.LockUser.ValueString() && plan.LockPassword.Equal(state.LockPassword) {
		return nil // re-running ACL SETUSER for nothing would only disturb connected lock clients
	}
	rules := append([]string{"reset", "on", ">" + plan.LockPassword.ValueString(), "~*", "resetchannels", "&*", "-@all"},
		redisconf.LockUserCommands...)
	if err := c.ACLSetUser(ctx, user, rules...).Err(); err != nil {
		return fmt.Errorf("lock_user: ACL SETUSER %s: %w", user, err)
	}
	if old := state.LockUser.ValueString(); old != "" && old != user {
		if err := c.Do(ctx, "ACL", "DELUSER", old).Err(); err != nil {
			return fmt.Errorf("lock_user: ACL DELUSER %s: %w", old, err)
		}
	}
	return nil
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
		if !processAlive(pid) {
			return errors.New("it exited")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no state written since the SIGHUP: %w", ctx.Err())
		case <-time.After(pollInterval / 10):
		}
	}
}

// setAdminPassword changes requirepass from the state's password to the plan's.
func setAdminPassword(ctx context.Context, state, plan *masterModel) error {
	c := adminClient(state.Address.ValueString(), state.AdminPassword.ValueString())
	defer c.Close()
	if err := c.ConfigSet(ctx, "requirepass", plan.AdminPassword.ValueString()).Err(); err != nil {
		return fmt.Errorf("admin_password: CONFIG SET requirepass: %w", err)
	}
	return nil
}

// aofRewriteWait bounds how long apply waits for the AOF rewrite that turning the AOF back
// on starts (it writes the whole dataset).
const aofRewriteWait = 5 * time.Minute

// restoreAppendOnly turns the AOF back on when someone turned it off, and waits until the
// rewrite that starts it has finished: until then what the master acknowledged while the
// AOF was off is on no disk.
func restoreAppendOnly(ctx context.Context, c *redis.Client, want string) error {
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
		f := parseInfo(info)
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

// destroyMaster stops the master cleanly (AOF fsynced), makes sure no process is left and
// the port is free, and removes the data dir unless it is kept.
func destroyMaster(ctx context.Context, m *masterModel) (diags diag.Diagnostics) {
	dir := m.ID.ValueString() // the data dir; m.DataDir is "" when Read found the dir removed
	addr := m.Address.ValueString()
	name := m.Name.ValueString()
	delay, _ := validate.ParseDuration(m.RestartDelay.ValueString())
	// How long the locks this master granted may still be held elsewhere: measured just
	// before the shutdown, after the lock clients were shut out (so none is granted after the
	// measurement), so the wait below is as short as safety allows. A master that cannot be
	// asked (crashed, holding, paused) gets the whole hold. The supervisor's HoldFloor is
	// read first: locks granted under a larger restart_delay than the current one (lowered
	// by an apply) may outlive the current delay.
	var lockWait time.Duration
	pending := false // an earlier destroy was cut short: its hold is recorded already
	if !m.KeepDataOnDestroy.ValueBool() {
		var until time.Time
		if until, pending = destroyPending(dir); pending {
			// An earlier destroy was cut short: nothing ran since, only its hold is left.
			lockWait = time.Until(until)
		} else {
			var floor time.Time
			if st, err := supervisor.ReadState(dir); err == nil {
				floor = st.HoldFloor
			}
			ttl, err := lastLocks(ctx, addr, m.AdminPassword.ValueString(), m.LockUser.ValueString())
			margin, _ := validate.ParseDuration(m.ClockDriftMargin.ValueString())
			lockWait = destroyLockWait(time.Now(), delay, floor, ttl, margin, err == nil)
		}
	}
	if exists(dir) {
		if err := supervisor.Stop(ctx, dir); err != nil {
			killed := killLeftovers(dir)
			diags.AddWarning("Master did not stop cleanly",
				fmt.Sprintf("Stopping redlock_master %q cleanly failed (%v); killed pids %v. Its AOF may lack the last "+
					"writes: if data_dir is kept, the next start waits out restart_delay.", name, err, killed))
		}
	} else if err := stopWithoutDir(ctx, dir, int(m.SupervisorPID.ValueInt64()), int(m.PID.ValueInt64())); err != nil {
		diags.AddWarning("Master did not stop cleanly", fmt.Sprintf("redlock_master %q: %v.", name, err))
	}
	if err := waitPortFree(ctx, addr); err != nil {
		diags.AddError("Port still in use after stopping the master", fmt.Sprintf("%s: %v.", addr, err))
		return diags
	}
	if m.KeepDataOnDestroy.ValueBool() {
		return diags
	}
	stopped := time.Now()
	validUntil := stopped.Add(lockWait)
	if lockWait > 0 {
		// The master forgets every lock it granted. Until they have expired, keep a state in
		// data_dir that makes a master created there wait (supervisor.RecordHold), so that a
		// wait cut short below (delete timeout, terraform killed) is still honoured.
		if !pending {
			if err := forgetData(dir, stopped, validUntil); err != nil {
				diags.AddAttributeError(path.Root("data_dir"), "Cannot remove the master's data", fmt.Sprintf("%s: %v.", dir, err))
				return diags
			}
		}
		// Wait until they have all expired, so that a master started at the same address right
		// after (a replacement) cannot grant them again.
		select {
		case <-time.After(time.Until(validUntil)):
		case <-ctx.Done():
			// An error, not a warning: the resource stays in state (status "destroying"), so
			// Terraform does not go on to create a replacement, which could serve at the same
			// address from another data_dir while these locks are valid.
			diags.AddError("Destroy cut short: the master's locks have not expired",
				fmt.Sprintf("The delete timeout ended before the locks redlock_master %q granted had expired. The master is "+
					"stopped and its data removed, but those locks may be valid until %s. data_dir %s is kept with only a %s "+
					"that makes a master created there wait until then; do not start any other master at %s before that time. "+
					"Re-run terraform apply or destroy: it waits until %s (the delete timeout must cover the rest) and finishes "+
					"the destroy.", name, validUntil.Format(time.RFC3339), dir, supervisor.StateFileName, addr,
					validUntil.Format(time.RFC3339)))
			return diags
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		diags.AddAttributeError(path.Root("data_dir"), "Cannot remove data_dir", fmt.Sprintf("%s: %v.", dir, err))
	}
	return diags
}

// destroyPending reports whether dir holds only what a destroy cut short left (a recorded
// hold, no supervisor.json) and that hold has not ended, and until when it lasts.
func destroyPending(dir string) (time.Time, bool) {
	if _, err := supervisor.LoadConfig(dir); !errors.Is(err, os.ErrNotExist) {
		return time.Time{}, false
	}
	if _, err := supervisor.ReadState(dir); err != nil {
		return time.Time{}, false
	}
	return supervisor.HoldUntil(dir, 0)
}

// destroyLockWait returns how long a destroyed master's locks may still be valid elsewhere,
// counted from now. The cap is the larger of the current restart_delay and what is left of
// the supervisor's HoldFloor (the delay may have been lowered while locks granted under the
// old one are still valid). A measured largest TTL (measured true) lowers it to ttl+margin,
// and to 0 when the master holds no lock at all; an unmeasured one leaves the cap.
func destroyLockWait(now time.Time, delay time.Duration, floor time.Time, ttl, margin time.Duration, measured bool) time.Duration {
	limit := delay
	if !floor.IsZero() {
		limit = max(limit, floor.Sub(now))
	}
	if !measured {
		return limit
	}
	if ttl <= 0 {
		return 0
	}
	return min(limit, ttl+margin)
}

// forgetData removes the master's data from dir but leaves a supervisor.state that holds a
// master started there until validUntil. The hold is recorded before anything is removed.
func forgetData(dir string, stopped, validUntil time.Time) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	why := fmt.Sprintf("destroyed by terraform at %s; locks it granted may be valid until %s",
		stopped.UTC().Format(time.RFC3339Nano), validUntil.UTC().Format(time.RFC3339Nano))
	if err := supervisor.RecordHold(dir, stopped, validUntil, why); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Name() != supervisor.StateFileName {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

// lastLocks shuts the lock clients out of the master at addr and then returns the largest
// remaining TTL among its keys (0 when none has one): the longest any lock it granted stays
// valid. Shutting out first (the lock user is disabled and its connections closed) means no
// lock is granted after the measurement, before the shutdown. Keys without a TTL, such as
// fence registers, are not locks and need no wait. Any error means "unknown", and the
// caller waits the whole restart_delay.
func lastLocks(ctx context.Context, addr, password, lockUser string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c := adminClient(addr, password)
	defer c.Close()
	// "off" refuses new authentications only; CLIENT KILL USER ends the open ones.
	if err := c.Do(ctx, "ACL", "SETUSER", lockUser, "off").Err(); err != nil {
		return 0, fmt.Errorf("ACL SETUSER %s off: %w", lockUser, err)
	}
	if err := c.Do(ctx, "CLIENT", "KILL", "USER", lockUser).Err(); err != nil {
		return 0, fmt.Errorf("CLIENT KILL USER %s: %w", lockUser, err)
	}
	var longest time.Duration
	iter := c.Scan(ctx, 0, "*", 1000).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range batch {
				p.PTTL(ctx, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, cmd := range cmds {
			longest = max(longest, cmd.(*redis.DurationCmd).Val())
		}
		batch = batch[:0]
		return nil
	}
	for iter.Next(ctx) {
		if batch = append(batch, iter.Val()); len(batch) == 1000 {
			if err := flush(); err != nil {
				return 0, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return 0, err
	}
	if err := flush(); err != nil {
		return 0, err
	}
	return longest, nil
}

// stopWithoutDir stops a master whose data dir was removed under it, by the pids in state:
// SIGTERM to the supervisor (it shuts redis-server down), SIGKILL for whatever is left after
// a grace period. Each pid is checked against the dir first, so a recycled pid is left alone.
func stopWithoutDir(ctx context.Context, dir string, supPID, redisPID int) error {
	isOurs := func(pid int) bool {
		if !processAlive(pid) {
			return false
		}
		if cmdlineHas(pid, dir) {
			return true
		}
		cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
		return err == nil && (cwd == dir || cwd == dir+" (deleted)")
	}
	if isOurs(supPID) {
		_ = syscall.Kill(supPID, syscall.SIGTERM)
	}
	grace, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for isOurs(supPID) || isOurs(redisPID) {
		select {
		case <-grace.Done():
			var killed []int
			for _, pid := range []int{supPID, redisPID} {
				if isOurs(pid) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					killed = append(killed, pid)
				}
			}
			return fmt.Errorf("the data dir was gone and pids %v did not stop on SIGTERM: killed them", killed)
		case <-time.After(pollInterval):
		}
	}
	return nil
}

// loadMasterModel rebuilds a resource from a data dir (import).
func loadMasterModel(ctx context.Context, dir string) (masterModel, error) {
	raw, err := os.ReadFile(filepath.Join(dir, settingsFileName))
	if err != nil {
		return masterModel{}, fmt.Errorf("%w: %s: %v (only data dirs created by redlock_master can be imported)", errNotAMaster, dir, err)
	}
	var s masterSettings
	if err := json.Unmarshal(raw, &s); err != nil {
		return masterModel{}, fmt.Errorf("%s: %v", filepath.Join(dir, settingsFileName), err)
	}
	sc, err := supervisor.LoadConfig(dir)
	if err != nil {
		return masterModel{}, err
	}
	// What the server will start with, for the safety settings Read compares with the live
	// server: the redis.conf the supervisor starts it from. Read replaces them with the live
	// values when the master answers; a held master keeps these (nothing is assumed).
	conf, err := startupSettings(filepath.Join(dir, redisConfFileName))
	if err != nil {
		return masterModel{}, err
	}
	delay, _ := validate.ParseDuration(s.RestartDelay)
	m := masterModel{
		ID: types.StringValue(dir), Name: types.StringValue(sc.Name), Bind: types.StringValue(s.Bind),
		AllowNonLoopbackBind: types.BoolValue(s.AllowNonLoopbackBind), Port: types.Int64Value(s.Port),
		DataDir: types.StringValue(dir), ServerBinary: types.StringValue(s.ServerBinary),
		MaxLockTTL: types.StringValue(s.MaxLockTTL), ClockDriftMargin: types.StringValue(s.ClockDriftMargin),
		RestartDelay: types.StringValue(s.RestartDelay), MaxMemory: types.StringValue(s.MaxMemory),
		AppendFsync: types.StringValue(conf["appendfsync"]), AllowUnsafeAppendFsync: types.BoolValue(s.AllowUnsafeAppendFsync),
		AppendOnly: types.StringValue(conf["appendonly"]), NoAppendfsyncOnRewrite: types.StringValue(conf["no-appendfsync-on-rewrite"]),
		MaxMemoryPolicy: types.StringValue(conf["maxmemory-policy"]), ReplicaOf: types.StringValue(conf["replicaof"]),
		AdminPassword: types.StringValue(sc.AdminPassword), LockUser: types.StringValue(s.LockUser),
		LockPassword: types.StringValue(s.LockPassword), Hooks: hooksToModel(sc.Hooks),
		KeepDataOnDestroy: types.BoolValue(s.KeepDataOnDestroy),
		Timeouts: timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{
			"create": types.StringType, "delete": types.StringType})},
		Address: types.StringValue(sc.Addr), ConfigFile: types.StringValue(filepath.Join(dir, redisConfFileName)),
		PID: types.Int64Value(0), SupervisorPID: types.Int64Value(0), RunID: types.StringValue(""),
		RestartDelayMS: types.Int64Value(delay.Milliseconds()), Status: types.StringValue(""),
	}
	_ = ctx
	return m, nil
}

// startupSettings reads the safety settings a master starts with from its redis.conf: the
// last line of each wins, as in Redis, and a setting without a line has Redis's built-in
// default. replicaof is "host port" ("" when absent), as Read shows a live replica.
func startupSettings(confPath string) (map[string]string, error) {
	raw, err := os.ReadFile(confPath)
	if err != nil {
		return nil, fmt.Errorf("read the master's redis.conf: %w", err)
	}
	conf := map[string]string{"appendonly": "no", "appendfsync": "everysec", "no-appendfsync-on-rewrite": "no",
		"maxmemory-policy": "noeviction", "replicaof": ""}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		key := strings.ToLower(fields[0])
		if key == "slaveof" {
			key = "replicaof"
		}
		if _, ok := conf[key]; ok {
			conf[key] = strings.ToLower(strings.Trim(strings.Join(fields[1:], " "), `"'`))
		}
	}
	return conf, sc.Err()
}

// liveInfo is what a running master reports about itself.
type liveInfo struct {
	RunID       string
	PID         int
	AOFEnabled  bool
	AppendOnly  string // CONFIG GET appendonly: "yes" or "no"
	AppendFsync string
	// NoAppendfsyncOnRewrite is CONFIG GET no-appendfsync-on-rewrite: "yes" or "no".
	NoAppendfsyncOnRewrite string
	MaxMemory              int64
	MaxMemoryPolicy        string
	ReplicaOf              string // "host port" when the server is a replica
	SupervisorStatus       string
}

func adminClient(addr, password string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, Password: password, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second,
		WriteTimeout: 2 * time.Second, MaxRetries: -1, DisableIdentity: true, PoolSize: 1,
	})
}

// readLive asks the master (as admin) for what Read compares against the configuration.
func readLive(ctx context.Context, addr, password string) (liveInfo, error) {
	c := adminClient(addr, password)
	defer c.Close()
	var live liveInfo
	info, err := c.Info(ctx, "server", "persistence", "replication").Result()
	if err != nil {
		return live, fmt.Errorf("INFO: %w", err)
	}
	fields := parseInfo(info)
	live.RunID = fields["run_id"]
	live.PID, _ = strconv.Atoi(fields["process_id"])
	live.AOFEnabled = fields["aof_enabled"] == "1"
	if fields["role"] == "slave" {
		live.ReplicaOf = fields["master_host"] + " " + fields["master_port"]
	}
	for _, name := range []string{"appendonly", "appendfsync", "no-appendfsync-on-rewrite", "maxmemory", "maxmemory-policy"} {
		v, err := c.ConfigGet(ctx, name).Result()
		if err != nil {
			return live, fmt.Errorf("CONFIG GET %s: %w", name, err)
		}
		switch name {
		case "appendonly":
			live.AppendOnly = v[name]
		case "no-appendfsync-on-rewrite":
			live.NoAppendfsyncOnRewrite = v[name]
		case "appendfsync":
			live.AppendFsync = v[name]
		case "maxmemory":
			live.MaxMemory, _ = strconv.ParseInt(v[name], 10, 64)
		case "maxmemory-policy":
			live.MaxMemoryPolicy = v[name]
		}
	}
	return live, nil
}

func parseInfo(info string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
			out[k] = v
		}
	}
	return out
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// cmdlineHas reports whether pid's command line has arg (a recycled pid would not).
func cmdlineHas(pid int, arg string) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	for _, a := range strings.Split(string(raw), "\x00") {
		if filepath.Clean(a) == filepath.Clean(arg) {
			return true
		}
	}
	return false
}

// killLeftovers SIGKILLs what of the master in dir still runs after a failed clean stop
// (supervisor.Running: pids proven by /proc), and the supervisors among extra (pids from
// Spawn) that are still "supervise <dir>", and returns their pids. Last resort only.
func killLeftovers(dir string, extra ...int) []int {
	killed := supervisor.Running(dir)
	for _, pid := range extra {
		if processAlive(pid) && cmdlineHas(pid, dir) && !slices.Contains(killed, pid) {
			killed = append(killed, pid)
		}
	}
	for _, pid := range killed {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range killed {
		for processAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return killed
}

func freePort(bind string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(bind, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(bind string, port int) error {
	l, err := net.Listen("tcp", hostPort(bind, int64(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

func portOf(addr string) int {
	_, p := splitAddr(addr)
	return p
}

func splitAddr(addr string) (host string, port int) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0
	}
	n, _ := strconv.Atoi(p)
	return h, n
}

func waitPortFree(ctx context.Context, addr string) error {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil // no address recorded: nothing was listening for us
	}
	port, _ := strconv.Atoi(p)
	for {
		err := portFree(host, port)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pollInterval):
		}
	}
}

// logTails returns the end of the supervisor and redis logs, for error messages.
func logTails(dir string) string {
	var b strings.Builder
	for _, name := range []string{supervisor.LogFileName, "redis.log"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		if fi, err := f.Stat(); err == nil && fi.Size() > 2048 {
			_, _ = f.Seek(-2048, io.SeekEnd)
		}
		data, _ := io.ReadAll(f)
		f.Close()
		fmt.Fprintf(&b, "--- %s (end) ---\n%s\n", filepath.Join(dir, name), strings.TrimSpace(string(data)))
	}
	return b.String()
}

// writeFileAtomic writes data to path with mode 0600 via a temporary file and a rename, so
// a reader (the supervisor, redis-server) never sees half a file.
func writeFileAtomic(p string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}
