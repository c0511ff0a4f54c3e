package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/provider/internal/validate"
)

var (
	_ resource.Resource                   = &caResource{}
	_ resource.ResourceWithValidateConfig = &caResource{}
)

// NewCAResource makes a deployment's certificate authority offline (internal/pki): the kit
// works where hashicorp/tls cannot be installed, and a CA belongs in state once.
func NewCAResource() resource.Resource { return &caResource{} }

type caResource struct{}

type caModel struct {
	keyPair
	CommonName types.String         `tfsdk:"common_name"`
	Validity   timetypes.GoDuration `tfsdk:"validity"`
}

func (r *caResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_ca"
}

func (r *caResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A certificate authority for the TLS of one Redlock deployment, made offline: an ECDSA " +
			"P-256 key and a self-signed CA certificate that may sign server certificates only (path length 0). " +
			"Give `cert_pem` to `redlock_server_certificate`, to `redlock_master`'s `tls_ca_cert_pem` and to the " +
			"lock clients (`lockagent --cacert`); give `private_key_pem` to `redlock_server_certificate` only. " +
			"The private key is kept in the Terraform state: keep the state secret, or make the CA elsewhere and " +
			"pass only certificates and server keys, or set `private_key_file`: the key is then kept in that file " +
			"(0600) instead, and `redlock_server_certificate` reads it there (`ca_private_key_file`). Replacing the " +
			"CA means new server certificates and new client configs.",
		Attributes: keyPairAttributes("the CA certificate",
			"Only `redlock_server_certificate` needs it; never give it to a master or a client.",
			"Give it to `redlock_server_certificate`'s `ca_private_key_file`. Lost, the CA's certificates stay valid "+
				"but no new one can be signed: restore it, or replace the CA."),
	}
	resp.Schema.Attributes["common_name"] = schema.StringAttribute{
		Optional: true, Computed: true, Default: stringdefault.StaticString("redlock-kit CA"),
		MarkdownDescription: "Subject common name of the CA certificate. Default `\"redlock-kit CA\"`. Changing it replaces the CA.",
		PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
	}
	resp.Schema.Attributes["validity"] = validityAttribute("87600h",
		"Default `\"87600h\"` (ten years). Server certificates it signs never outlive it.")
}

func (r *caResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m caModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	validity, _ := validate.ParseDuration(m.Validity.ValueString()) // the validator checked it
	ca, err := pki.NewCA(pki.CAOptions{CommonName: m.CommonName.ValueString(), Validity: validity})
	if err != nil {
		resp.Diagnostics.AddError("Cannot make the CA", err.Error())
		return
	}
	if m.set(ca, &resp.Diagnostics); resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Read keeps what is in state: the CA lives nowhere else. A key file that is gone is said,
// not acted on: the certificates it signed stay valid.
func (r *caResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	warnKeyFileGone(ctx, req.State, "the CA's certificates stay valid, but no new server certificate can be signed; "+
		"replacing the CA replaces every server certificate and client config.", &resp.Diagnostics)
}

// Update is never reached with a change (every argument replaces the CA).
func (r *caResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m caModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// ValidateConfig refuses a relative key file (validateKeyFile).
func (r *caResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	validateKeyFile(ctx, req.Config, "ca.key", &resp.Diagnostics)
}

// Delete removes the key file: a destroyed CA's key must not linger on disk.
func (r *caResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	removeKeyFile(ctx, req.State, &resp.Diagnostics)
}
