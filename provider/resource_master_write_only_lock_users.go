package provider

import (
	"context"
	"fmt"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/master"
)

// Write-only passwords of the tenants (lock_users): a map by lock user name beside
// lock_users, whose entries then leave password out. Like the other write-only passwords
// they are applied at create and when password_wo_version changes; a tenant added later
// gets its password at once (it has none to keep). The master's redlock-master.json keeps
// them for refresh, updates and destroy.
const lockUserPasswordsWOAttribute = "lock_user_passwords_wo"

func lockUserPasswordsWOSchema() schema.Attribute {
	return schema.MapAttribute{
		Optional: true, WriteOnly: true, Sensitive: true, ElementType: types.StringType,
		Validators: []validator.Map{mapvalidator.ValueStringsAre(lockUserPasswordValidators()...)},
		MarkdownDescription: "Write-only passwords of the `lock_users` (Terraform >= 1.11), by lock user name: " +
			"`{ billing = ephemeral.redlock_credentials.billing.lock_password }`. Never stored in the plan or the state; " +
			"each `lock_users` entry then leaves `password` out (give a user's password one way). Needs `" +
			passwordWOVersionAttribute + "`. Applied at create, for a lock user added to `lock_users`, and whenever `" +
			passwordWOVersionAttribute + "` changes (in place), never otherwise: Terraform cannot see a change of a " +
			"write-only value. The master keeps them in its data dir's 0600 `redlock-master.json`.",
	}
}

// readLockUserPasswordsWO is lock_user_passwords_wo from the configuration (nil when not
// set); known is false when the map or a value is unknown.
func readLockUserPasswordsWO(ctx context.Context, cfg tfsdk.Config) (passwords map[string]string, known bool, diags diag.Diagnostics) {
	var v types.Map
	if diags = cfg.GetAttribute(ctx, path.Root(lockUserPasswordsWOAttribute), &v); diags.HasError() || v.IsNull() {
		return nil, !diags.HasError(), diags
	}
	if v.IsUnknown() {
		return nil, false, diags
	}
	passwords = map[string]string{}
	known = true
	for name, e := range v.Elements() {
		s, ok := e.(types.String)
		if !ok || s.IsUnknown() {
			known = false
			continue
		}
		passwords[name] = s.ValueString()
	}
	return passwords, known, diags
}

// validateLockUserPasswordsWO: every lock user has its password exactly one way, and the
// write-only map names no user lock_users lacks.
func validateLockUserPasswordsWO(ctx context.Context, cfg tfsdk.Config, diags *diag.Diagnostics) {
	var lockUsers types.Map
	var v types.Map
	diags.Append(cfg.GetAttribute(ctx, path.Root("lock_users"), &lockUsers)...)
	diags.Append(cfg.GetAttribute(ctx, path.Root(lockUserPasswordsWOAttribute), &v)...)
	if diags.HasError() || lockUsers.IsUnknown() || v.IsUnknown() {
		return
	}
	entries := map[string]lockUserModel{}
	if !lockUsers.IsNull() {
		if diags.Append(lockUsers.ElementsAs(ctx, &entries, false)...); diags.HasError() {
			return
		}
	}
	wo := v.Elements()
	for _, name := range sortedKeys(entries) {
		_, given := wo[name]
		switch pw := entries[name].Password; {
		case pw.IsNull() && !given:
			diags.AddAttributeError(path.Root("lock_users").AtMapKey(name).AtName("password"), "Lock user without a password",
				fmt.Sprintf("lock_users[%q] has no password: set lock_users[%q].password, or (kept out of the state, "+
					"Terraform >= 1.11) %s[%q].", name, name, lockUserPasswordsWOAttribute, name))
		case !pw.IsNull() && given:
			diags.AddAttributeError(path.Root(lockUserPasswordsWOAttribute).AtMapKey(name), "Conflicting secret arguments",
				fmt.Sprintf("lock_users[%q].password and %s[%q] are both set: give the password one way. Keep %s[%q] "+
					"(never stored in state) and remove lock_users[%q].password, or remove %s[%q].",
					name, lockUserPasswordsWOAttribute, name, lockUserPasswordsWOAttribute, name, name, lockUserPasswordsWOAttribute, name))
		}
	}
	for _, name := range sortedKeys(wo) {
		if _, ok := entries[name]; !ok {
			diags.AddAttributeError(path.Root(lockUserPasswordsWOAttribute).AtMapKey(name), "Password for an unknown lock user",
				fmt.Sprintf("%s[%q] is set but lock_users has no %q: add it to lock_users, or remove it from %s.",
					lockUserPasswordsWOAttribute, name, name, lockUserPasswordsWOAttribute))
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// setLockUserPasswords puts passwords into m.LockUsers for the entries with none (given
// write-only); apply says which of them to set.
func setLockUserPasswords(m *masterModel, passwords map[string]string, apply func(name string) bool) {
	if !known(m.LockUsers) {
		return
	}
	elems := map[string]attr.Value{}
	for name, e := range m.LockUsers.Elements() {
		o := e.(types.Object)
		attrs := o.Attributes()
		if pw, ok := passwords[name]; ok && attrs["password"].IsNull() && apply(name) {
			attrs = copyAttrs(attrs)
			attrs["password"] = types.StringValue(pw)
		}
		elems[name] = types.ObjectValueMust(lockUserAttrTypes, attrs)
	}
	m.LockUsers = types.MapValueMust(types.ObjectType{AttrTypes: lockUserAttrTypes}, elems)
}

// forgetLockUserPasswords nulls the passwords of the entries given write-only before the
// state is written.
func forgetLockUserPasswords(m *masterModel, passwords map[string]string) {
	if !known(m.LockUsers) || len(passwords) == 0 {
		return
	}
	elems := map[string]attr.Value{}
	for name, e := range m.LockUsers.Elements() {
		attrs := e.(types.Object).Attributes()
		if _, ok := passwords[name]; ok {
			attrs = copyAttrs(attrs)
			attrs["password"] = types.StringNull()
		}
		elems[name] = types.ObjectValueMust(lockUserAttrTypes, attrs)
	}
	m.LockUsers = types.MapValueMust(types.ObjectType{AttrTypes: lockUserAttrTypes}, elems)
}

func copyAttrs(a map[string]attr.Value) map[string]attr.Value {
	out := make(map[string]attr.Value, len(a))
	for k, v := range a {
		out[k] = v
	}
	return out
}

// lockUserWriteOnlyInState reports whether state's lock_users has name with a password
// given write-only (null there): such a user keeps the one the data dir holds until a rotation.
func lockUserWriteOnlyInState(state *masterModel, name string) bool {
	if !known(state.LockUsers) {
		return false
	}
	e, ok := state.LockUsers.Elements()[name]
	if !ok {
		return false
	}
	return e.(types.Object).Attributes()["password"].IsNull()
}

// fillStoredLockUserPasswords gives the users with no password in m (given write-only) the
// one the master's data dir keeps; a user with none there either is an error.
func fillStoredLockUserPasswords(m *masterModel, users []master.LockUser) (diags diag.Diagnostics) {
	var stored map[string]string
	for i := range users {
		if users[i].Password != "" {
			continue
		}
		if stored == nil {
			stored = storedLockUserPasswords(m)
		}
		if users[i].Password = stored[users[i].Name]; users[i].Password == "" {
			diags.AddAttributeError(path.Root(lockUserPasswordsWOAttribute).AtMapKey(users[i].Name), "Lock user without a password",
				fmt.Sprintf("lock_users[%q] has no password and the master's data dir keeps none: set %s[%q] and raise %s.",
					users[i].Name, lockUserPasswordsWOAttribute, users[i].Name, passwordWOVersionAttribute))
		}
	}
	return diags
}

// storedLockUserPasswords are the tenants' passwords the master in m's data dir runs with.
func storedLockUserPasswords(m *masterModel) map[string]string {
	out := map[string]string{}
	for _, u := range storedSpec(m).LockUsers {
		out[u.Name] = u.Password
	}
	return out
}
