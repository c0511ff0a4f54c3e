package provider

import (
	"context"
	"fmt"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/master"
)

// lock_users: one restricted lock user per application (tenant), each confined to its own
// key prefix. redlock_master and redlock_host_config share the attribute and its checks.

// lockUserModel is one entry of lock_users.
type lockUserModel struct {
	KeyPrefix types.String `tfsdk:"key_prefix"`
	Password  types.String `tfsdk:"password"`
	AllowEval types.Bool   `tfsdk:"allow_eval"`
}

var lockUserAttrTypes = map[string]attr.Type{"key_prefix": types.StringType, "password": types.StringType, "allow_eval": types.BoolType}

// allowEvalDescription is lock_users.*.allow_eval, wherever users are defined.
const allowEvalDescription = "Also allow `EVAL`, `EVALSHA`, `SCRIPT LOAD` and `EXISTS`, for other Redlock clients " +
	"(redsync v4, node-redlock 4 and 5: see the other-clients guide) that lock and release with Lua of their own; the kit's clients do not need it. Weaker: " +
	"such a user can run any script, busy ones included (stopped only by the busy-reply threshold and `SCRIPT KILL`), " +
	"over any key it names inside its prefix; keys outside the prefix stay refused. Default `false`."

const lockUsersDescription = "Lock users, one per application (tenant), by ACL user name: each may touch only keys " +
	"and pub/sub channels that start with its `key_prefix` (its locks, fencing registers and release channels), so " +
	"one application cannot read, delete, overwrite, expire or script over another's locks. Clients that share one " +
	"user can always break each other's locks (ACLs check commands and key names, not values): give each application " +
	"its own. When set, it replaces `lock_user`/`lock_password` (leave those out). No prefix may start with another " +
	"(end each with `:`). Changed in place (`ACL SETUSER`, `ACL DELUSER` for a removed user, which disconnects its clients)."

// lockUsersValidators are the per-entry checks the schema can make; cross-entry checks
// (overlapping prefixes, shared passwords) run in checkLockUsersAtPlan.
func lockUsersValidators() []validator.Map {
	return []validator.Map{
		mapvalidator.SizeAtLeast(1),
		mapvalidator.KeysAre(
			stringvalidator.RegexMatches(userPattern, "must be 1-64 letters, digits, '_' or '-' (an ACL user name)"),
			stringvalidator.NoneOf("default"),
		),
	}
}

func lockUserPasswordValidators() []validator.String {
	return []validator.String{
		stringvalidator.LengthAtLeast(master.MinPasswordLength),
		stringvalidator.RegexMatches(noSpacePattern, "must not contain whitespace or control characters"),
	}
}

// lockUsersFromModel returns the entries of v sorted by name (an unknown password is "").
// known is false when v or a prefix is unknown.
func lockUsersFromModel(ctx context.Context, v types.Map) (users []master.LockUser, known bool, diags diag.Diagnostics) {
	if v.IsNull() {
		return nil, true, nil
	}
	if v.IsUnknown() {
		return nil, false, nil
	}
	entries := map[string]lockUserModel{}
	if diags = v.ElementsAs(ctx, &entries, false); diags.HasError() {
		return nil, false, diags
	}
	known = true
	for name, e := range entries {
		if e.KeyPrefix.IsUnknown() {
			known = false
		}
		users = append(users, master.LockUser{Name: name, KeyPrefix: e.KeyPrefix.ValueString(), Password: e.Password.ValueString(),
			AllowEval: e.AllowEval.ValueBool()})
	}
	sort.Slice(users, func(i, j int) bool { return users[i].Name < users[j].Name })
	return users, known, nil
}

// lockUsersToModel is the lock_users value for users (null when none).
func lockUsersToModel(users []master.LockUser) types.Map {
	objType := types.ObjectType{AttrTypes: lockUserAttrTypes}
	if len(users) == 0 {
		return types.MapNull(objType)
	}
	elems := map[string]attr.Value{}
	for _, u := range users {
		elems[u.Name] = types.ObjectValueMust(lockUserAttrTypes, map[string]attr.Value{
			"key_prefix": types.StringValue(u.KeyPrefix), "password": types.StringValue(u.Password),
			"allow_eval": types.BoolValue(u.AllowEval)})
	}
	return types.MapValueMust(objType, elems)
}

// checkLockUsersAtPlan refuses lock_users that would not isolate the tenants, and
// lock_user/lock_password next to lock_users (they would define one more user, with every
// key). lockUser and lockPassword are the configured values (null: left out).
func checkLockUsersAtPlan(ctx context.Context, v types.Map, lockUser, lockPassword, adminPassword types.String, diags *diag.Diagnostics) {
	users, known, d := lockUsersFromModel(ctx, v)
	if diags.Append(d...); d.HasError() || !known || len(users) == 0 {
		return
	}
	for name, attrV := range map[string]types.String{"lock_user": lockUser, "lock_password": lockPassword} {
		if !attrV.IsNull() {
			diags.AddAttributeError(path.Root(name), name+" cannot be used with lock_users",
				fmt.Sprintf("%s is set and so is lock_users: with lock_users every lock user is an entry there, with its "+
					"own key_prefix and password; %s would add a user that reaches every tenant's keys. Remove %s.", name, name, name))
		}
	}
	admin := ""
	if adminPassword.IsNull() || !adminPassword.IsUnknown() {
		admin = adminPassword.ValueString()
	}
	for _, err := range master.CheckLockUsers(users, admin) {
		for _, fe := range master.FieldErrors(err) {
			diags.AddAttributeError(path.Root("lock_users"), fe.Summary, fe.Detail)
		}
	}
}
