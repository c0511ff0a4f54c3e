package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// A host checks passwords against their SHA-256 hashes only, so redlock_host_config can
// take the hashes instead of the passwords (`*_sha256`): then no password is among its
// arguments, which Terraform stores in the state. They come from a redlock_credentials with
// file (its `*_sha256` attributes), or from sha256() of a password of your own.

// hostLockUserModel is one of redlock_host_config's lock_users: the password, or its hash.
type hostLockUserModel struct {
	KeyPrefix      types.String `tfsdk:"key_prefix"`
	Password       types.String `tfsdk:"password"`
	PasswordSHA256 types.String `tfsdk:"password_sha256"`
	AllowEval      types.Bool   `tfsdk:"allow_eval"`
}

func sha256Validators() []validator.String {
	return []validator.String{stringvalidator.RegexMatches(sha256Pattern,
		"must be the lower-case hex SHA-256 of the password (64 characters, as sha256() returns)")}
}

// hostConfigHashAttributes are the `*_sha256` arguments beside the passwords.
func hostConfigHashAttributes() map[string]schema.Attribute {
	hash := func(of string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Validators: sha256Validators(),
			MarkdownDescription: "Hex SHA-256 of " + of + ", instead of the password (e.g. a `redlock_credentials` with " +
				"`file`: its `*_sha256` attributes): the host needs no more, and the state then holds no password."}
	}
	return map[string]schema.Attribute{
		"admin_password_sha256":   hash("the admin password"),
		"lock_password_sha256":    hash("`lock_user`'s password"),
		"monitor_password_sha256": hash("`monitor_user`'s password (not with `exporters`, whose config needs the password)"),
	}
}

// hostLockUsersAsPasswords converts lock_users to the form the shared lock-user code reads,
// a user given by its hash carrying it as redisconf.HashedPassword, and refuses a user with
// both or neither.
func hostLockUsersAsPasswords(ctx context.Context, v types.Map, diags *diag.Diagnostics) types.Map {
	objType := types.ObjectType{AttrTypes: lockUserAttrTypes}
	if v.IsNull() || v.IsUnknown() {
		if v.IsUnknown() {
			return types.MapUnknown(objType)
		}
		return types.MapNull(objType)
	}
	entries := map[string]hostLockUserModel{}
	if diags.Append(v.ElementsAs(ctx, &entries, false)...); diags.HasError() {
		return types.MapUnknown(objType)
	}
	elems := map[string]attr.Value{}
	for name, e := range entries {
		password := e.Password
		switch {
		case known(e.Password) && known(e.PasswordSHA256):
			diags.AddAttributeError(path.Root("lock_users").AtMapKey(name), "Password given twice",
				fmt.Sprintf("lock_users[%q] has password and password_sha256: give one (the hash keeps the password out of the state).", name))
		case e.Password.IsNull() && e.PasswordSHA256.IsNull():
			diags.AddAttributeError(path.Root("lock_users").AtMapKey(name), "No password",
				fmt.Sprintf("lock_users[%q] has neither password nor password_sha256: set one.", name))
		case e.PasswordSHA256.IsUnknown():
			password = types.StringUnknown()
		case !e.PasswordSHA256.IsNull():
			password = types.StringValue(redisconf.HashedPassword(e.PasswordSHA256.ValueString()))
		}
		elems[name] = types.ObjectValueMust(lockUserAttrTypes, map[string]attr.Value{
			"key_prefix": e.KeyPrefix, "password": password, "allow_eval": e.AllowEval})
	}
	return types.MapValueMust(objType, elems)
}

// passwordOrHash is a password argument and its `_sha256` twin as one Spec password
// (redisconf.HashedPassword for a hash), refusing both at once; null when neither is set.
// A value still unknown (a module's input while Terraform validates it) is never refused.
func passwordOrHash(plain, hash types.String, name string, diags *diag.Diagnostics) types.String {
	switch {
	case known(plain) && known(hash):
		diags.AddAttributeError(path.Root(name+"_sha256"), "Password given twice",
			fmt.Sprintf("%s and %s_sha256 are both set: give one (the hash keeps the password out of the state).", name, name))
		return plain
	case hash.IsUnknown():
		return types.StringUnknown()
	case !hash.IsNull():
		return types.StringValue(redisconf.HashedPassword(hash.ValueString()))
	}
	return plain
}

// hostPasswords are the admin, lock and monitoring passwords of m, each the password or its
// hash, with what is wrong about them: a missing admin password. (With exporters, the host
// makes redis_exporter's password itself: the monitoring hash is enough.)
func hostPasswords(m *hostConfigModel, diags *diag.Diagnostics) (admin, lock, monitor types.String) {
	admin = passwordOrHash(m.AdminPassword, m.AdminPasswordSHA256, "admin_password", diags)
	lock = passwordOrHash(m.LockPassword, m.LockPasswordSHA256, "lock_password", diags)
	monitor = passwordOrHash(m.MonitorPassword, m.MonitorPasswordSHA256, "monitor_password", diags)
	if admin.IsNull() {
		diags.AddAttributeError(path.Root("admin_password"), "No admin password",
			"Set admin_password_sha256 (from a redlock_credentials with file: nothing secret in the state) or admin_password.")
	}
	return admin, lock, monitor
}
