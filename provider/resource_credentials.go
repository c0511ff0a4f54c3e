package provider

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/mapplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var _ resource.Resource = &credentialsResource{}

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
			"Change `keepers` or `lock_user` to rotate them. To keep them out of the state (Terraform >= 1.11), use the " +
			"ephemeral `redlock_credentials` with `redlock_master`'s write-only `admin_password_wo` and `lock_password_wo`.",
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
				MarkdownDescription: "Password of the admin (`default`) user.",
			},
			"lock_password": schema.StringAttribute{
				Computed: true, Sensitive: true, PlanModifiers: keep,
				MarkdownDescription: "Password of `lock_user`.",
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
	m.AdminPassword = types.StringValue(secrets[1])
	m.LockPassword = types.StringValue(secrets[2])
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Read keeps what is in state: the credentials live nowhere else.
func (r *credentialsResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {}

// Update is reached only for changes that need no new secrets (none today: every
// argument forces replacement), so the planned state is already complete.
func (r *credentialsResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m credentialsModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *credentialsResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {
}
