package provider

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/redlock-kit/redlock-kit/internal/acl"
	"github.com/redlock-kit/redlock-kit/internal/fenceseed"
	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

var (
	_ resource.Resource                   = &usersResource{}
	_ resource.ResourceWithModifyPlan     = &usersResource{}
	_ resource.ResourceWithValidateConfig = &usersResource{}
)

// NewUsersResource manages lock users on running masters (internal/acl does the work).
// It is a resource over every endpoint, not one per master, because a user is one thing
// clients log in as everywhere: one plan shows a tenant added or a password rotated on
// the whole cluster, and the rotation's overlap is decided once.
func NewUsersResource() resource.Resource { return &usersResource{} }

type usersResource struct{}

func (r *usersResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_users"
}

func (r *usersResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = usersSchema()
}

func (r *usersResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m usersModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.AdminPassword.IsNull() == m.AdminPasswordWO.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("admin_password"), "Give the admin password one way",
			"Set exactly one of admin_password and admin_password_wo (write-only, Terraform >= 1.11).")
	}
	if !m.CACertPEM.IsNull() && !m.TLS.IsUnknown() && !m.TLS.ValueBool() {
		resp.Diagnostics.AddAttributeError(path.Root("ca_cert_pem"), "ca_cert_pem without tls",
			"ca_cert_pem is set but tls is not true: set tls = true, or remove ca_cert_pem.")
	}
	entries, known, diags := usersEntries(ctx, m.Users)
	resp.Diagnostics.Append(diags...)
	if !known {
		return
	}
	var prefixes []redisconf.LockUser
	for _, name := range sortedNames(entries) {
		e := entries[name]
		at := path.Root("users").AtMapKey(name)
		if e.PasswordWO.IsNull() == e.PasswordSHA256.IsNull() {
			resp.Diagnostics.AddAttributeError(at, "Give the password one way",
				fmt.Sprintf("users[%q]: set exactly one of password_wo (write-only, Terraform >= 1.11) and password_sha256 "+
					"(e.g. sha256(var.password)).", name))
		}
		if e.KeyPrefix.IsUnknown() {
			continue
		}
		if why := redisconf.ValidKeyPrefix(e.KeyPrefix.ValueString()); why != "" {
			resp.Diagnostics.AddAttributeError(at.AtName("key_prefix"), "Invalid key prefix",
				fmt.Sprintf("users[%q].key_prefix = %q %s.", name, e.KeyPrefix.ValueString(), why))
		}
		prefixes = append(prefixes, redisconf.LockUser{Name: name, KeyPrefix: e.KeyPrefix.ValueString()})
	}
	if a, b, overlap := redisconf.OverlappingPrefixes(prefixes); overlap {
		resp.Diagnostics.AddAttributeError(path.Root("users"), "Key prefixes overlap",
			fmt.Sprintf("users[%q].key_prefix = %q is a prefix of users[%q].key_prefix = %q: %s could read, delete and "+
				"overwrite %s's locks. Give each user a prefix no other one starts with, e.g. end every prefix with ':'.",
				a.Name, a.KeyPrefix, b.Name, b.KeyPrefix, a.Name, b.Name))
	}
}

// ModifyPlan plans each user's password hashes (the rotation's overlap) and its ACL on
// every endpoint. With a write-only admin password, refresh could not read the masters,
// so the plan does: an endpoint whose users differ is planned as unknown (an update).
func (r *usersResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	var plan, cfg usersModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	prior, diags := priorEntries(ctx, req.State)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	configured, known, diags := usersEntries(ctx, cfg.Users)
	resp.Diagnostics.Append(diags...)
	if !known || diags.HasError() {
		return
	}
	endpoints, endpointsKnown := stringList(ctx, plan.Endpoints)
	if !endpointsKnown {
		endpoints = nil
	}
	planned, users := planUsers(configured, prior, endpoints, endpointsKnown)
	checkSharedPasswords(planned, planAdminHashes(ctx, cfg, types.ListNull(types.StringType)), &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if endpointsKnown && !req.State.Raw.IsNull() && cfg.AdminPassword.IsNull() && !cfg.AdminPasswordWO.IsUnknown() {
		target, diags := usersTarget(cfg)
		resp.Diagnostics.Append(diags...)
		if diags.HasError() {
			return
		}
		markDrift(ctx, target, endpoints, users, planned, &resp.Diagnostics)
	}
	v, diags := entriesValue(planned)
	resp.Diagnostics.Append(diags...)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("users"), v)...)
	var priorAdmin types.List
	if !req.State.Raw.IsNull() {
		resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("admin_password_hashes"), &priorAdmin)...)
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("admin_password_hashes"), planAdminHashes(ctx, cfg, priorAdmin))...)
}

// planAdminHashes is the admin's side of the overlap: the configured admin password's hash,
// and the previous one while it changed since the state.
func planAdminHashes(ctx context.Context, cfg usersModel, prior types.List) types.List {
	admin := cfg.AdminPassword
	if admin.IsNull() {
		admin = cfg.AdminPasswordWO
	}
	if admin.IsUnknown() || admin.IsNull() {
		return types.ListUnknown(types.StringType)
	}
	hashes := []string{redisconf.HashPassword(admin.ValueString())}
	if previous, _ := stringList(ctx, prior); len(previous) > 0 && previous[0] != hashes[0] {
		hashes = append(hashes, previous[0])
	}
	return stringsValue(hashes)
}

// planUsers turns the configured users into their planned entries and, where everything
// is known, the users to apply. The overlap: a user whose password hash changed since the
// state accepts the new and the previous hash; one whose hash did not change accepts only
// it, which retires the previous one on the apply after a rotation.
func planUsers(configured, prior map[string]usersEntryModel, endpoints []string, endpointsKnown bool) (map[string]usersEntryModel, []acl.User) {
	planned := map[string]usersEntryModel{}
	var users []acl.User
	for _, name := range sortedNames(configured) {
		c := configured[name]
		allowEval := c.AllowEval.ValueBool() // null (left out) is the default, false
		e := usersEntryModel{KeyPrefix: c.KeyPrefix, AllowEval: types.BoolValue(allowEval), PasswordWO: types.StringNull(),
			PasswordSHA256: types.StringUnknown(), PasswordHashes: types.ListUnknown(types.StringType),
			ACL: types.MapUnknown(types.StringType)}
		switch {
		case !c.PasswordSHA256.IsNull():
			e.PasswordSHA256 = c.PasswordSHA256
		case !c.PasswordWO.IsUnknown() && !c.PasswordWO.IsNull():
			e.PasswordSHA256 = types.StringValue(redisconf.HashPassword(c.PasswordWO.ValueString()))
		}
		if c.AllowEval.IsUnknown() {
			e.AllowEval = types.BoolUnknown()
		}
		if e.PasswordSHA256.IsUnknown() || c.KeyPrefix.IsUnknown() || c.AllowEval.IsUnknown() {
			planned[name] = e
			continue
		}
		hashes := []string{e.PasswordSHA256.ValueString()}
		if p, ok := prior[name]; ok {
			if previous := p.PasswordSHA256.ValueString(); previous != "" && previous != hashes[0] {
				hashes = append(hashes, previous)
			}
		}
		u := acl.User{Name: name, KeyPrefix: c.KeyPrefix.ValueString(), PasswordHashes: hashes, AllowEval: allowEval}
		e.PasswordHashes = stringsValue(hashes)
		if endpointsKnown {
			want := map[string]string{}
			for _, ep := range endpoints {
				want[ep] = u.Definition().String()
			}
			e.ACL = stringMapValue(want)
			users = append(users, u)
		}
		planned[name] = e
	}
	return planned, users
}

// checkSharedPasswords refuses a user whose password is another user's or the admin's
// (compared by hash): clients of one could log in as the other.
func checkSharedPasswords(planned map[string]usersEntryModel, admin types.List, diags *diag.Diagnostics) {
	owner := map[string]string{}
	if h, _ := stringList(context.Background(), admin); len(h) > 0 {
		owner[h[0]] = "the admin"
	}
	for _, name := range sortedNames(planned) {
		h := planned[name].PasswordSHA256
		if h.IsUnknown() || h.IsNull() {
			continue
		}
		if other, taken := owner[h.ValueString()]; taken {
			diags.AddAttributeError(path.Root("users").AtMapKey(name), "Password shared",
				fmt.Sprintf("users[%q] has the same password as %s: its clients could log in as %s. Give each user its "+
					"own password (one redlock_credentials per user).", name, other, other))
			continue
		}
		owner[h.ValueString()] = fmt.Sprintf("users[%q]", name)
	}
}

// markDrift reads the users from every endpoint and plans as unknown the ACL of each user
// on each endpoint where it differs (or cannot be read), so the apply sets it again.
func markDrift(ctx context.Context, target acl.Target, endpoints []string, users []acl.User, planned map[string]usersEntryModel, diags *diag.Diagnostics) {
	names := make([]string, len(users))
	for i, u := range users {
		names[i] = u.Name
	}
	live, failed := target.ReadAll(ctx, endpoints, names)
	unseeded := unseededEndpoints(ctx, target, endpoints)
	for _, ep := range endpoints {
		if err := failed[ep]; err != nil {
			diags.AddWarning("A master could not be read", fmt.Sprintf("%v: its users are planned to be set again; "+
				"the apply fails on it while it is down, and the next apply converges it.", err))
		}
	}
	for _, u := range users {
		e := planned[u.Name]
		acls := map[string]attr.Value{}
		for ep, v := range e.ACL.Elements() {
			acls[ep] = v
		}
		drifted := false
		for _, ep := range endpoints {
			if d, ok := live[ep][u.Name]; failed[ep] != nil || unseeded[ep] || !ok || !u.Matches(d) {
				acls[ep] = types.StringUnknown()
				drifted = true
			}
		}
		if drifted {
			e.ACL = types.MapValueMust(types.StringType, acls)
			planned[u.Name] = e
		}
	}
}

func (r *usersResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	// No prior state: nothing to retire.
	m, ok := r.apply(ctx, req.Plan, req.Config, tfsdk.State{Schema: req.Plan.Schema, Raw: tftypes.NewValue(req.Plan.Raw.Type(), nil)}, &resp.Diagnostics)
	if ok {
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	}
}

func (r *usersResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	// On failure the prior state stays: the next plan repeats the change (and the overlap).
	m, ok := r.apply(ctx, req.Plan, req.Config, req.State, &resp.Diagnostics)
	if ok {
		resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
	}
}

// apply sets the planned users on every endpoint, removes the prior users that are no
// longer planned and makes the admin accept the planned admin passwords. It returns the
// new state, and ok only when every master took the change.
func (r *usersResource) apply(ctx context.Context, planState tfsdk.Plan, config tfsdk.Config, priorState tfsdk.State, diags *diag.Diagnostics) (usersModel, bool) {
	var plan, cfg, priorModel usersModel
	diags.Append(planState.Get(ctx, &plan)...)
	diags.Append(config.Get(ctx, &cfg)...)
	if !priorState.Raw.IsNull() {
		diags.Append(priorState.Get(ctx, &priorModel)...)
	}
	prior, d := priorEntries(ctx, priorState)
	diags.Append(d...)
	if diags.HasError() {
		return plan, false
	}
	configured, _, d := usersEntries(ctx, cfg.Users)
	diags.Append(d...)
	endpoints, _ := stringList(ctx, plan.Endpoints)
	planned, users := planUsers(configured, prior, endpoints, true)
	target, d := usersTarget(cfg)
	diags.Append(d...)
	if diags.HasError() {
		return plan, false
	}
	var remove []string
	for name := range prior {
		if _, ok := planned[name]; !ok {
			remove = append(remove, name)
		}
	}
	sort.Strings(remove)
	change := acl.Change{Users: users, Remove: remove}
	plan.AdminHashes = planAdminHashes(ctx, cfg, priorModel.AdminHashes)
	change.AdminAccept, _ = stringList(ctx, plan.AdminHashes)
	if previous, _ := stringList(ctx, priorModel.AdminHashes); len(previous) > 0 {
		for _, h := range previous {
			if !slices.Contains(change.AdminAccept, h) {
				change.AdminRetire = append(change.AdminRetire, h)
			}
		}
		if p := priorModel.AdminPassword.ValueString(); p != "" && p != target.Password {
			target.PreviousPassword = p // the masters may not accept the new one yet
		}
	}
	// A master marked unseeded (it started empty) gets its lock users only once its fence
	// registers are seeded from a majority of the others; one that cannot be is left as it
	// is, named, and the next apply tries again. Only a create (no prior state: no lock user
	// of this resource was let in) may take every master unseeded for a new deployment; on
	// an update it means every master lost its registers, and Seed refuses.
	seeded, failed := fenceseed.Seed(ctx, target, endpoints, fenceseed.Options{NewDeployment: priorState.Raw.IsNull()})
	for _, s := range seeded {
		tflog.Info(ctx, "fence registers seeded", map[string]any{"endpoint": s.Endpoint, "registers": s.Registers, "reason": s.Reason})
		diags.AddWarning("Master "+s.Endpoint+" seeded", fmt.Sprintf("%s started empty: its fence registers were %s (%d "+
			"registers). Its lock users are let in now.", s.Endpoint, s.Reason, s.Registers))
	}
	var ready []string
	for _, ep := range endpoints {
		if failed[ep] == nil {
			ready = append(ready, ep)
		}
	}
	// Guarded: a master that restarted empty since Seed keeps its lock users off.
	for ep, err := range fenceseed.LetIn(ctx, target, endpoints, ready, change) {
		if failed == nil {
			failed = map[string]error{}
		}
		failed[ep] = err
	}
	if failed != nil {
		reportFailed(endpoints, failed, "was not changed", diags)
		return plan, false
	}
	v, d := entriesValue(planned)
	diags.Append(d...)
	plan.Users = v
	plan.AdminPasswordWO = types.StringNull()
	return plan, !diags.HasError()
}

func (r *usersResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var st usersModel
	resp.Diagnostics.Append(req.State.Get(ctx, &st)...)
	if resp.Diagnostics.HasError() || st.AdminPassword.IsNull() {
		return // a write-only admin password: the plan reads the masters instead
	}
	entries, _, diags := usersEntries(ctx, st.Users)
	resp.Diagnostics.Append(diags...)
	endpoints, _ := stringList(ctx, st.Endpoints)
	target, diags := usersTarget(st)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	live, failed := target.ReadAll(ctx, endpoints, sortedNames(entries))
	unseeded := unseededEndpoints(ctx, target, endpoints)
	for _, ep := range endpoints {
		if err := failed[ep]; err != nil {
			resp.Diagnostics.AddWarning("A master could not be read",
				fmt.Sprintf("%v: its users are planned to be set again; the apply fails on it while it is down, and the next apply converges it.", err))
		}
	}
	for name, e := range entries {
		acls := map[string]string{}
		absentEverywhere := true
		for _, ep := range endpoints {
			d, ok := live[ep][name]
			switch {
			case failed[ep] != nil:
				acls[ep] = aclUnreachable + ": " + failed[ep].Error()
				absentEverywhere = false
			case ok && unseeded[ep]:
				acls[ep] = aclUnseeded + ": " + d.String()
				absentEverywhere = false
			case ok:
				acls[ep] = d.String()
				absentEverywhere = false
			default:
				acls[ep] = aclAbsent
			}
		}
		if absentEverywhere {
			delete(entries, name) // gone from every master: the plan adds it again
			continue
		}
		e.ACL = stringMapValue(acls)
		entries[name] = e
	}
	v, diags := entriesValue(entries)
	resp.Diagnostics.Append(diags...)
	st.Users = v
	resp.Diagnostics.Append(resp.State.Set(ctx, &st)...)
}

func (r *usersResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var st usersModel
	resp.Diagnostics.Append(req.State.Get(ctx, &st)...)
	entries, _, diags := usersEntries(ctx, st.Users)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() || len(entries) == 0 {
		return
	}
	if st.AdminPassword.IsNull() {
		resp.Diagnostics.AddError("The users cannot be removed without the admin password",
			"redlock_users got the admin password write-only (admin_password_wo), and Terraform gives write-only values "+
				"to plan and apply but not to destroy. Apply with users = {} first (that removes them from every master), "+
				"then destroy.")
		return
	}
	endpoints, _ := stringList(ctx, st.Endpoints)
	target, diags := usersTarget(st)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	if failed := target.ApplyAll(ctx, endpoints, nil, sortedNames(entries)); failed != nil {
		reportFailed(endpoints, failed, "still has the users", &resp.Diagnostics)
	}
}

// unseededEndpoints are the masters marked unseeded (they started empty): their users are
// planned to be set again, which seeds their fence registers first. A master whose mark
// cannot be read is left to the users' own read.
func unseededEndpoints(ctx context.Context, target acl.Target, endpoints []string) map[string]bool {
	states, _ := fenceseed.ReadStates(ctx, target, endpoints)
	out := map[string]bool{}
	for ep, s := range states {
		out[ep] = s.Unseeded()
	}
	return out
}

// reportFailed adds one error per endpoint that failed, in endpoint order.
func reportFailed(endpoints []string, failed map[string]error, what string, diags *diag.Diagnostics) {
	for i, ep := range endpoints {
		if err := failed[ep]; err != nil {
			diags.AddAttributeError(path.Root("endpoints").AtListIndex(i), "Master "+ep+" "+what,
				fmt.Sprintf("%v. The other masters were changed. Bring %s back (or fix what the error names) and run "+
					"terraform apply again: it converges every master.", err, ep))
		}
	}
}

// usersTarget is the admin connection of m: its admin password (or the write-only one)
// and TLS.
func usersTarget(m usersModel) (acl.Target, diag.Diagnostics) {
	var diags diag.Diagnostics
	t := acl.Target{Password: m.AdminPassword.ValueString()}
	if m.AdminPassword.IsNull() {
		t.Password = m.AdminPasswordWO.ValueString()
	}
	if m.TLS.ValueBool() {
		t.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		if ca := m.CACertPEM.ValueString(); ca != "" {
			conf, err := pki.ClientConfig(ca)
			if err != nil {
				diags.AddAttributeError(path.Root("ca_cert_pem"), "Unusable ca_cert_pem",
					fmt.Sprintf("ca_cert_pem: %v: give the PEM certificate of the deployment's CA (redlock_ca's cert_pem).", err))
			}
			t.TLS = conf
		}
	}
	return t, diags
}
