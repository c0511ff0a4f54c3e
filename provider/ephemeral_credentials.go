package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

var _ ephemeral.EphemeralResource = &credentialsEphemeral{}

// NewCredentialsEphemeral is the ephemeral redlock_credentials (Terraform >= 1.10): the same
// secrets as the managed redlock_credentials, generated each time Terraform opens it and
// never stored in a plan or the state. They can go only where Terraform allows ephemeral
// values, such as redlock_master's write-only admin_password_wo and lock_password_wo.
func NewCredentialsEphemeral() ephemeral.EphemeralResource { return &credentialsEphemeral{} }

type credentialsEphemeral struct{}

type credentialsEphemeralModel struct {
	LockUser      types.String `tfsdk:"lock_user"`
	AdminPassword types.String `tfsdk:"admin_password"`
	LockPassword  types.String `tfsdk:"lock_password"`
}

func (e *credentialsEphemeral) Metadata(_ context.Context, req ephemeral.MetadataRequest, resp *ephemeral.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_credentials"
}

func (e *credentialsEphemeral) Schema(_ context.Context, _ ephemeral.SchemaRequest, resp *ephemeral.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Generates the credentials a Redlock cluster shares, like the `redlock_credentials` resource, " +
			"but ephemeral (Terraform >= 1.10): an admin password and a lock user's password, each 32 random bytes from " +
			"the operating system's CSPRNG, hex-encoded, that are never written to a plan or the state. New values are " +
			"generated every time Terraform opens it (every plan and apply), so feed them to arguments that take a value " +
			"once: `redlock_master`'s write-only `admin_password_wo` and `lock_password_wo` (Terraform >= 1.11), which " +
			"the master applies at create and when `password_wo_version` changes. Create (or rotate) every master that " +
			"shares the passwords in the same apply. Lock clients then need the lock password from the masters' data " +
			"directories (`redlock-master.json`, mode 0600) or from your own secret store.",
		Attributes: map[string]schema.Attribute{
			"lock_user": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Name of the restricted ACL user lock clients authenticate as. Default `redlock`. " +
					"Like every attribute of an ephemeral resource, a reference to it is ephemeral: set `lock_user` on " +
					"`redlock_master` directly.",
				Validators: []validator.String{
					stringvalidator.RegexMatches(credentialsUserPattern, "must be 1-64 characters of letters, digits, '_' or '-' (an ACL user name)"),
					stringvalidator.NoneOf("default"), // the admin user: lock clients must not hold its rights
				},
			},
			"admin_password": schema.StringAttribute{
				Computed: true, Sensitive: true,
				MarkdownDescription: "Password of the admin (`default`) user.",
			},
			"lock_password": schema.StringAttribute{
				Computed: true, Sensitive: true,
				MarkdownDescription: "Password of `lock_user`.",
			},
		},
	}
}

// Open generates a fresh credential set: nothing is kept between runs.
func (e *credentialsEphemeral) Open(ctx context.Context, req ephemeral.OpenRequest, resp *ephemeral.OpenResponse) {
	var m credentialsEphemeralModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.LockUser.IsNull() || m.LockUser.IsUnknown() {
		m.LockUser = types.StringValue(redisconf.DefaultLockUser)
	}
	m.AdminPassword = types.StringValue(randomSecret())
	m.LockPassword = types.StringValue(randomSecret())
	resp.Diagnostics.Append(resp.Result.Set(ctx, &m)...)
}
