package provider

// redlock_users: the schema, its model and the conversions between them.

import (
	"context"
	"regexp"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// usersModel is redlock_users.
type usersModel struct {
	Endpoints       types.List   `tfsdk:"endpoints"`
	AdminPassword   types.String `tfsdk:"admin_password"`
	AdminPasswordWO types.String `tfsdk:"admin_password_wo"`
	TLS             types.Bool   `tfsdk:"tls"`
	CACertPEM       types.String `tfsdk:"ca_cert_pem"`
	Users           types.Map    `tfsdk:"users"`
	AdminHashes     types.List   `tfsdk:"admin_password_hashes"`
}

// usersEntryModel is one entry of redlock_users.users.
type usersEntryModel struct {
	KeyPrefix      types.String `tfsdk:"key_prefix"`
	AllowEval      types.Bool   `tfsdk:"allow_eval"`
	PasswordWO     types.String `tfsdk:"password_wo"`
	PasswordSHA256 types.String `tfsdk:"password_sha256"`
	PasswordHashes types.List   `tfsdk:"password_hashes"`
	ACL            types.Map    `tfsdk:"acl"`
}

var usersEntryAttrTypes = map[string]attr.Type{
	"key_prefix":      types.StringType,
	"allow_eval":      types.BoolType,
	"password_wo":     types.StringType,
	"password_sha256": types.StringType,
	"password_hashes": types.ListType{ElemType: types.StringType},
	"acl":             types.MapType{ElemType: types.StringType},
}

// Values of redlock_users.users[*].acl for an endpoint where the user is not as defined.
const (
	aclAbsent      = "absent"
	aclUnreachable = "unreachable"
	// aclUnseeded prefixes a user's ACL on a master whose fence registers wait to be seeded.
	aclUnseeded = "unseeded"
)

var sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

func usersSchema() schema.Schema {
	return schema.Schema{
		MarkdownDescription: "Lock users of running masters, changed live over the admin connection (TLS with `tls = true`): " +
			"adds, changes and removes users on every endpoint, each confined to its key prefix by the same ACL rules " +
			"the hosts are rendered with, and saves them to the ACL file each master loads at start (`ACL SAVE`), so a " +
			"restart keeps them. Masters get SHA-256 hashes of the passwords only. A password change is applied with an " +
			"overlap: the apply that changes it makes the user accept the new and the previous password, and the next " +
			"apply (the plan shows it) removes the previous one, so clients move to the new password without one failed " +
			"login. Refresh reads each user back from every master (`ACL GETUSER`): a change made by hand, a user missing " +
			"on a master or a master that was down shows in `acl` and is planned back. A master that is down fails the " +
			"apply naming it; the others are changed, and the next apply converges it. Masters without an ACL file are " +
			"refused before anything changes. A master that started empty (a new or replaced host rendered with " +
			"`seed_fences`: its lock users off, marked unseeded) gets its users only after the apply seeded its fence " +
			"registers from a majority of the other masters (each at the largest value they hold + 1000), so that a " +
			"rolling replacement never makes fences go backwards; without such a majority the apply fails naming it, " +
			"and its users stay off. The reason is recorded on the master (`redlock-kit:fence-seed`, which the audit " +
			"reads) and in its server log.",
		Attributes: map[string]schema.Attribute{
			"endpoints": schema.ListAttribute{
				ElementType: types.StringType, Required: true,
				MarkdownDescription: "Every master, as `host:port` (e.g. `module.redlock.endpoints`).",
				Validators: []validator.List{listvalidator.SizeAtLeast(1), listvalidator.UniqueValues(),
					listvalidator.ValueStringsAre(stringvalidator.RegexMatches(regexp.MustCompile(`^.+:[0-9]+$`),
						"must be host:port, e.g. \"10.0.1.10:6379\""))},
			},
			"admin_password": schema.StringAttribute{
				Optional: true, Sensitive: true,
				MarkdownDescription: "Password of the admin (`default`) user on every master. It is kept in the state, " +
					"which refresh needs to read the users back. Conflicts with `admin_password_wo`.",
			},
			"admin_password_wo": schema.StringAttribute{
				Optional: true, Sensitive: true, WriteOnly: true,
				MarkdownDescription: "Write-only admin password (Terraform >= 1.11): never stored in the plan or the " +
					"state, so it may come from an ephemeral value. Refresh cannot use it; the plan reads the users back " +
					"instead and plans any master whose users differ. Conflicts with `admin_password`.",
			},
			"admin_password_hashes": schema.ListAttribute{
				ElementType: types.StringType, Computed: true,
				MarkdownDescription: "SHA-256 hashes of the admin passwords this resource has the masters accept, the " +
					"current one first. Changing the admin password is a rotation with an overlap, like a user's: the " +
					"apply logs in with the previous password (from the state; not possible with `admin_password_wo`), " +
					"adds the new one and keeps the previous; the next apply retires it. Other passwords of the admin " +
					"(a host's own) are never touched.",
			},
			"tls": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Connect with TLS (server name = the endpoint's host), verifying the masters " +
					"against `ca_cert_pem` (else the system's roots).",
			},
			"ca_cert_pem": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PEM certificate of the deployment's CA (`redlock_ca`'s `cert_pem`); needs `tls = true`.",
			},
			"users": schema.MapNestedAttribute{
				Required: true,
				MarkdownDescription: "Lock users by ACL user name, one per application. A user removed from this map " +
					"is deleted from every master (`ACL DELUSER`, which disconnects its clients).",
				Validators: []validator.Map{
					mapvalidator.KeysAre(
						stringvalidator.RegexMatches(userPattern, "must be 1-64 letters, digits, '_' or '-' (an ACL user name)"),
						stringvalidator.NoneOf("default"),
					),
				},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key_prefix": schema.StringAttribute{
						Required: true,
						MarkdownDescription: "The user may touch only keys and pub/sub channels that start with it (its " +
							"locks, fencing registers and release channels). No prefix may start with another; end each " +
							"with `:`. It may not overlap the kit's own keys (`redlock-kit:`). Changing it changes the user in place.",
					},
					"allow_eval": schema.BoolAttribute{
						Optional: true, Computed: true, Default: booldefault.StaticBool(false),
						MarkdownDescription: "Also allow `EVAL`, `EVALSHA`, `SCRIPT LOAD` and `EXISTS`, for other Redlock " +
							"clients (redsync v4, node-redlock 4 and 5: see the other-clients guide) that lock and release with Lua of their own; the kit's clients " +
							"do not need it. Weaker: such a user can run any script, busy ones included (stopped only by " +
							"the busy-reply threshold and `SCRIPT KILL`), over any key it names inside its prefix; keys " +
							"outside the prefix stay refused. The audit warns when its lock user may `EVAL`.",
					},
					"password_wo": schema.StringAttribute{
						Optional: true, Sensitive: true, WriteOnly: true,
						MarkdownDescription: "Write-only password (Terraform >= 1.11; e.g. from `ephemeral.redlock_credentials`): " +
							"only its SHA-256 reaches the masters and the state (`password_sha256`). Set this or `password_sha256`.",
					},
					"password_sha256": schema.StringAttribute{
						Optional: true, Computed: true,
						MarkdownDescription: "Hex SHA-256 of the password (Terraform's `sha256(password)`), for Terraform " +
							"before 1.11: the masters and the state get only this. Computed from `password_wo` when that is set.",
						Validators: []validator.String{stringvalidator.RegexMatches(sha256Pattern,
							"must be the lower-case hex SHA-256 of the password (64 characters, as sha256() returns)")},
					},
					"password_hashes": schema.ListAttribute{
						ElementType: types.StringType, Computed: true,
						MarkdownDescription: "SHA-256 hashes of the passwords the user accepts, the current one first: two " +
							"after an apply that changed the password (the previous one is accepted until the next apply).",
					},
					"acl": schema.MapAttribute{
						ElementType: types.StringType, Computed: true,
						MarkdownDescription: "By endpoint, the user's ACL as the master has it (flags, password hashes, " +
							"keys, channels and commands, sorted), `" + aclAbsent + "` where the master has no such user, or `" +
							aclUnreachable + ": <error>` where refresh could not reach it, prefixed `" + aclUnseeded + ": ` where " +
							"the master waits for its fence registers to be seeded. A difference from the kit's " +
							"definition is planned as an update.",
					},
				}},
			},
		},
	}
}

// usersEntries decodes the users map; known is false when it is unknown.
func usersEntries(ctx context.Context, v types.Map) (map[string]usersEntryModel, bool, diag.Diagnostics) {
	entries := map[string]usersEntryModel{}
	if v.IsNull() || v.IsUnknown() {
		return entries, !v.IsUnknown(), nil
	}
	diags := v.ElementsAs(ctx, &entries, false)
	return entries, !diags.HasError(), diags
}

func priorEntries(ctx context.Context, st tfsdk.State) (map[string]usersEntryModel, diag.Diagnostics) {
	if st.Raw.IsNull() {
		return nil, nil
	}
	var m usersModel
	diags := st.Get(ctx, &m)
	if diags.HasError() {
		return nil, diags
	}
	entries, _, d := usersEntries(ctx, m.Users)
	return entries, append(diags, d...)
}

func entriesValue(entries map[string]usersEntryModel) (types.Map, diag.Diagnostics) {
	elems := map[string]attr.Value{}
	var diags diag.Diagnostics
	for name, e := range entries {
		obj, d := types.ObjectValue(usersEntryAttrTypes, map[string]attr.Value{
			"key_prefix": e.KeyPrefix, "allow_eval": e.AllowEval, "password_wo": types.StringNull(), "password_sha256": e.PasswordSHA256,
			"password_hashes": e.PasswordHashes, "acl": e.ACL,
		})
		diags.Append(d...)
		elems[name] = obj
	}
	v, d := types.MapValue(types.ObjectType{AttrTypes: usersEntryAttrTypes}, elems)
	return v, append(diags, d...)
}

func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// stringList returns the elements of a list of strings (none for null); known is false
// when the list or an element is unknown.
func stringList(ctx context.Context, v types.List) ([]string, bool) {
	if v.IsUnknown() {
		return nil, false
	}
	if v.IsNull() {
		return nil, true
	}
	for _, e := range v.Elements() {
		if e.IsUnknown() {
			return nil, false
		}
	}
	var out []string
	_ = v.ElementsAs(ctx, &out, false)
	return out, true
}

func stringsValue(s []string) types.List {
	elems := make([]attr.Value, len(s))
	for i, v := range s {
		elems[i] = types.StringValue(v)
	}
	return types.ListValueMust(types.StringType, elems)
}

func stringMapValue(m map[string]string) types.Map {
	elems := map[string]attr.Value{}
	for k, v := range m {
		elems[k] = types.StringValue(v)
	}
	return types.MapValueMust(types.StringType, elems)
}
