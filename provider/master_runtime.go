package provider

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/master/local"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/provider/internal/validate"
)

// The resource's CRUD runs the master with internal/master/local; this file converts between
// masterModel and that package's types, and its errors and warnings into diagnostics.

// localMaster is the master m describes, listening on port (0: Start picks one). Durations
// that do not parse are 0: the attribute validators reported them before apply.
func localMaster(ctx context.Context, m *masterModel, port int) (local.Master, diag.Diagnostics) {
	hooks, diags := hooksFromModel(ctx, m.Hooks)
	users, _, d := lockUsersFromModel(ctx, m.LockUsers)
	diags.Append(d...)
	diags.Append(fillStoredLockUserPasswords(m, users)...)
	adminPassword, lockPassword := currentSecrets(m)
	monitorPassword := currentMonitorPassword(m)
	duration := func(v timetypes.GoDuration) time.Duration {
		d, _ := validate.ParseDuration(v.ValueString())
		return d
	}
	return local.Master{
		Spec: master.Spec{
			Name: m.Name.ValueString(), Bind: m.Bind.ValueString(), Port: port, DataDir: m.DataDir.ValueString(),
			ServerBinary: m.ServerBinary.ValueString(), MaxLockTTL: duration(m.MaxLockTTL),
			ClockDriftMargin: duration(m.ClockDriftMargin), RestartDelay: duration(m.RestartDelay),
			MaxMemory: m.MaxMemory.ValueString(), AppendFsync: m.AppendFsync.ValueString(),
			AllowUnsafeAppendFsync: m.AllowUnsafeAppendFsync.ValueBool(), AllowNonLoopbackBind: m.AllowNonLoopbackBind.ValueBool(),
			AdminPassword: adminPassword, LockUser: m.LockUser.ValueString(),
			LockPassword: lockPassword, LockUsers: users, Hooks: hooks, TLS: currentTLS(m),
			// monitor_user has a default; the user exists only with a password.
			MonitorUser: ifSet(types.StringValue(monitorPassword), m.MonitorUser.ValueString()), MonitorPassword: monitorPassword,
		},
		ZeroPort: known(m.Port) && m.Port.ValueInt64() == 0,
		Written: local.Written{MaxLockTTL: m.MaxLockTTL.ValueString(), ClockDriftMargin: m.ClockDriftMargin.ValueString(),
			RestartDelay: m.RestartDelay.ValueString()},
		KeepDataOnDestroy: m.KeepDataOnDestroy.ValueBool(),
	}, diags
}

// listenPort is the port the master in state m listens on: the one in its address (port
// may be 0, "any free port").
func listenPort(m *masterModel) int {
	if _, p, err := net.SplitHostPort(m.Address.ValueString()); err == nil {
		if n, err := strconv.Atoi(p); err == nil {
			return n
		}
	}
	return int(m.Port.ValueInt64())
}

func addWarnings(diags *diag.Diagnostics, warnings []local.Warning) {
	for _, w := range warnings {
		diags.AddWarning(w.Summary, w.Detail)
	}
}

// startMaster starts the master the plan m describes and fills in what it got: the port
// picked, the address, the supervisor and the live values.
func startMaster(ctx context.Context, m *masterModel) (diags diag.Diagnostics) {
	lm, diags := localMaster(ctx, m, int(m.Port.ValueInt64()))
	if diags.HasError() {
		return diags
	}
	exe, err := os.Executable()
	if err != nil {
		diags.AddError("Cannot find the provider executable", fmt.Sprintf("The supervisor is the provider binary itself: %v.", err))
		return diags
	}
	started, warnings, err := local.Start(ctx, lm, exe)
	addWarnings(&diags, warnings)
	if err != nil {
		addErrors(&diags, err)
		return diags
	}
	if m.Port.IsNull() || m.Port.IsUnknown() {
		m.Port = types.Int64Value(int64(started.Port))
	}
	m.Address = types.StringValue(hostPort(m.Bind.ValueString(), int64(started.Port)))
	m.SupervisorPID = types.Int64Value(int64(started.SupervisorPID))
	setLive(m, started.Live)
	lm.Spec.Port = started.Port
	readManaged(ctx, lm.Spec, m, &diags)
	return diags
}

// refreshMaster updates m from the data dir and the live server. gone means the master no
// longer exists (no data dir, no supervisor): Terraform should plan to create it again.
func refreshMaster(ctx context.Context, m *masterModel) (gone bool, diags diag.Diagnostics) {
	lm, diags := localMaster(ctx, m, listenPort(m))
	obs, warnings := local.Refresh(ctx, lm.Spec, local.Processes{Supervisor: int(m.SupervisorPID.ValueInt64()),
		Redis: int(m.PID.ValueInt64())})
	addWarnings(&diags, warnings)
	switch {
	case obs.Gone:
		return true, diags
	case obs.DataDirRemoved:
		// Still running from a deleted dir: an empty data_dir in state makes the next plan
		// replace it (Delete stops it by pid) instead of starting a second master beside it.
		m.DataDir = types.StringValue("")
		return false, diags
	}
	if obs.Live != nil {
		setLive(m, *obs.Live)
	}
	m.Status = types.StringValue(obs.Status)
	if obs.Status == local.StatusRunning {
		readManaged(ctx, lm.Spec, m, &diags)
	}
	m.PID = types.Int64Value(int64(obs.Processes.Redis))
	m.SupervisorPID = types.Int64Value(int64(obs.Processes.Supervisor))
	if delay, err := validate.ParseDuration(m.RestartDelay.ValueString()); err == nil {
		m.RestartDelayMS = types.Int64Value(hold.CeilMS(delay).Milliseconds())
	}
	if ttl, err := validate.ParseDuration(m.MaxLockTTL.ValueString()); err == nil {
		m.MaxLockTTLMS = types.Int64Value(ttl.Milliseconds())
	}
	return false, diags
}

// setLive copies what the server reports into the model. Safety settings are copied as they
// are, so that a change made behind Terraform's back shows as a diff in the next plan.
func setLive(m *masterModel, live local.Live) {
	m.RunID = types.StringValue(live.RunID)
	m.PID = types.Int64Value(int64(live.PID))
	m.Status = types.StringValue(local.StatusRunning)
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

// updateMaster applies the plan to the master in state in place (see local.Update), and
// sets back the managed_settings that drifted from repair (nil: none did).
func updateMaster(ctx context.Context, state, plan *masterModel, repair local.Managed) diag.Diagnostics {
	from, diags := localMaster(ctx, state, listenPort(state))
	to, d := localMaster(ctx, plan, listenPort(state))
	if diags.Append(d...); diags.HasError() {
		return diags
	}
	to.RepairManaged = repair
	plan.Address = state.Address
	obs, warnings, err := local.Update(ctx, from, to)
	addWarnings(&diags, warnings)
	if err != nil {
		addErrors(&diags, err)
		return diags
	}
	plan.SupervisorPID = types.Int64Value(int64(obs.Processes.Supervisor))
	plan.Status = types.StringValue(obs.Status)
	plan.PID = types.Int64Value(int64(obs.Processes.Redis))
	plan.RunID = state.RunID
	if obs.Live != nil {
		plan.RunID = types.StringValue(obs.Live.RunID)
		if !plan.ManagedSettings.IsNull() { // null: nothing recorded yet, the next refresh reads it
			readManaged(ctx, to.Spec, plan, &diags)
		}
	}
	if plan.ManagedSettings.IsUnknown() {
		plan.ManagedSettings = state.ManagedSettings
	}
	return diags
}

// destroyMaster stops the master in state m and removes its data unless kept (see
// local.Destroy).
func destroyMaster(ctx context.Context, m *masterModel) diag.Diagnostics {
	lm, diags := localMaster(ctx, m, listenPort(m))
	lm.Spec.DataDir = m.ID.ValueString() // the data dir; m.DataDir is "" when Read found the dir removed
	warnings, err := local.Destroy(ctx, lm, local.Processes{Supervisor: int(m.SupervisorPID.ValueInt64()),
		Redis: int(m.PID.ValueInt64())})
	addWarnings(&diags, warnings)
	addErrors(&diags, err)
	return diags
}

// loadMasterModel rebuilds a resource from a data dir (import).
func loadMasterModel(dir string) (masterModel, error) {
	l, err := local.Load(dir)
	if err != nil {
		return masterModel{}, err
	}
	s, w := l.Master.Spec, l.Master.Written
	port := int64(s.Port)
	if l.Master.ZeroPort {
		port = 0
	}
	delay, _ := validate.ParseDuration(w.RestartDelay)
	ttl, _ := validate.ParseDuration(w.MaxLockTTL)
	if len(s.LockUsers) > 0 {
		s.LockUser, s.LockPassword = "", "" // tenants replace the single lock user
	}
	m := masterModel{
		ID: types.StringValue(dir), Name: types.StringValue(s.Name), Bind: types.StringValue(s.Bind),
		AllowNonLoopbackBind: types.BoolValue(s.AllowNonLoopbackBind), Port: types.Int64Value(port),
		DataDir: types.StringValue(dir), ServerBinary: types.StringValue(s.ServerBinary),
		MaxLockTTL: durationValue(w.MaxLockTTL), ClockDriftMargin: durationValue(w.ClockDriftMargin),
		RestartDelay: durationValue(w.RestartDelay), MaxMemory: types.StringValue(s.MaxMemory),
		AppendFsync: types.StringValue(l.Startup.AppendFsync), AllowUnsafeAppendFsync: types.BoolValue(s.AllowUnsafeAppendFsync),
		AppendOnly: types.StringValue(l.Startup.AppendOnly), NoAppendfsyncOnRewrite: types.StringValue(l.Startup.NoAppendfsyncOnRewrite),
		MaxMemoryPolicy: types.StringValue(l.Startup.MaxMemoryPolicy), ReplicaOf: types.StringValue(l.Startup.ReplicaOf),
		AdminPassword: types.StringValue(s.AdminPassword), LockUser: types.StringValue(s.LockUser),
		LockPassword: types.StringValue(s.LockPassword), LockUsers: lockUsersToModel(s.LockUsers), Hooks: hooksToModel(s.Hooks),
		MonitorUser: types.StringValue(or(s.MonitorUser, redisconf.DefaultMonitorUser)), MonitorPassword: stringOrNull(s.MonitorPassword),
		AdminPasswordWO: types.StringNull(), LockPasswordWO: types.StringNull(), PasswordWOVersion: types.Int64Null(),
		MonitorPasswordWO: types.StringNull(), TLSKeyPEMWO: types.StringNull(), LockUserPasswordsWO: types.MapNull(types.StringType),
		KeepDataOnDestroy: types.BoolValue(l.Master.KeepDataOnDestroy),
		Timeouts: timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{
			"create": types.StringType, "update": types.StringType, "delete": types.StringType})},
		Address: types.StringValue(l.Addr), ConfigFile: types.StringValue(filepath.Join(dir, local.RedisConfFileName)),
		PID: types.Int64Value(0), SupervisorPID: types.Int64Value(0), RunID: types.StringValue(""),
		RestartDelayMS: types.Int64Value(hold.CeilMS(delay).Milliseconds()), MaxLockTTLMS: types.Int64Value(ttl.Milliseconds()), Status: types.StringValue(""),
		ManagedSettings: types.MapNull(types.StringType),
	}
	setTLSModel(&m, s.TLS)
	return m, nil
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}

// stringOrNull is v, or null for "" (an optional attribute that was not set).
func stringOrNull(v string) types.String {
	if v == "" {
		return types.StringNull()
	}
	return types.StringValue(v)
}

// ifSet is v when the attribute is set (not null, not ""), else "".
func ifSet(attribute types.String, v string) string {
	if attribute.ValueString() == "" {
		return ""
	}
	return v
}
