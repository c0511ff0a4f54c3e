package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/master/local"
)

// Write-only passwords (Terraform >= 1.11): the configuration hands them to the provider,
// which never returns them, so they are in neither plan nor state. The master's own files
// in its data dir (supervisor.json and redlock-master.json, both 0600 in a 0700 dir) keep
// what refresh, update and destroy need to reach it. Terraform sends a write-only value on
// every plan and apply but cannot tell whether it changed, so the provider applies it only
// at create and when password_wo_version changes.
const (
	adminPasswordWOAttribute   = "admin_password_wo"
	lockPasswordWOAttribute    = "lock_password_wo"
	passwordWOVersionAttribute = "password_wo_version"
)

// writeOnlyAttributes are redlock_master's write-only password arguments and their version.
func writeOnlyAttributes(passwordValidators []validator.String) map[string]schema.Attribute {
	wo := func(user, inState string) schema.StringAttribute {
		return schema.StringAttribute{
			Optional: true, WriteOnly: true, Sensitive: true, Validators: passwordValidators,
			MarkdownDescription: "Write-only password of " + user + " (Terraform >= 1.11): like `" + inState + "`, but never " +
				"stored in the plan or the state; it may come from an ephemeral value (e.g. `ephemeral.redlock_credentials`). " +
				"Conflicts with `" + inState + "`; needs `" + passwordWOVersionAttribute + "`. Applied at create and whenever `" +
				passwordWOVersionAttribute + "` changes (in place), never otherwise: Terraform cannot see a change of a " +
				"write-only value. The master keeps it in its data dir's 0600 files, which refresh, drift repair and destroy use.",
		}
	}
	return map[string]schema.Attribute{
		adminPasswordWOAttribute: wo("the admin (`default`) user", "admin_password"),
		lockPasswordWOAttribute:  wo("`lock_user`", "lock_password"),
		passwordWOVersionAttribute: schema.Int64Attribute{
			Optional: true,
			MarkdownDescription: "Version of `" + adminPasswordWOAttribute + "` and `" + lockPasswordWOAttribute + "`, " +
				"required with either. Change it (e.g. `1` to `2`) to apply their current values: the passwords are then " +
				"changed in place, the admin password last.",
		},
	}
}

// writeOnlyPasswords are the write-only values of a configuration: null when the argument is
// not set, possibly unknown at plan time when it is.
type writeOnlyPasswords struct {
	Admin, Lock types.String
}

func (w writeOnlyPasswords) adminSet() bool { return !w.Admin.IsNull() }
func (w writeOnlyPasswords) lockSet() bool  { return !w.Lock.IsNull() }

// readWriteOnly reads the write-only arguments from the configuration: the only place
// they ever are.
func readWriteOnly(ctx context.Context, cfg tfsdk.Config) (writeOnlyPasswords, diag.Diagnostics) {
	var w writeOnlyPasswords
	diags := cfg.GetAttribute(ctx, path.Root(adminPasswordWOAttribute), &w.Admin)
	diags.Append(cfg.GetAttribute(ctx, path.Root(lockPasswordWOAttribute), &w.Lock)...)
	return w, diags
}

// validateWriteOnly refuses what cannot work: a password given both ways, write-only
// passwords without a version (they could never be rotated), a version with nothing to
// version, and the same password for the admin and the lock user.
func validateWriteOnly(ctx context.Context, cfg tfsdk.Config, diags *diag.Diagnostics) {
	w, d := readWriteOnly(ctx, cfg)
	var admin, lock types.String
	var version types.Int64
	d.Append(cfg.GetAttribute(ctx, path.Root("admin_password"), &admin)...)
	d.Append(cfg.GetAttribute(ctx, path.Root("lock_password"), &lock)...)
	d.Append(cfg.GetAttribute(ctx, path.Root(passwordWOVersionAttribute), &version)...)
	if diags.Append(d...); d.HasError() {
		return
	}
	for _, pair := range [][2]string{{"admin_password", adminPasswordWOAttribute}, {"lock_password", lockPasswordWOAttribute}} {
		inState, wo := admin, w.Admin
		if pair[0] == "lock_password" {
			inState, wo = lock, w.Lock
		}
		if !inState.IsNull() && !wo.IsNull() {
			diags.AddAttributeError(path.Root(pair[1]), "Conflicting password arguments",
				fmt.Sprintf("%s and %s are both set: give the password one way. Keep %s (never stored in state, Terraform "+
					">= 1.11) and remove %s, or remove %s.", pair[0], pair[1], pair[1], pair[0], pair[1]))
		}
	}
	switch {
	case (w.adminSet() || w.lockSet()) && version.IsNull():
		diags.AddAttributeError(path.Root(passwordWOVersionAttribute), "Missing password_wo_version",
			fmt.Sprintf("%s and %s need %s: Terraform never stores write-only values, so the provider applies them only "+
				"at create and when %s changes. Set %s = 1, and raise it to rotate the passwords.",
				adminPasswordWOAttribute, lockPasswordWOAttribute, passwordWOVersionAttribute, passwordWOVersionAttribute,
				passwordWOVersionAttribute))
	case !w.adminSet() && !w.lockSet() && !version.IsNull():
		diags.AddAttributeError(path.Root(passwordWOVersionAttribute), "password_wo_version without write-only passwords",
			fmt.Sprintf("%s versions %s and %s, and neither is set: set them, or remove %s.",
				passwordWOVersionAttribute, adminPasswordWOAttribute, lockPasswordWOAttribute, passwordWOVersionAttribute))
	}
	if known(w.Admin) && known(w.Lock) && w.Admin.ValueString() == w.Lock.ValueString() {
		diags.AddAttributeError(path.Root(lockPasswordWOAttribute), "Lock password equals the admin password",
			fmt.Sprintf("%s must differ from %s: lock clients must not be able to act as the admin.",
				lockPasswordWOAttribute, adminPasswordWOAttribute))
	}
}

// planWriteOnly keeps a password given write-only out of the plan (and so out of the state):
// admin_password or lock_password is then null.
func planWriteOnly(ctx context.Context, cfg tfsdk.Config, plan *masterModel) diag.Diagnostics {
	w, diags := readWriteOnly(ctx, cfg)
	if w.adminSet() {
		plan.AdminPassword = types.StringNull()
	}
	if w.lockSet() {
		plan.LockPassword = types.StringNull()
	}
	return diags
}

// createWriteOnly puts the write-only passwords into the model a create starts the master
// from; forgetWriteOnly takes them out again before the state is written.
func createWriteOnly(w writeOnlyPasswords, m *masterModel) {
	if known(w.Admin) {
		m.AdminPassword = w.Admin
	}
	if known(w.Lock) {
		m.LockPassword = w.Lock
	}
}

func forgetWriteOnly(w writeOnlyPasswords, m *masterModel) {
	if w.adminSet() {
		m.AdminPassword = types.StringNull()
	}
	if w.lockSet() {
		m.LockPassword = types.StringNull()
	}
}

// updateWriteOnly fills in the passwords an update changes the master to: the write-only
// ones when password_wo_version changed, else those it has now (from the state, or from its
// data dir when they are not in the state).
func updateWriteOnly(w writeOnlyPasswords, state, plan *masterModel) {
	rotate := !plan.PasswordWOVersion.Equal(state.PasswordWOVersion)
	admin, lock := currentSecrets(state)
	switch {
	case rotate && known(w.Admin):
		plan.AdminPassword = w.Admin
	case !known(plan.AdminPassword):
		plan.AdminPassword = types.StringValue(admin)
	}
	switch {
	case rotate && known(w.Lock):
		plan.LockPassword = w.Lock
	case !known(plan.LockPassword):
		plan.LockPassword = types.StringValue(lock)
	}
}

// currentSecrets are the passwords the master in state m runs with: those in the state, or,
// for a password given write-only (null in the state), the one its data dir's files keep.
func currentSecrets(m *masterModel) (admin, lock string) {
	admin, lock = m.AdminPassword.ValueString(), m.LockPassword.ValueString()
	if admin != "" && lock != "" {
		return admin, lock
	}
	dir := m.ID.ValueString()
	if dir == "" {
		dir = m.DataDir.ValueString()
	}
	prevAdmin, prevLock := local.PreviousSecrets(dir, m.LockUser.ValueString())
	return or(admin, prevAdmin), or(lock, prevLock)
}
