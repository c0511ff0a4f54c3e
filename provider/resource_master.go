package provider

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/master/local"
	"github.com/redlock-kit/redlock-kit/provider/internal/validate"
)

var (
	_ resource.Resource                   = &masterResource{}
	_ resource.ResourceWithConfigure      = &masterResource{}
	_ resource.ResourceWithImportState    = &masterResource{}
	_ resource.ResourceWithValidateConfig = &masterResource{}
	_ resource.ResourceWithModifyPlan     = &masterResource{}
)

// Defaults of redlock_master. The restart delay and drift margin derive from max_lock_ttl.
const (
	defaultCreateTimeout  = 5 * time.Minute
	defaultUpdateTimeout  = 5 * time.Minute
	defaultDeleteTimeout  = 10 * time.Minute
	bindAllowAttribute    = "allow_non_loopback_bind"
	fsyncAllowAttribute   = "allow_unsafe_appendfsync"
	restartDelayAttribute = "restart_delay"
)

// defaultMaxLockTTL is max_lock_ttl's default as the schema writes it ("30s").
var defaultMaxLockTTL = master.DefaultMaxLockTTL.String()

// NewMasterResource returns the redlock_master resource.
func NewMasterResource() resource.Resource { return &masterResource{defaults: builtinDefaults()} }

type masterResource struct {
	defaults providerDefaults
}

// masterModel is redlock_master's state. Durations stay strings as written so that the
// state equals the configuration.
type masterModel struct {
	ID                     types.String         `tfsdk:"id"`
	Name                   types.String         `tfsdk:"name"`
	Bind                   types.String         `tfsdk:"bind"`
	AllowNonLoopbackBind   types.Bool           `tfsdk:"allow_non_loopback_bind"`
	Port                   types.Int64          `tfsdk:"port"`
	DataDir                types.String         `tfsdk:"data_dir"`
	ServerBinary           types.String         `tfsdk:"server_binary"`
	MaxLockTTL             timetypes.GoDuration `tfsdk:"max_lock_ttl"`
	ClockDriftMargin       timetypes.GoDuration `tfsdk:"clock_drift_margin"`
	RestartDelay           timetypes.GoDuration `tfsdk:"restart_delay"`
	MaxMemory              types.String         `tfsdk:"maxmemory"`
	AppendFsync            types.String         `tfsdk:"appendfsync"`
	AllowUnsafeAppendFsync types.Bool           `tfsdk:"allow_unsafe_appendfsync"`
	AppendOnly             types.String         `tfsdk:"appendonly"`
	NoAppendfsyncOnRewrite types.String         `tfsdk:"no_appendfsync_on_rewrite"`
	MaxMemoryPolicy        types.String         `tfsdk:"maxmemory_policy"`
	ReplicaOf              types.String         `tfsdk:"replica_of"`
	AdminPassword          types.String         `tfsdk:"admin_password"`
	LockUser               types.String         `tfsdk:"lock_user"`
	LockPassword           types.String         `tfsdk:"lock_password"`
	LockUsers              types.Map            `tfsdk:"lock_users"`
	MonitorUser            types.String         `tfsdk:"monitor_user"`
	MonitorPassword        types.String         `tfsdk:"monitor_password"`
	AdminPasswordWO        types.String         `tfsdk:"admin_password_wo"`
	LockPasswordWO         types.String         `tfsdk:"lock_password_wo"`
	MonitorPasswordWO      types.String         `tfsdk:"monitor_password_wo"`
	LockUserPasswordsWO    types.Map            `tfsdk:"lock_user_passwords_wo"`
	PasswordWOVersion      types.Int64          `tfsdk:"password_wo_version"`
	Hooks                  types.Object         `tfsdk:"hooks"`
	KeepDataOnDestroy      types.Bool           `tfsdk:"keep_data_on_destroy"`
	Timeouts               timeouts.Value       `tfsdk:"timeouts"`
	Address                types.String         `tfsdk:"address"`
	PID                    types.Int64          `tfsdk:"pid"`
	SupervisorPID          types.Int64          `tfsdk:"supervisor_pid"`
	ConfigFile             types.String         `tfsdk:"config_file"`
	RunID                  types.String         `tfsdk:"run_id"`
	RestartDelayMS         types.Int64          `tfsdk:"restart_delay_ms"`
	MaxLockTTLMS           types.Int64          `tfsdk:"max_lock_ttl_ms"`
	Status                 types.String         `tfsdk:"status"`
	ManagedSettings        types.Map            `tfsdk:"managed_settings"` // resource_master_managed.go
	// TLS (resource_master_tls.go).
	TLS          types.Bool   `tfsdk:"tls"`
	TLSCertPEM   types.String `tfsdk:"tls_cert_pem"`
	TLSKeyPEM    types.String `tfsdk:"tls_key_pem"`
	TLSCACertPEM types.String `tfsdk:"tls_ca_cert_pem"`
	TLSKeyPEMWO  types.String `tfsdk:"tls_key_pem_wo"`
}

var hookAttrTypes = map[string]attr.Type{
	"on_crash":       types.ListType{ElemType: types.StringType},
	"before_restart": types.ListType{ElemType: types.StringType},
	"after_restart":  types.ListType{ElemType: types.StringType},
}

func (r *masterResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_master"
}

func (r *masterResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if req.ProviderData == nil {
		return
	}
	d, ok := req.ProviderData.(providerDefaults)
	if !ok {
		resp.Diagnostics.AddError("Unexpected provider data", fmt.Sprintf("redlock_master got %T; this is a bug in the provider.", req.ProviderData))
		return
	}
	r.defaults = d
}

// Create starts a new master: checks, data dir, config files, supervisor, and waits until
// it answers with AOF on.
func (r *masterResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m masterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := m.Timeouts.Create(ctx, defaultCreateTimeout)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	r.fillDefaults(&m)
	if checkAtApply(ctx, &m, &resp.Diagnostics); resp.Diagnostics.HasError() {
		return
	}
	wo, d := readWriteOnly(ctx, req.Config)
	if resp.Diagnostics.Append(d...); resp.Diagnostics.HasError() {
		return
	}
	createWriteOnly(wo, &m)
	// A master recreated in its old data dir (its supervisor died) keeps the generated
	// passwords it had, so that clients configured with them keep working.
	prevAdmin, prevLock := local.PreviousSecrets(m.DataDir.ValueString(), m.LockUser.ValueString())
	if m.AdminPassword.IsUnknown() || m.AdminPassword.IsNull() {
		m.AdminPassword = types.StringValue(or(prevAdmin, randomSecret()))
	}
	if m.LockPassword.IsUnknown() || m.LockPassword.IsNull() {
		m.LockPassword = types.StringValue(or(prevLock, randomSecret()))
	}
	applyMaster(ctx, "create", "starting the master", "master running", &m, wo,
		func() diag.Diagnostics { return startMaster(ctx, &m) }, &resp.State, &resp.Diagnostics)
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(setAppliedManaged(ctx, resp.Private, managedFromModel(m.ManagedSettings))...)
	}
}

// applyMaster ends a Create or an Update the one way both end: change starts or updates the
// master; when it worked, m is stored without its write-only passwords. Logged as
// "redlock_master <op>: <starting>", then "<op>: <done>" or "<op> failed".
func applyMaster(ctx context.Context, op, starting, done string, m *masterModel, wo writeOnlyPasswords,
	change func() diag.Diagnostics, state *tfsdk.State, diags *diag.Diagnostics) {
	tflog.Info(ctx, "redlock_master "+op+": "+starting, masterLogFields(m))
	diags.Append(change()...)
	if diags.HasError() {
		tflog.Debug(ctx, "redlock_master "+op+" failed", masterLogFields(m))
		return
	}
	tflog.Info(ctx, "redlock_master "+op+": "+done, masterLogFields(m))
	forgetWriteOnly(wo, m)
	diags.Append(state.Set(ctx, m)...)
}

// Read refreshes the live values. A master that is gone is removed from state; one whose
// safety settings were changed by hand gets the live values, so the next plan shows a diff.
func (r *masterResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m masterModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	tflog.Debug(ctx, "redlock_master read: observing the master", masterLogFields(&m))
	gone, d := refreshMaster(ctx, &m)
	resp.Diagnostics.Append(d...)
	if gone {
		tflog.Info(ctx, "redlock_master read: supervisor and redis-server are gone, removing from state", masterLogFields(&m))
		resp.State.RemoveResource(ctx)
		return
	}
	tflog.Info(ctx, "redlock_master read", masterLogFields(&m))
	if appliedManaged(ctx, req.Private) == nil {
		// A state from an older provider, or an import: what runs now is what was applied.
		resp.Diagnostics.Append(setAppliedManaged(ctx, resp.Private, managedFromModel(m.ManagedSettings))...)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Update applies runtime-settable changes in place; everything else is planned as a
// replacement (see ModifyPlan and the schema).
func (r *masterResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan, state masterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := plan.Timeouts.Update(ctx, defaultUpdateTimeout)
	if resp.Diagnostics.Append(d...); resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r.fillDefaults(&plan)
	if plan.LockPassword.IsUnknown() {
		plan.LockPassword = types.StringValue(randomSecret()) // back from lock_users to one lock user
	}
	if checkAtApply(ctx, &plan, &resp.Diagnostics); resp.Diagnostics.HasError() {
		return
	}
	wo, d := readWriteOnly(ctx, req.Config)
	if resp.Diagnostics.Append(d...); resp.Diagnostics.HasError() {
		return
	}
	updateWriteOnly(wo, &state, &plan)
	repair := managedRepair(ctx, req.Private, &state)
	applyMaster(ctx, "update", "applying changes in place", "done", &plan, wo,
		func() diag.Diagnostics { return updateMaster(ctx, &state, &plan, repair) }, &resp.State, &resp.Diagnostics)
	if !resp.Diagnostics.HasError() {
		resp.Diagnostics.Append(setAppliedManaged(ctx, resp.Private, managedFromModel(plan.ManagedSettings))...)
	}
}

// Delete stops the master cleanly and leaves nothing running.
func (r *masterResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m masterModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, d := m.Timeouts.Delete(ctx, defaultDeleteTimeout)
	resp.Diagnostics.Append(d...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tflog.Info(ctx, "redlock_master delete: stopping the master", masterLogFields(&m))
	resp.Diagnostics.Append(destroyMaster(ctx, &m)...)
	if !resp.Diagnostics.HasError() {
		tflog.Info(ctx, "redlock_master delete: done", masterLogFields(&m))
	}
}

// ImportState takes a data dir and rebuilds the state from the files the provider wrote
// there (redlock-master.json, supervisor.json); Read then fills in the live values.
func (r *masterResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	dir := filepath.Clean(req.ID)
	if !filepath.IsAbs(dir) {
		resp.Diagnostics.AddError("Import needs an absolute data dir",
			fmt.Sprintf("%q is not absolute: run `terraform import <address> /absolute/path/to/data_dir`.", req.ID))
		return
	}
	m, err := loadMasterModel(dir)
	if err != nil {
		tflog.Debug(ctx, "redlock_master import failed", map[string]any{"data_dir": dir, "error": err.Error()})
		resp.Diagnostics.AddError("Cannot import redlock_master", err.Error())
		return
	}
	tflog.Info(ctx, "redlock_master import", masterLogFields(&m))
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// fillDefaults resolves values a plan may leave unknown (provider defaults, derived
// durations). ModifyPlan normally did this already; Create and Update repeat it so that a
// plan made without a configured provider still applies correctly.
func (r *masterResource) fillDefaults(m *masterModel) {
	if !known(m.ServerBinary) {
		m.ServerBinary = types.StringValue(r.defaults.ServerBinary)
	}
	if !known(m.Bind) {
		m.Bind = types.StringValue(r.defaults.Bind)
	}
	ttl, _ := validate.ParseDuration(m.MaxLockTTL.ValueString())
	if !known(m.ClockDriftMargin) {
		m.ClockDriftMargin = durationValue(master.DefaultMargin(ttl).String())
	}
	margin, _ := validate.ParseDuration(m.ClockDriftMargin.ValueString())
	if !known(m.RestartDelay) {
		m.RestartDelay = durationValue((ttl + margin).String())
	}
	delay, _ := validate.ParseDuration(m.RestartDelay.ValueString())
	m.RestartDelayMS = types.Int64Value(hold.CeilMS(delay).Milliseconds())
	m.MaxLockTTLMS = types.Int64Value(ttl.Milliseconds())
	m.ID = m.DataDir
	m.ConfigFile = types.StringValue(filepath.Join(m.DataDir.ValueString(), local.RedisConfFileName))
}

// checkAtApply repeats the checks that ValidateConfig and ModifyPlan skip for values that
// are unknown at plan time (computed from other resources): they are known now.
func checkAtApply(ctx context.Context, m *masterModel, diags *diag.Diagnostics) {
	for name, v := range map[string]types.String{"max_lock_ttl": m.MaxLockTTL.StringValue, "clock_drift_margin": m.ClockDriftMargin.StringValue,
		restartDelayAttribute: m.RestartDelay.StringValue} {
		resp := validator.StringResponse{}
		validate.Duration(time.Millisecond).ValidateString(ctx, validator.StringRequest{Path: path.Root(name), ConfigValue: v}, &resp)
		diags.Append(resp.Diagnostics...)
	}
	resp := validator.StringResponse{}
	validate.MaxMemory().ValidateString(ctx, validator.StringRequest{Path: path.Root("maxmemory"), ConfigValue: m.MaxMemory}, &resp)
	diags.Append(resp.Diagnostics...)
	if !diags.HasError() {
		checkDelays(m.MaxLockTTL, m.ClockDriftMargin, m.RestartDelay, diags)
	}
	// Passwords from other resources are known only now: check the tenants again.
	checkLockUsersAtPlan(ctx, m.LockUsers, types.StringNull(), types.StringNull(), m.AdminPassword, diags)
}

func known(v interface {
	IsNull() bool
	IsUnknown() bool
}) bool {
	return !v.IsNull() && !v.IsUnknown()
}

// isLoopback reports whether ip is in 127.0.0.0/8 or ::1.
func isLoopback(ip string) bool {
	a := net.ParseIP(ip)
	return a != nil && a.IsLoopback()
}

// hostPort returns the address clients use.
func hostPort(bind string, port int64) string {
	return net.JoinHostPort(bind, strconv.FormatInt(port, 10))
}

// hooksFromModel converts the hooks object to master.Hooks.
func hooksFromModel(ctx context.Context, o types.Object) (master.Hooks, diag.Diagnostics) {
	var h master.Hooks
	if o.IsNull() || o.IsUnknown() {
		return h, nil
	}
	var diags diag.Diagnostics
	get := func(name string) []string {
		v, ok := o.Attributes()[name].(types.List)
		if !ok || v.IsNull() || v.IsUnknown() {
			return nil
		}
		var out []string
		diags.Append(v.ElementsAs(ctx, &out, false)...)
		return out
	}
	h.OnCrash = get("on_crash")
	h.BeforeRestart = get("before_restart")
	h.AfterRestart = get("after_restart")
	return h, diags
}

// hooksToModel is the inverse of hooksFromModel; no hooks at all is a null object.
func hooksToModel(h master.Hooks) types.Object {
	if len(h.OnCrash)+len(h.BeforeRestart)+len(h.AfterRestart) == 0 {
		return types.ObjectNull(hookAttrTypes)
	}
	list := func(argv []string) types.List {
		if len(argv) == 0 {
			return types.ListNull(types.StringType)
		}
		vals := make([]attr.Value, len(argv))
		for i, a := range argv {
			vals[i] = types.StringValue(a)
		}
		return types.ListValueMust(types.StringType, vals)
	}
	return types.ObjectValueMust(hookAttrTypes, map[string]attr.Value{
		"on_crash": list(h.OnCrash), "before_restart": list(h.BeforeRestart), "after_restart": list(h.AfterRestart),
	})
}

// durationValue is a duration attribute's value, kept as written ("1m" stays "1m"; the
// type's semantic equality makes "60s" and "1m" the same value).
func durationValue(s string) timetypes.GoDuration {
	return timetypes.GoDuration{StringValue: types.StringValue(s)}
}

// masterLogFields are the structured fields of the master's log lines (TF_LOG=INFO or
// DEBUG): what it is and what it does, never a password.
func masterLogFields(m *masterModel) map[string]any {
	return map[string]any{
		"name": m.Name.ValueString(), "address": m.Address.ValueString(), "data_dir": m.DataDir.ValueString(),
		"pid": m.PID.ValueInt64(), "supervisor_pid": m.SupervisorPID.ValueInt64(), "status": m.Status.ValueString(),
		"max_lock_ttl": m.MaxLockTTL.ValueString(), "restart_delay": m.RestartDelay.ValueString(),
	}
}
