package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/provider/internal/validate"
)

var _ resource.Resource = &caResource{}

// NewCAResource makes a deployment's certificate authority offline (internal/pki): the kit
// works where hashicorp/tls cannot be installed, and a CA belongs in state once.
func NewCAResource() resource.Resource { return &caResource{} }

type caResource struct{}

type caModel struct {
	ID            types.String         `tfsdk:"id"`
	CommonName    types.String         `tfsdk:"common_name"`
	Validity      timetypes.GoDuration `tfsdk:"validity"`
	CertPEM       types.String         `tfsdk:"cert_pem"`
	PrivateKeyPEM types.String         `tfsdk:"private_key_pem"`
	NotAfter      types.String         `tfsdk:"not_after"`
}

func (r *caResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_ca"
}

// certValidityMin is the shortest validity accepted for a CA or a server certificate.
const certValidityMin = time.Hour

func (r *caResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A certificate authority for the TLS of one Redlock deployment, made offline: an ECDSA " +
			"P-256 key and a self-signed CA certificate that may sign server certificates only (path length 0). " +
			"Give `cert_pem` to `redlock_server_certificate`, to `redlock_master`'s `tls_ca_cert_pem` and to the " +
			"lock clients (`lockagent --cacert`); give `private_key_pem` to `redlock_server_certificate` only. " +
			"The private key is kept in the Terraform state: keep the state secret, or make the CA elsewhere and " +
			"pass only certificates and server keys. Replacing the CA means new server certificates and new " +
			"client configs.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, PlanModifiers: keep,
				MarkdownDescription: "Serial number of the CA certificate (hex).",
			},
			"common_name": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("redlock-kit CA"),
				MarkdownDescription: "Subject common name of the CA certificate. Default `\"redlock-kit CA\"`. Changing it replaces the CA.",
				PlanModifiers:       replace,
			},
			"validity": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("87600h"),
				MarkdownDescription: "How long the CA certificate is valid from its creation (duration, at least `\"1h\"`). " +
					"Default `\"87600h\"` (ten years). Server certificates it signs never outlive it. Changing it replaces the CA.",
				CustomType: timetypes.GoDurationType{}, Validators: []validator.String{validate.Duration(certValidityMin)},
				PlanModifiers: replace,
			},
			"cert_pem": schema.StringAttribute{
				Computed: true, PlanModifiers: keep,
				MarkdownDescription: "The CA certificate (PEM): what clients and masters trust.",
			},
			"private_key_pem": schema.StringAttribute{
				Computed: true, Sensitive: true, PlanModifiers: keep,
				MarkdownDescription: "The CA's private key (PEM, PKCS#8). Only `redlock_server_certificate` needs it; never give it to a master or a client.",
			},
			"not_after": schema.StringAttribute{
				Computed: true, PlanModifiers: keep,
				MarkdownDescription: "End of the CA certificate's validity (RFC 3339).",
			},
		},
	}
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
	setCertModel(ca, &m.ID, &m.CertPEM, &m.PrivateKeyPEM, &m.NotAfter)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// setCertModel fills the computed attributes of a certificate resource from p.
func setCertModel(p pki.Pair, id, certPEM, keyPEM, notAfter *types.String) {
	cert, _ := pki.ParseCert(p.CertPEM) // made by pki just now
	*id = types.StringValue(cert.SerialNumber.Text(16))
	*certPEM, *keyPEM = types.StringValue(p.CertPEM), types.StringValue(p.KeyPEM)
	*notAfter = types.StringValue(cert.NotAfter.UTC().Format(time.RFC3339))
}

// Read keeps what is in state: the CA lives nowhere else.
func (r *caResource) Read(context.Context, resource.ReadRequest, *resource.ReadResponse) {}

// Update is never reached with a change (every argument replaces the CA).
func (r *caResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m caModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

func (r *caResource) Delete(context.Context, resource.DeleteRequest, *resource.DeleteResponse) {}
