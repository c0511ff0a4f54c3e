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

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/local"
)

// Write-only secrets (Terraform >= 1.11): the configuration hands them to the provider,
// which never returns them, so they are in neither plan nor state. The master's own files
// in its data dir (supervisor.json, redlock-master.json and tls-server.key, 0600 in a 0700
// dir) keep what refresh, update and destroy need to reach it. Terraform sends a write-only
// value on every plan and apply but cannot tell whether it changed, so the provider applies
// a password only at create and when password_wo_version changes. The TLS key needs no
// version: it belongs to tls_cert_pem, which is in the state, so it changes with it.
const (
	adminPasswordWOAttribute   = "admin_password_wo"
	lockPasswordWOAttribute    = "lock_password_wo"
	monitorPasswordWOAttribute = "monitor_password_wo"
	passwordWOVersionAttribute = "password_wo_version"
	tlsKeyPEMWOAttribute       = "tls_key_pem_wo"
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
		adminPasswordWOAttribute:   wo("the admin (`default`) user", "admin_password"),
		lockPasswordWOAttribute:    wo("`lock_user`", "lock_password"),
		monitorPasswordWOAttribute: wo("`monitor_user` (the monitoring user exists while it is set)", "monitor_password"),
		passwordWOVersionAttribute: schema.Int64Attribute{
			Optional: true,
			MarkdownDescription: "Version of `" + adminPasswordWOAttribute + "`, `" + lockPasswordWOAttribute + "`, `" +
				monitorPasswordWOAttribute + "` and `lock_user_passwords_wo`, required with any of them. Change it (e.g. `1` to `2`) to apply their current " +
				"values: the passwords are then changed in place, the admin password last. To remove the monitoring user " +
				"given write-only, remove `" + monitorPasswordWOAttribute + "` and change it too.",
		},
		tlsKeyPEMWOAttribute: schema.StringAttribute{
			Optional: true, WriteOnly: true, Sensitive: true,
			MarkdownDescription: "Write-only PEM private key of `tls_cert_pem` (Terraform >= 1.11): like `tls_key_pem`, but " +
				"never stored in the plan or the state (e.g. from an ephemeral value, or `redlock_server_certificate`'s key " +
				"read through a file the state does not hold). Conflicts with `tls_key_pem`. Needs no version: it is applied " +
				"at create and with every in-place change, and plan checks that it is the key of `tls_cert_pem`, so a " +
				"certificate rotation (a new `tls_cert_pem`, in the state) brings the new key with it. The master keeps it " +
				"in `<data_dir>/tls-server.key` (0600), which refresh, drift repair and destroy use.",
		},
	}
}

// writeOnlyPasswords are the write-only values of a configuration: null when the argument is
// not set, possibly unknown at plan time when it is.
type writeOnlyPasswords struct {
	Admin, Lock, Monitor, TLSKey types.String
	// LockUsers is lock_user_passwords_wo (nil when not set or not yet known).
	LockUsers    map[string]string
	lockUsersSet bool
}

func (w writeOnlyPasswords) adminSet() bool   { return !w.Admin.IsNull() }
func (w writeOnlyPasswords) lockSet() bool    { return !w.Lock.IsNull() }
func (w writeOnlyPasswords) monitorSet() bool { return !w.Monitor.IsNull() }
func (w writeOnlyPasswords) tlsKeySet() bool  { return !w.TLSKey.IsNull() }

// versioned reports whether a password that password_wo_version versions is set.
func (w writeOnlyPasswords) versioned() bool {
	return w.adminSet() || w.lockSet() || w.monitorSet() || w.lockUsersSet
}

// readWriteOnly reads the write-only arguments from the configuration: the only place
// they ever are.
func readWriteOnly(ctx context.Context, cfg tfsdk.Config) (writeOnlyPasswords, diag.Diagnostics) {
	var w writeOnlyPasswords
	diags := cfg.GetAttribute(ctx, path.Root(adminPasswordWOAttribute), &w.Admin)
	diags.Append(cfg.GetAttribute(ctx, path.Root(lockPasswordWOAttribute), &w.Lock)...)
	diags.Append(cfg.GetAttribute(ctx, path.Root(monitorPasswordWOAttribute), &w.Monitor)...)
	diags.Append(cfg.GetAttribute(ctx, path.Root(tlsKeyPEMWOAttribute), &w.TLSKey)...)
	var users types.Map
	diags.Append(cfg.GetAttribute(ctx, path.Root(lockUserPasswordsWOAttribute), &users)...)
	w.lockUsersSet = !users.IsNull()
	passwords, _, d := readLockUserPasswordsWO(ctx, cfg)
	w.LockUsers = passwords
	diags.Append(d...)
	return w, diags
}

// validateWriteOnly refuses what cannot work: a password given both ways, write-only
// passwords without a version (they could never be rotated), a version with nothing to
// version, and the same password for the admin and the lock user.
func validateWriteOnly(ctx context.Context, cfg tfsdk.Config, diags *diag.Diagnostics) {
	w, d := readWriteOnly(ctx, cfg)
	var version types.Int64
	d.Append(cfg.GetAttribute(ctx, path.Root(passwordWOVersionAttribute), &version)...)
	plain := map[string]types.String{}
	for _, name := range []string{"admin_password", "lock_password", "monitor_password", "tls_key_pem"} {
		var v types.String
		d.Append(cfg.GetAttribute(ctx, path.Root(name), &v)...)
		plain[name] = v
	}
	if diags.Append(d...); d.HasError() {
		return
	}
	for _, pair := range []struct {
		plain, wo string
		value     types.String
	}{
		{"admin_password", adminPasswordWOAttribute, w.Admin}, {"lock_password", lockPasswordWOAttribute, w.Lock},
		{"monitor_password", monitorPasswordWOAttribute, w.Monitor}, {"tls_key_pem", tlsKeyPEMWOAttribute, w.TLSKey},
	} {
		if !plain[pair.plain].IsNull() && !pair.value.IsNull() {
			diags.AddAttributeError(path.Root(pair.wo), "Conflicting secret arguments",
				fmt.Sprintf("%s and %s are both set: give the secret one way. Keep %s (never stored in state, Terraform "+
					">= 1.11) and remove %s, or remove %s.", pair.plain, pair.wo, pair.wo, pair.plain, pair.wo))
		}
	}
	versioned := fmt.Sprintf("%s, %s, %s and %s", adminPasswordWOAttribute, lockPasswordWOAttribute, monitorPasswordWOAttribute,
		lockUserPasswordsWOAttribute)
	validateLockUserPasswordsWO(ctx, cfg, diags)
	switch {
	case w.versioned() && version.IsNull():
		diags.AddAttributeError(path.Root(passwordWOVersionAttribute), "Missing password_wo_version",
			fmt.Sprintf("%s need %s: Terraform never stores write-only values, so the provider applies them only "+
				"at create and when %s changes. Set %s = 1, and raise it to rotate the passwords.",
				versioned, passwordWOVersionAttribute, passwordWOVersionAttribute, passwordWOVersionAttribute))
	case !w.versioned() && !version.IsNull():
		diags.AddAttributeError(path.Root(passwordWOVersionAttribute), "password_wo_version without write-only passwords",
			fmt.Sprintf("%s versions %s, and none is set: set them, or remove %s.",
				passwordWOVersionAttribute, versioned, passwordWOVersionAttribute))
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
	if w.monitorSet() {
		plan.MonitorPassword = types.StringNull()
	}
	if w.tlsKeySet() {
		plan.TLSKeyPEM = types.StringNull()
	}
	return diags
}

// createWriteOnly puts the write-only secrets into the model a create starts the master
// from; forgetWriteOnly takes them out again before the state is written. A monitoring
// password given neither way is "" (no monitoring user), not null (the data dir's).
func createWriteOnly(w writeOnlyPasswords, m *masterModel) {
	if known(w.Admin) {
		m.AdminPassword = w.Admin
	}
	if known(w.Lock) {
		m.LockPassword = w.Lock
	}
	if known(w.Monitor) {
		m.MonitorPassword = w.Monitor
	} else if m.MonitorPassword.IsNull() {
		m.MonitorPassword = types.StringValue("")
	}
	if known(w.TLSKey) {
		m.TLSKeyPEM = w.TLSKey
	}
	setLockUserPasswords(m, w.LockUsers, func(string) bool { return true })
}

func forgetWriteOnly(w writeOnlyPasswords, m *masterModel) {
	if w.adminSet() {
		m.AdminPassword = types.StringNull()
	}
	if w.lockSet() {
		m.LockPassword = types.StringNull()
	}
	if w.monitorSet() || (known(m.MonitorPassword) && m.MonitorPassword.ValueString() == "") {
		m.MonitorPassword = types.StringNull()
	}
	if w.tlsKeySet() {
		m.TLSKeyPEM = types.StringNull()
	}
	forgetLockUserPasswords(m, w.LockUsers)
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
	// The monitoring password: "" removes the user; null would keep the data dir's.
	switch {
	case rotate && known(w.Monitor):
		plan.MonitorPassword = w.Monitor
	case known(plan.MonitorPassword):
		// given in the configuration
	case rotate:
		plan.MonitorPassword = types.StringValue("") // write-only removed, version raised
	case w.monitorSet() || state.MonitorPassword.IsNull():
		plan.MonitorPassword = types.StringValue(currentMonitorPassword(state))
	default:
		plan.MonitorPassword = types.StringValue("") // monitor_password removed
	}
	if known(w.TLSKey) {
		plan.TLSKeyPEM = w.TLSKey
	}
	// A tenant's write-only password: on rotation, for a new tenant, or one whose password
	// was in the state; the others keep the data dir's (localMaster reads it).
	setLockUserPasswords(plan, w.LockUsers, func(name string) bool { return rotate || !lockUserWriteOnlyInState(state, name) })
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

// currentMonitorPassword is the monitoring password the master in m runs with: the one in m,
// or, when m has none (given write-only), the one its data dir keeps ("" for none).
func currentMonitorPassword(m *masterModel) string {
	if !m.MonitorPassword.IsNull() {
		return m.MonitorPassword.ValueString()
	}
	return storedSpec(m).MonitorPassword
}

// currentTLS is the TLS material the master in m serves: masterTLS(m), with the key its data
// dir keeps when m has none (given write-only).
func currentTLS(m *masterModel) *master.TLS {
	t := masterTLS(m)
	if t != nil && t.KeyPEM == "" {
		if stored := storedSpec(m).TLS; stored != nil {
			t.KeyPEM = stored.KeyPEM
		}
	}
	return t
}

// storedSpec is what the master in m's data dir was last started or changed with (zero when
// there is none): where write-only secrets are kept.
func storedSpec(m *masterModel) master.Spec {
	dir := m.ID.ValueString()
	if dir == "" {
		dir = m.DataDir.ValueString()
	}
	l, err := local.Load(dir)
	if err != nil {
		return master.Spec{}
	}
	return l.Master.Spec
}
