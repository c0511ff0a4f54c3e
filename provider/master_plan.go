package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/master/local"
	"github.com/redlock-kit/redlock-kit/internal/master/local/dirid"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/provider/internal/validate"
)

var (
	namePattern    = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	userPattern    = master.UserNamePattern
	noSpacePattern = regexp.MustCompile(`^[[:graph:]]+$`)
)

// configView is the part of the configuration the cross-attribute checks need; values are
// framework types because any of them may be unknown at plan time.
type configView struct {
	Bind                   types.String         `tfsdk:"bind"`
	AllowNonLoopbackBind   types.Bool           `tfsdk:"allow_non_loopback_bind"`
	DataDir                types.String         `tfsdk:"data_dir"`
	MaxLockTTL             timetypes.GoDuration `tfsdk:"max_lock_ttl"`
	ClockDriftMargin       timetypes.GoDuration `tfsdk:"clock_drift_margin"`
	RestartDelay           timetypes.GoDuration `tfsdk:"restart_delay"`
	AppendFsync            types.String         `tfsdk:"appendfsync"`
	AllowUnsafeAppendFsync types.Bool           `tfsdk:"allow_unsafe_appendfsync"`
	AppendOnly             types.String         `tfsdk:"appendonly"`
	NoAppendfsyncOnRewrite types.String         `tfsdk:"no_appendfsync_on_rewrite"`
	MaxMemoryPolicy        types.String         `tfsdk:"maxmemory_policy"`
	ReplicaOf              types.String         `tfsdk:"replica_of"`
	Hooks                  types.Object         `tfsdk:"hooks"`
	TLS                    types.Bool           `tfsdk:"tls"`
}

func getConfigView(ctx context.Context, get func(context.Context, path.Path, any) diag.Diagnostics) (configView, diag.Diagnostics) {
	var v configView
	var diags diag.Diagnostics
	for name, target := range map[string]any{
		"bind": &v.Bind, "allow_non_loopback_bind": &v.AllowNonLoopbackBind, "data_dir": &v.DataDir,
		"max_lock_ttl": &v.MaxLockTTL, "clock_drift_margin": &v.ClockDriftMargin, "restart_delay": &v.RestartDelay,
		"appendfsync": &v.AppendFsync, "allow_unsafe_appendfsync": &v.AllowUnsafeAppendFsync,
		"maxmemory_policy": &v.MaxMemoryPolicy, "replica_of": &v.ReplicaOf, "hooks": &v.Hooks,
		"appendonly": &v.AppendOnly, "no_appendfsync_on_rewrite": &v.NoAppendfsyncOnRewrite, "tls": &v.TLS,
	} {
		diags.Append(get(ctx, path.Root(name), target)...)
	}
	return v, diags
}

// ValidateConfig refuses unsafe or impossible configurations at plan time. Each check
// runs only when the values it needs are known.
func (r *masterResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	v, diags := getConfigView(ctx, req.Config.GetAttribute)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	validateWriteOnly(ctx, req.Config, &resp.Diagnostics)
	if known(v.Bind) {
		checkBind(v.Bind.ValueString(), v.AllowNonLoopbackBind, v.TLS, &resp.Diagnostics)
	}
	validateTLSConfig(ctx, req.Config, &resp.Diagnostics)
	if known(v.DataDir) {
		if err := local.DirCreatable(v.DataDir.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("data_dir"), "data_dir cannot be created",
				fmt.Sprintf("data_dir: %s.", err))
		}
	}
	checkDelays(v.MaxLockTTL, v.ClockDriftMargin, v.RestartDelay, &resp.Diagnostics)
	var lockUsers types.Map
	var lockUser, lockPassword, adminPassword types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("lock_users"), &lockUsers)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("lock_user"), &lockUser)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("lock_password"), &lockPassword)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("admin_password"), &adminPassword)...)
	checkLockUsersAtPlan(ctx, lockUsers, lockUser, lockPassword, adminPassword, &resp.Diagnostics)
	var lockPasswordWO types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root(lockPasswordWOAttribute), &lockPasswordWO)...)
	if users, known, _ := lockUsersFromModel(ctx, lockUsers); known && len(users) > 0 && !lockPasswordWO.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root(lockPasswordWOAttribute), lockPasswordWOAttribute+" cannot be used with lock_users",
			lockPasswordWOAttribute+" is set and so is lock_users: with lock_users every lock user is an entry there, with its own "+
				"key_prefix and password. Remove "+lockPasswordWOAttribute+".")
	}
	if known(v.AppendFsync) && v.AppendFsync.ValueString() != redisconf.AppendFsync {
		switch {
		case !v.AllowUnsafeAppendFsync.IsUnknown() && !v.AllowUnsafeAppendFsync.ValueBool():
			resp.Diagnostics.AddAttributeError(path.Root("appendfsync"), "Unsafe appendfsync refused",
				fmt.Sprintf("appendfsync = %q lets a crash or power loss forget locks the master already acknowledged, "+
					"so a second client can win a majority. Remove appendfsync (it defaults to \"always\"), "+
					"or set %s = true to accept that risk.", v.AppendFsync.ValueString(), fsyncAllowAttribute))
		case v.AllowUnsafeAppendFsync.ValueBool():
			resp.Diagnostics.AddAttributeWarning(path.Root("appendfsync"), "UNSAFE: appendfsync is not \"always\"",
				fmt.Sprintf("appendfsync = %q with %s = true: acknowledged locks can be lost in a crash or power loss, "+
					"and mutual exclusion is no longer guaranteed. Use \"always\" for any real deployment.",
					v.AppendFsync.ValueString(), fsyncAllowAttribute))
		}
	}
	if known(v.AppendOnly) && v.AppendOnly.ValueString() != "yes" {
		resp.Diagnostics.AddAttributeError(path.Root("appendonly"), "AOF off refused",
			fmt.Sprintf("appendonly = %q: without the AOF a restarted master forgets every lock it granted, and a second "+
				"client can win a majority. Remove the argument (it defaults to \"yes\") or set it to \"yes\".", v.AppendOnly.ValueString()))
	}
	if known(v.NoAppendfsyncOnRewrite) && v.NoAppendfsyncOnRewrite.ValueString() != redisconf.NoAppendfsyncOnRewrite {
		resp.Diagnostics.AddAttributeError(path.Root("no_appendfsync_on_rewrite"), "Skipping fsync during rewrites refused",
			fmt.Sprintf("no_appendfsync_on_rewrite = %q: acknowledged locks are not fsynced while the AOF is rewritten, so a "+
				"crash then loses them. Remove the argument (it defaults to \"no\") or set it to \"no\".", v.NoAppendfsyncOnRewrite.ValueString()))
	}
	if known(v.MaxMemoryPolicy) && v.MaxMemoryPolicy.ValueString() != redisconf.MaxmemoryPolicy {
		resp.Diagnostics.AddAttributeError(path.Root("maxmemory_policy"), "Eviction policy refused",
			fmt.Sprintf("maxmemory_policy = %q: any eviction policy silently drops live locks. Remove the argument "+
				"(it defaults to \"noeviction\") or set it to \"noeviction\".", v.MaxMemoryPolicy.ValueString()))
	}
	if known(v.ReplicaOf) && v.ReplicaOf.ValueString() != "" {
		resp.Diagnostics.AddAttributeError(path.Root("replica_of"), "Replication refused",
			fmt.Sprintf("replica_of = %q: Redlock masters must be independent (no replication, no failover): a promoted "+
				"replica hands out locks its master already granted. Remove the argument.", v.ReplicaOf.ValueString()))
	}
	if known(v.Hooks) {
		hooks, d := hooksFromModel(ctx, v.Hooks)
		resp.Diagnostics.Append(d...)
		for name, argv := range map[string][]string{"on_crash": hooks.OnCrash, "before_restart": hooks.BeforeRestart, "after_restart": hooks.AfterRestart} {
			if len(argv) == 0 {
				continue
			}
			if err := local.LookPath(argv[0]); err != nil {
				resp.Diagnostics.AddAttributeError(path.Root("hooks").AtName(name), "Hook program not found",
					fmt.Sprintf("hooks.%s: %s.", name, err))
			}
		}
	}
}

// checkBind refuses an address the master should not or cannot listen on. A loopback
// address is always fine. Any other address needs allow_non_loopback_bind = true (the
// operator accepts that the master answers on the network), and must be an address of this
// machine, or the wildcard: redis-server could not listen anywhere else. An address the
// machine does not have passes only when the kernel was told to allow such binds (the sysctl
// ip_nonlocal_bind = 1: set on purpose, for an address that arrives later), with a warning.
func checkBind(bind string, allow, tlsOn types.Bool, diags *diag.Diagnostics) {
	if isLoopback(bind) {
		return
	}
	if !isIP(bind) {
		diags.AddAttributeError(path.Root("bind"), "Invalid bind address",
			fmt.Sprintf("bind = %q is not an IP address: use a loopback address such as \"127.0.0.1\" or \"127.0.0.11\".", bind))
		return
	}
	if allow.IsUnknown() {
		return
	}
	if !allow.ValueBool() {
		diags.AddAttributeError(path.Root("bind"), "Non-loopback bind refused",
			fmt.Sprintf("bind = %q is reachable from the network, and the master speaks plain (unencrypted) Redis "+
				"protocol. Use a loopback address (127.0.0.0/8), or set %s = true if you must.", bind, bindAllowAttribute))
		return
	}
	nonlocal, err := local.BindAddress(bind)
	switch {
	case err != nil:
		diags.AddAttributeError(path.Root("bind"), "Bind address not on this machine", fmt.Sprintf("bind = %q: %s.", bind, err))
		return
	case nonlocal:
		diags.AddAttributeWarning(path.Root("bind"), "Bind address not on this machine",
			fmt.Sprintf("bind = %q is not an address of this machine; the kernel allows listening on it "+
				"(ip_nonlocal_bind = 1), so the master starts, but clients reach it only once the address is here. "+
				"Such an address must never move to another master while locks this one granted are valid.", bind))
	}
	if tlsOn.ValueBool() {
		return // passwords and locks cross the network encrypted
	}
	diags.AddAttributeWarning(path.Root("bind"), "Master listens on the network",
		fmt.Sprintf("bind = %q with %s = true: the master is reachable from the network without TLS; passwords "+
			"cross the network in clear text.", bind, bindAllowAttribute))
}

// checkDelays applies the timing rules (master.CheckTiming) to whatever of the three is
// known: an unknown value skips the checks that need it, a null one takes its default, and a
// value that does not parse or is not positive is left to the attribute validator.
func checkDelays(ttlV, marginV, delayV timetypes.GoDuration, diags *diag.Diagnostics) {
	if ttlV.IsUnknown() || marginV.IsUnknown() {
		return
	}
	spec := master.Spec{MaxLockTTL: master.DefaultMaxLockTTL}
	var ok bool
	if !ttlV.IsNull() {
		if spec.MaxLockTTL, ok = positiveDuration(ttlV.StringValue); !ok {
			return
		}
	}
	if !marginV.IsNull() {
		if spec.ClockDriftMargin, ok = positiveDuration(marginV.StringValue); !ok {
			return
		}
	}
	if known(delayV) {
		spec.RestartDelay, _ = positiveDuration(delayV.StringValue) // 0: not checked
	}
	addErrors(diags, spec.CheckTiming())
}

// positiveDuration parses a duration attribute; ok is false when it is not a positive
// duration (its validator says why).
func positiveDuration(v types.String) (d time.Duration, ok bool) {
	d, err := validate.ParseDuration(v.ValueString())
	return d, err == nil && d > 0
}

// ModifyPlan fills in what depends on the provider block or on other attributes, checks
// what needs the configured provider (the server binary), and marks replacements the
// schema's plan modifiers cannot see.
func (r *masterResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return // destroy
	}
	var plan masterModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var state *masterModel
	if !req.State.Raw.IsNull() {
		state = &masterModel{}
		resp.Diagnostics.Append(req.State.Get(ctx, state)...)
		if resp.Diagnostics.HasError() {
			return
		}
	}
	var cfgBinary, cfgBind types.String
	var cfgMargin, cfgDelay timetypes.GoDuration
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("server_binary"), &cfgBinary)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("bind"), &cfgBind)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("clock_drift_margin"), &cfgMargin)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root(restartDelayAttribute), &cfgDelay)...)
	if resp.Diagnostics.HasError() {
		return
	}

	if cfgBinary.IsNull() {
		plan.ServerBinary = types.StringValue(r.defaults.ServerBinary)
		if err := local.LookPath(r.defaults.ServerBinary); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("server_binary"), "Executable not found",
				fmt.Sprintf("server_binary (from the provider's default): %s.", err))
		}
	}
	if cfgBind.IsNull() {
		plan.Bind = types.StringValue(r.defaults.Bind)
		checkBind(r.defaults.Bind, plan.AllowNonLoopbackBind, plan.TLS, &resp.Diagnostics)
	}
	switch {
	case known(plan.LockUsers) && len(plan.LockUsers.Elements()) > 0:
		// Tenants replace the single lock user, which then does not exist.
		plan.LockUser, plan.LockPassword = types.StringValue(""), types.StringValue("")
	case plan.LockUsers.IsNull():
		var cfgLockUser types.String
		resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("lock_user"), &cfgLockUser)...)
		if cfgLockUser.IsNull() && (!known(plan.LockUser) || plan.LockUser.ValueString() == "") {
			plan.LockUser = types.StringValue(redisconf.DefaultLockUser)
		}
		if known(plan.LockPassword) && plan.LockPassword.ValueString() == "" {
			// Back from lock_users to the single lock user: it gets a new password at apply.
			plan.LockPassword = types.StringUnknown()
		}
	}

	// Derived durations, when everything they depend on is known.
	if ttl, err := validate.ParseDuration(plan.MaxLockTTL.ValueString()); known(plan.MaxLockTTL) && err == nil {
		if cfgMargin.IsNull() {
			plan.ClockDriftMargin = durationValue(master.DefaultMargin(ttl).String())
		}
		if margin, err := validate.ParseDuration(plan.ClockDriftMargin.ValueString()); known(plan.ClockDriftMargin) && err == nil && cfgDelay.IsNull() {
			plan.RestartDelay = durationValue((ttl + margin).String())
		}
	}
	if state != nil {
		// A derived (not configured) duration equal to the one in state keeps the state's
		// text: "61s" and "1m1s" are the same value (GoDuration's semantic equality), not a diff.
		if cfgMargin.IsNull() && sameDuration(ctx, plan.ClockDriftMargin, state.ClockDriftMargin) {
			plan.ClockDriftMargin = state.ClockDriftMargin
		}
		if cfgDelay.IsNull() && sameDuration(ctx, plan.RestartDelay, state.RestartDelay) {
			plan.RestartDelay = state.RestartDelay
		}
	}
	if delay, err := validate.ParseDuration(plan.RestartDelay.ValueString()); known(plan.RestartDelay) && err == nil {
		plan.RestartDelayMS = types.Int64Value(hold.CeilMS(delay).Milliseconds())
	} else {
		plan.RestartDelayMS = types.Int64Unknown()
	}
	if ttl, err := validate.ParseDuration(plan.MaxLockTTL.ValueString()); known(plan.MaxLockTTL) && err == nil {
		plan.MaxLockTTLMS = types.Int64Value(ttl.Milliseconds())
	} else {
		plan.MaxLockTTLMS = types.Int64Unknown()
	}
	if known(plan.DataDir) {
		plan.ID = plan.DataDir
		if known(plan.Name) {
			if other := r.defaults.claims.claim(plan.DataDir.ValueString(), plan.Name.ValueString()); other != "" {
				resp.Diagnostics.AddAttributeError(path.Root("data_dir"), "data_dir shared by two masters",
					fmt.Sprintf("data_dir %s is also the data_dir of master %q in this configuration: two masters cannot "+
						"share one (one AOF, one supervisor). Give each master its own data_dir.",
						plan.DataDir.ValueString(), other))
			}
		}
	}

	if state != nil {
		// Replacements for values the provider block supplies: the schema's RequiresReplace
		// would see them as unknown and replace on every plan.
		for name, pair := range map[string][2]types.String{
			"server_binary": {plan.ServerBinary, state.ServerBinary},
			"bind":          {plan.Bind, state.Bind},
		} {
			if known(pair[0]) && !pair[0].Equal(pair[1]) {
				resp.RequiresReplace = append(resp.RequiresReplace, path.Root(name))
			}
		}
		if known(plan.Bind) && known(plan.Port) && plan.Bind.Equal(state.Bind) && plan.Port.Equal(state.Port) {
			plan.Address = state.Address
		}
		if st := state.Status.ValueString(); st == local.StatusUnsupervised || st == local.StatusDestroying {
			// redis-server runs without its supervisor (Read found it so): replace the master.
			// The destroy stops that server cleanly; the create supervises it again. A destroy
			// cut short: the destroy waits out the rest of the locks' validity first.
			plan.Status, plan.PID, plan.SupervisorPID, plan.RunID = types.StringUnknown(), types.Int64Unknown(),
				types.Int64Unknown(), types.StringUnknown()
			resp.RequiresReplace = append(resp.RequiresReplace, path.Root("status"))
		}
		warnLowerDelays(state, &plan, &resp.Diagnostics)
		planManaged(ctx, req.Private, state, &plan, resp)
		if replaces(state, &plan, resp.RequiresReplace) && known(plan.Name) && known(plan.DataDir) {
			r.defaults.replacing.remember(plan.Name.ValueString(), plan.DataDir.ValueString(),
				replacedMaster{Address: state.Address.ValueString(), DataDir: state.ID.ValueString()})
			warnEmptyAtSameAddress(state, &plan, &resp.Diagnostics)
		}
	}
	warnLongHold(ctx, state, &plan, &resp.Diagnostics)
	var replaced *replacedMaster
	if state == nil && known(plan.Name) && known(plan.DataDir) {
		if old, ok := r.defaults.replacing.replaced(plan.Name.ValueString(), plan.DataDir.ValueString()); ok {
			replaced = &old
		}
	}
	checkFreeAtPlan(state, replaced, &plan, &resp.Diagnostics)
	var keyWO types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root(tlsKeyPEMWOAttribute), &keyWO)...)
	checkTLSPlan(&plan, keyWO, &resp.Diagnostics)
	if known(plan.Bind) && known(plan.Port) && plan.Port.ValueInt64() != 0 {
		plan.Address = types.StringValue(hostPort(plan.Bind.ValueString(), plan.Port.ValueInt64()))
	}
	resp.Diagnostics.Append(planWriteOnly(ctx, req.Config, &plan)...)
	resp.Diagnostics.Append(resp.Plan.Set(ctx, &plan)...)
}

// warnLowerDelays explains what lowering restart_delay (usually by lowering max_lock_ttl)
// means for a running master: the supervisor never shortens a hold, so the new delay
// applies only once every lock granted under the old one has expired, and the lock clients
// must use the new max TTL by then.
func warnLowerDelays(state, plan *masterModel, diags *diag.Diagnostics) {
	if !known(plan.RestartDelay) || !known(state.RestartDelay) {
		return
	}
	oldDelay, err1 := validate.ParseDuration(state.RestartDelay.ValueString())
	newDelay, err2 := validate.ParseDuration(plan.RestartDelay.ValueString())
	if err1 != nil || err2 != nil || newDelay >= oldDelay {
		return
	}
	diags.AddAttributeWarning(path.Root(restartDelayAttribute), "Lower restart_delay applies once the old locks have expired",
		fmt.Sprintf("restart_delay goes from %s to %s. Locks the master granted under the old setting may stay valid on the "+
			"other masters for up to %s, so the supervisor keeps holding a crashed master at least until then: the new "+
			"delay takes effect after the master's locks granted under the old max TTL have expired (%s after this apply). "+
			"Lock clients must use the new max_lock_ttl (%s) by then: restart them with the new agent.json or "+
			"redlock.Options.MaxTTL. A client still asking for a longer TTL is not covered by the shorter delay.",
			oldDelay, newDelay, oldDelay, oldDelay-newDelay, plan.MaxLockTTL.ValueString()))
}

// warnLongHold states what a long max_lock_ttl costs (master.Spec.LongHold): a crashed
// master stays down for the whole restart delay, and a majority down blocks every lock that
// long. It warns when the master is created and when the TTL or the delay changes, not on
// every plan.
func warnLongHold(ctx context.Context, state, plan *masterModel, diags *diag.Diagnostics) {
	if !known(plan.MaxLockTTL) || !known(plan.RestartDelay) {
		return
	}
	if state != nil && sameDuration(ctx, plan.MaxLockTTL, state.MaxLockTTL) && sameDuration(ctx, plan.RestartDelay, state.RestartDelay) {
		return
	}
	ttl, err1 := validate.ParseDuration(plan.MaxLockTTL.ValueString())
	delay, err2 := validate.ParseDuration(plan.RestartDelay.ValueString())
	if err1 != nil || err2 != nil || ttl <= 0 || delay <= 0 {
		return // the validators say why
	}
	if summary, detail, long := (master.Spec{MaxLockTTL: ttl, RestartDelay: delay}).LongHold(); long {
		diags.AddAttributeWarning(path.Root("max_lock_ttl"), summary, detail)
	}
}

// checkFreeAtPlan refuses at plan what the create would fail on: a port something already
// listens on, and a data dir another master's supervisor runs (by any spelling: dirid). What
// the master itself holds is not refused: on a later plan (state) its own server holds its
// port and its own supervisor its dir, and in the create half of its replacement (replaced)
// the destroy frees them before the create runs. Two masters of one configuration that share
// a data_dir are refused by the plan's claims (dataDirClaims), and again at create
// (local.Start).
func checkFreeAtPlan(state *masterModel, replaced *replacedMaster, plan *masterModel, diags *diag.Diagnostics) {
	if known(plan.DataDir) {
		dir := plan.DataDir.ValueString()
		own := state != nil && dirid.Same(dir, state.ID.ValueString()) ||
			replaced != nil && dirid.Same(dir, replaced.DataDir)
		if !own {
			addErrors(diags, local.CheckDataDirFree(dir))
			addErrors(diags, local.CheckOrphanOwner(dir, plan.Name.ValueString()))
		}
	}
	if !known(plan.Port) || !known(plan.Bind) || plan.Port.ValueInt64() == 0 {
		return
	}
	bind, port := plan.Bind.ValueString(), plan.Port.ValueInt64()
	addr := hostPort(bind, port)
	if state != nil && (state.Address.ValueString() == addr || plan.Port.Equal(state.Port) && plan.Bind.Equal(state.Bind)) {
		return // where this master listens already
	}
	if replaced != nil && replaced.Address == addr {
		return // where the master it replaces listens: the destroy frees it first
	}
	addErrors(diags, local.CheckPortFree(bind, int(port)))
}

// warnEmptyAtSameAddress warns when a replacement keeps the old data (keep_data_on_destroy,
// so the destroy does not wait for the old master's locks) but starts the new master in
// another data dir, empty, at the same address: locks the old one granted may then still be
// valid on the other masters.
func warnEmptyAtSameAddress(state, plan *masterModel, diags *diag.Diagnostics) {
	if !state.KeepDataOnDestroy.ValueBool() || !known(plan.DataDir) || dirid.Same(plan.DataDir.ValueString(), state.ID.ValueString()) {
		return
	}
	if known(plan.Address) && plan.Address.ValueString() != state.Address.ValueString() {
		return
	}
	diags.AddAttributeWarning(path.Root("data_dir"), "Replacement starts empty at the same address",
		fmt.Sprintf("redlock_master %q is replaced with keep_data_on_destroy = true, so the destroy keeps %s and does not "+
			"wait for the locks the old master granted; the new master starts in %s without them, at the same address. "+
			"Locks granted up to restart_delay (%s) before the apply may still be valid on the other masters: set "+
			"keep_data_on_destroy = false for this apply (the destroy then waits for them), or keep clients off the "+
			"address for that long.", plan.Name.ValueString(), state.ID.ValueString(), plan.DataDir.ValueString(),
			state.RestartDelay.ValueString()))
}

// replaces reports whether the plan replaces the master in state: a RequiresReplace that
// ModifyPlan asked for (requested), or a change of an attribute whose schema requires one.
func replaces(state, plan *masterModel, requested path.Paths) bool {
	if len(requested) > 0 {
		return true
	}
	changed := func(planned, prior attr.Value) bool {
		return !planned.IsUnknown() && !planned.Equal(prior)
	}
	return changed(plan.DataDir, state.DataDir) || changed(plan.Port, state.Port) || changed(plan.TLS, state.TLS)
}

// randomSecret returns 32 bytes from the operating system's CSPRNG, hex-encoded.
func randomSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // cannot happen on Linux; never fall back to a weak secret
	}
	return hex.EncodeToString(b)
}

func isIP(s string) bool { return net.ParseIP(s) != nil }

// sameDuration is GoDuration's semantic equality: "60s" and "1m" are the same duration.
func sameDuration(ctx context.Context, a, b timetypes.GoDuration) bool {
	if a.Equal(b) {
		return true
	}
	if !known(a) || !known(b) {
		return false
	}
	eq, diags := a.StringSemanticEquals(ctx, b)
	return eq && !diags.HasError()
}
