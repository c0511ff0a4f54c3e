package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

var (
	_ resource.Resource                   = &credentialsResource{}
	_ resource.ResourceWithValidateConfig = &credentialsResource{}
)

// credentialsUserPattern is a valid ACL user name.
var credentialsUserPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// NewCredentialsResource generates the passwords a cluster shares. It exists because the
// kit works offline, where hashicorp/random cannot be installed, and because generated
// secrets belong in state once, not regenerated on every plan.
func NewCredentialsResource() resource.Resource { return &credentialsResource{} }

type credentialsResource struct{}

type credentialsModel struct {
	ID            types.String `tfsdk:"id"`
	LockUser      types.String `tfsdk:"lock_user"`
	Keepers       types.Map    `tfsdk:"keepers"`
	AdminPassword types.String `tfsdk:"admin_password"`
	LockPassword  types.String `tfsdk:"lock_password"`
	// File mode (credentials_file.go): the passwords in File, their hashes in the state.
	File                types.String `tfsdk:"file"`
	AdminPasswordSHA256 types.String `tfsdk:"admin_password_sha256"`
	LockPasswordSHA256  types.String `tfsdk:"lock_password_sha256"`
	Version             types.Int64  `tfsdk:"version"`
}

func (r *credentialsResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_credentials"
}

func (r *credentialsResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Generates the credentials a Redlock cluster shares: an admin password (for operators and the audit) " +
			"and a restricted lock user with its password (for lock clients). Both are 32 random bytes from the operating " +
			"system's CSPRNG, hex-encoded, generated once at create and kept in state (mark your state as secret). " +
			"Change `keepers` or `lock_user` to rotate them.\n\nWith `file`, the passwords are kept in that file (mode " +
			"0600) on the machine that runs Terraform instead, and the state holds only their SHA-256 hashes " +
			"(`admin_password_sha256`, `lock_password_sha256`: what hosts and `redlock_users` need) and `version`; " +
			"`admin_password` and `lock_password` are then null. Where a password itself is needed (write-only " +
			"arguments such as `redlock_master`'s `admin_password_wo`, Terraform >= 1.11), the ephemeral " +
			"`redlock_credentials` reads it back from the file, never into the plan or the state. This works with " +
			"every Terraform version; keep the file as safe as you would the state.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "Random identifier of this credential set.",
				PlanModifiers: keep,
			},
			"lock_user": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("redlock"),
				MarkdownDescription: "Name of the restricted ACL user lock clients authenticate as. Default `redlock`.",
				Validators: []validator.String{
					stringvalidator.RegexMatches(credentialsUserPattern, "must be 1-64 characters of letters, digits, '_' or '-' (an ACL user name)"),
					stringvalidator.NoneOf("default"), // the admin user: lock clients must not hold its rights
				},
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"keepers": schema.MapAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Arbitrary values that, when changed, generate new passwords.",
				PlanModifiers:       []planmodifier.Map{mapplanmodifier.RequiresReplace()},
			},
			"admin_password": schema.StringAttribute{
				Computed: true, Sensitive: true, PlanModifiers: keep,
				MarkdownDescription: "Password of the admin (`default`) user; null with `file`.",
			},
			"lock_password": schema.StringAttribute{
				Computed: true, Sensitive: true, PlanModifiers: keep,
				MarkdownDescription: "Password of `lock_user`; null with `file`.",
			},
			"file": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Absolute path of a file that keeps the passwords instead of the state. Created at " +
					"create with mode 0600 (missing directories 0700), never overwritten (an existing file is refused), " +
					"removed at destroy. When the file is gone, so are the passwords: the next plan creates new ones " +
					"(with `redlock_users`, a rotation with an overlap). Changing it generates new passwords.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			"admin_password_sha256": schema.StringAttribute{
				Computed: true, PlanModifiers: keep,
				MarkdownDescription: "Hex SHA-256 of `admin_password`, the form masters keep (`#<hex>` in an ACL file).",
			},
			"lock_password_sha256": schema.StringAttribute{
				Computed: true, PlanModifiers: keep,
				MarkdownDescription: "Hex SHA-256 of `lock_password` (e.g. `redlock_users`' `password_sha256`).",
			},
			"version": schema.Int64Attribute{
				Computed: true, PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown()},
				MarkdownDescription: "Changes whenever the passwords do (the time they were generated, in Unix " +
					"milliseconds): give it to a write-only password's version argument (`password_wo_version`), so " +
					"that new passwords reach the masters. Null for a set created before this attribute existed.",
			},
		},
	}
}

func (r *credentialsResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m credentialsModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	secrets := make([]string, 3)
	for i := range secrets {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			resp.Diagnostics.AddError("Cannot generate credentials", "Reading the system's random source failed: "+err.Error())
			return
		}
		secrets[i] = hex.EncodeToString(b)
	}
	m.ID = types.StringValue(secrets[0][:16])
	c := credentialsFile{Version: time.Now().UnixMilli(), LockUser: m.LockUser.ValueString(),
		AdminPassword: secrets[1], LockPassword: secrets[2]}
	m.setFrom(c)
	if !m.File.IsNull() {
		if err := writeCredentialsFile(m.File.ValueString(), c); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("file"), "Cannot write the credentials file", err.Error())
			return
		}
		m.AdminPassword, m.LockPassword = types.StringNull(), types.StringNull()
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// setFrom fills in the passwords, their hashes and the version of c.
func (m *credentialsModel) setFrom(c credentialsFile) {
	admin, lock := c.hashes()
	m.AdminPassword, m.LockPassword = types.StringValue(c.AdminPassword), types.StringValue(c.LockPassword)
	m.AdminPasswordSHA256, m.LockPasswordSHA256 = types.StringValue(admin), types.StringValue(lock)
	m.Version = types.Int64Value(c.Version)
}

// Read keeps what is in state when the passwords are there (they live nowhere else), filling
// in the hashes a set created before they existed lacks. With file, the file is the truth:
// gone, the resource is gone (the next plan makes new passwords); replaced by hand, its
// hashes and version become the state's, so whatever uses them is planned again.
func (r *credentialsResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var m credentialsModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if m.File.IsNull() {
		if m.AdminPasswordSHA256.IsNull() && known(m.AdminPassword) && known(m.LockPassword) {
			m.AdminPasswordSHA256 = types.StringValue(redisconf.HashPassword(m.AdminPassword.ValueString()))
			m.LockPasswordSHA256 = types.StringValue(redisconf.HashPassword(m.LockPassword.ValueString()))
			resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
		}
		return
	}
	c, err := readCredentialsFile(m.File.ValueString())
	if errors.Is(err, errCredentialsFileMissing) {
		resp.Diagnostics.AddWarning("Credentials file gone",
			fmt.Sprintf("%s no longer exists, and with it the passwords: the plan generates new ones. Restore the file "+
				"from a backup instead if clients still use them.", m.File.ValueString()))
		resp.State.RemoveResource(ctx)
		return
	}
	if err != nil {
		resp.Diagnostics.AddAttributeError(path.Root("file"), "Cannot read the credentials file", err.Error())
		return
	}
	if c.LockUser != m.LockUser.ValueString() {
		resp.Diagnostics.AddAttributeError(path.Root("file"), "Credentials file of another lock user",
			fmt.Sprintf("%s holds the passwords of lock user %q, and this resource's lock_user is %q: restore this "+
				"resource's file, or remove it to generate new passwords.", m.File.ValueString(), c.LockUser, m.LockUser.ValueString()))
		return
	}
	m.setFrom(c)
	m.AdminPassword, m.LockPassword = types.StringNull(), types.StringNull()
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Update is reached only for changes that need no new secrets (none today: every
// argument forces replacement), so the planned state is already complete.
func (r *credentialsResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m credentialsModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Delete removes the credentials file: destroyed credentials must not linger on disk.
func (r *credentialsResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var m credentialsModel
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() || m.File.IsNull() {
		return
	}
	if err := os.Remove(m.File.ValueString()); err != nil && !os.IsNotExist(err) {
		resp.Diagnostics.AddAttributeError(path.Root("file"), "Cannot remove the credentials file",
			fmt.Sprintf("%v: remove it by hand; it holds the destroyed passwords.", err))
	}
}

// ValidateConfig refuses a relative file: Terraform may run from another directory next time.
func (r *credentialsResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var file types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("file"), &file)...)
	if known(file) && !filepath.IsAbs(file.ValueString()) {
		resp.Diagnostics.AddAttributeError(path.Root("file"), "Relative credentials file",
			fmt.Sprintf("file = %q is relative: give an absolute path, e.g. \"${abspath(path.root)}/.redlock-secrets/credentials.json\".",
				file.ValueString()))
	}
}
