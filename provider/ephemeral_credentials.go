package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
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
	File          types.String `tfsdk:"file"`
	Version       types.Int64  `tfsdk:"version"`
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
			"directories (`redlock-master.json`, mode 0600) or from your own secret store.\n\nWith `file`, it generates " +
			"nothing: it reads the passwords a managed `redlock_credentials` with the same `file` keeps, the same on " +
			"every plan and apply, so they can also go into client configs (an ephemeral output) and live changes " +
			"(`redlock_users`' `admin_password_wo`). Give it that resource's `file` and `version`: Terraform then opens " +
			"it only once the file exists (`version` is unknown until then), and a file replaced behind the state's " +
			"back is refused instead of read.",
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
			"file": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Read the passwords from this file, written by a managed `redlock_credentials` " +
					"(its `file`), instead of generating new ones.",
			},
			"version": schema.Int64Attribute{
				Optional: true,
				MarkdownDescription: "With `file`: the managed `redlock_credentials`' `version`. Opening fails when the " +
					"file holds another version (run `terraform apply -refresh-only`, or restore the file).",
			},
		},
	}
}

// Open generates a fresh credential set (nothing is kept between runs), or with file reads
// the one a managed redlock_credentials keeps there.
func (e *credentialsEphemeral) Open(ctx context.Context, req ephemeral.OpenRequest, resp *ephemeral.OpenResponse) {
	var m credentialsEphemeralModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if !m.File.IsNull() {
		c, err := readCredentialsFile(m.File.ValueString())
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("file"), "Cannot read the credentials file", err.Error()+
				": it is written by the managed redlock_credentials with this file at apply. Give this resource that "+
				"one's file and version, so that Terraform opens it after the file exists.")
			return
		}
		switch {
		case known(m.Version) && m.Version.ValueInt64() != c.Version:
			resp.Diagnostics.AddAttributeError(path.Root("version"), "Credentials file of another version",
				fmt.Sprintf("%s holds version %d of the passwords, and version = %d: the file was replaced after the "+
					"state was written. Run terraform apply -refresh-only to take the file's passwords, or restore the file.",
					m.File.ValueString(), c.Version, m.Version.ValueInt64()))
			return
		case known(m.LockUser) && m.LockUser.ValueString() != c.LockUser:
			resp.Diagnostics.AddAttributeError(path.Root("lock_user"), "Credentials file of another lock user",
				fmt.Sprintf("%s holds the passwords of lock user %q, not %q.", m.File.ValueString(), c.LockUser, m.LockUser.ValueString()))
			return
		}
		m.LockUser, m.AdminPassword, m.LockPassword = types.StringValue(c.LockUser), types.StringValue(c.AdminPassword),
			types.StringValue(c.LockPassword)
		resp.Diagnostics.Append(resp.Result.Set(ctx, &m)...)
		return
	}
	if !m.Version.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("version"), "version without file",
			"version checks the file a managed redlock_credentials keeps: set file too, or remove version.")
		return
	}
	if m.LockUser.IsNull() || m.LockUser.IsUnknown() {
		m.LockUser = types.StringValue(redisconf.DefaultLockUser)
	}
	m.AdminPassword = types.StringValue(randomSecret())
	m.LockPassword = types.StringValue(randomSecret())
	resp.Diagnostics.Append(resp.Result.Set(ctx, &m)...)
}
