package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/local"
)

// redlock_master's managed_settings: the users and settings the master is given beyond the
// safety settings, read back from the live server (local.Managed), so that a change made
// behind Terraform's back shows in the plan under its name and apply sets it back. What the
// last apply left is kept in the resource's private state (no password, no hash: the users'
// passwords read only as configured or changed); the plan proposes it.

const managedAttribute = "managed_settings"

// privateManagedKey is the private-state key of what the last apply left (a JSON object).
const privateManagedKey = "managed_settings"

func managedSettingsAttribute() schema.Attribute {
	return schema.MapAttribute{
		Computed: true, ElementType: types.StringType,
		MarkdownDescription: "What the master is given beyond the safety settings, as the live server has it, read " +
			"back at every refresh: every ACL user (`\"user <name>\"`: its rules as `ACL LIST` prints them, the " +
			"password hashes replaced by `passwords as configured` or `passwords changed`: the state holds no " +
			"password and no hash), and `save`, `protected-mode` and `maxclients`. A change made on the server " +
			"(`ACL SETUSER redlock +@all`, a new user, `CONFIG SET save ...`, `protected-mode no`, `maxclients 2`) " +
			"shows in the next plan as a diff under its name, and apply sets it back in place: users are redefined " +
			"from scratch, a user the master does not define is removed, the settings are set to what the last apply " +
			"left. A changed admin password (`CONFIG SET requirepass`), or admin rights taken away, leaves nothing " +
			"readable: the entry of `user default` says so and the plan replaces the master, which starts again from " +
			"its files (see `keep_data_on_destroy` for what the destroy half waits for). Not managed here: the " +
			"users of `redlock_users` (hosts only: it refuses masters without an ACL file, which `redlock_master` " +
			"does not write), and settings the kit never sets (they keep the server's defaults).",
	}
}

// managedToModel is m as the attribute's value; nil is null.
func managedToModel(m local.Managed) types.Map {
	if m == nil {
		return types.MapNull(types.StringType)
	}
	vals := make(map[string]attr.Value, len(m))
	for k, v := range m {
		vals[k] = types.StringValue(v)
	}
	return types.MapValueMust(types.StringType, vals)
}

// managedFromModel is the attribute's value as local.Managed; nil when null or unknown.
func managedFromModel(v types.Map) local.Managed {
	if !known(v) {
		return nil
	}
	out := local.Managed{}
	for k, e := range v.Elements() {
		if s, ok := e.(types.String); ok {
			out[k] = s.ValueString()
		}
	}
	return out
}

// privateData is the part of the framework's private state the resource uses.
type privateData interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// appliedManaged is what the last apply left (nil when unknown: a state from an older
// provider, or an import before its first refresh).
func appliedManaged(ctx context.Context, p privateData) local.Managed {
	if p == nil {
		return nil
	}
	raw, diags := p.GetKey(ctx, privateManagedKey)
	if diags.HasError() || len(raw) == 0 {
		return nil
	}
	var m local.Managed
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil
	}
	return m
}

// setAppliedManaged records m as what the last apply left.
func setAppliedManaged(ctx context.Context, p privateData, m local.Managed) diag.Diagnostics {
	if p == nil || m == nil {
		return nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		var diags diag.Diagnostics
		diags.AddError("Cannot record managed_settings", err.Error())
		return diags
	}
	return p.SetKey(ctx, privateManagedKey, raw)
}

// readManaged reads the live managed_settings of the running master lm describes into m; a
// master that cannot be read keeps what m had, with a warning.
func readManaged(ctx context.Context, spec master.Spec, m *masterModel, diags *diag.Diagnostics) {
	live, err := local.ReadManaged(ctx, spec)
	if err != nil {
		if m.ManagedSettings.IsUnknown() {
			m.ManagedSettings = types.MapNull(types.StringType) // a create or update stores no unknown
		}
		diags.AddWarning("Cannot read managed_settings",
			fmt.Sprintf("redlock_master %q at %s: %v. Its users and settings could not be checked for drift.",
				m.Name.ValueString(), spec.Addr(), err))
		return
	}
	m.ManagedSettings = managedToModel(live)
}

// planManaged proposes managed_settings: what the last apply left, when the plan changes no
// user; unknown when it does (the apply reads the result); what the state has when nothing
// was recorded (a state from an older provider whose master could not be read yet). An
// admin refused by the server makes the plan replace the master (nothing can be set back
// over a connection the server refuses).
func planManaged(ctx context.Context, private privateData, state, plan *masterModel, resp *resource.ModifyPlanResponse) {
	if live := managedFromModel(state.ManagedSettings); live[local.ManagedUserKey("default")] == local.AdminRefused {
		plan.ManagedSettings = types.MapUnknown(types.StringType)
		resp.RequiresReplace = append(resp.RequiresReplace, path.Root(managedAttribute))
		resp.Diagnostics.AddAttributeWarning(path.Root(managedAttribute), "Admin refused by the master: replacing it",
			fmt.Sprintf("redlock_master %q: the master refuses its admin password or rights (changed on the server, e.g. "+
				"CONFIG SET requirepass). Nothing can be set back over such a connection, so the plan replaces the master: "+
				"the destroy stops it (by signal, cleanly) and the create starts it again from its files.", plan.Name.ValueString()))
		return
	}
	applied := appliedManaged(ctx, private)
	switch {
	case usersChange(state, plan):
		plan.ManagedSettings = types.MapUnknown(types.StringType)
	case applied == nil:
		plan.ManagedSettings = state.ManagedSettings
	default:
		plan.ManagedSettings = managedToModel(applied)
	}
}

// usersChange reports whether the plan changes (or cannot yet say whether it changes) a user
// of the master or a password.
func usersChange(state, plan *masterModel) bool {
	for _, pair := range [][2]attr.Value{
		{plan.LockUser, state.LockUser}, {plan.LockPassword, state.LockPassword}, {plan.LockUsers, state.LockUsers},
		{plan.MonitorUser, state.MonitorUser}, {plan.MonitorPassword, state.MonitorPassword},
		{plan.AdminPassword, state.AdminPassword}, {plan.PasswordWOVersion, state.PasswordWOVersion},
	} {
		if pair[0].IsUnknown() || !pair[0].Equal(pair[1]) {
			return true
		}
	}
	return false
}

// managedRepair is what an update must set back: what the last apply left, when the live
// values (state) differ from it; nil when nothing drifted.
func managedRepair(ctx context.Context, private privateData, state *masterModel) local.Managed {
	applied := appliedManaged(ctx, private)
	if applied == nil || maps.Equal(applied, managedFromModel(state.ManagedSettings)) {
		return nil
	}
	return applied
}
