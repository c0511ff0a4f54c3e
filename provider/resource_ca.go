package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework/path"
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

var (
	_ resource.Resource                   = &caResource{}
	_ resource.ResourceWithValidateConfig = &caResource{}
)

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
	// PrivateKeyFile keeps the key in a file instead of the state.
	PrivateKeyFile types.String `tfsdk:"private_key_file"`
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
			"pass only certificates and server keys, or set `private_key_file`: the key is then kept in that file " +
			"(0600) instead, and `redlock_server_certificate` reads it there (`ca_private_key_file`). Replacing the " +
			"CA means new server certificates and new client configs.",
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
			"private_key_file": schema.StringAttribute{
				Optional: true, PlanModifiers: replace,
				MarkdownDescription: "Absolute path of a file that keeps the CA's private key instead of the state " +
					"(`private_key_pem` is then null): created at create with mode 0600 (missing directories 0700), never " +
					"overwritten, removed at destroy. Give it to `redlock_server_certificate`'s `ca_private_key_file`. " +
					"Lost, the CA's certificates stay valid but no new one can be signed: restore it, or replace the CA. " +
					"Changing it replaces the CA.",
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
	if !m.PrivateKeyFile.IsNull() {
		if err := writeSecretFile(m.PrivateKeyFile.ValueString(), []byte(ca.KeyPEM), "a CA key"); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("private_key_file"), "Cannot write the CA key", err.Error())
			return
		}
		m.PrivateKeyPEM = types.StringNull()
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// setCertModel fills the computed attributes of a certificate resource from p.
func setCertModel(p pki.Pair, id, certPEM, keyPEM, notAfter *types.String) {
	cert, _ := pki.ParseCert(p.CertPEM) // made by pki just now
	*id = types.StringValue(cert.SerialNumber.Text(16))
	*certPEM, *keyPEM = types.StringValue(p.CertPEM), types.StringValue(p.KeyPEM)
	*notAfter = types.StringValue(cert.NotAfter.UTC().Format(time.RFC3339))
}

// Read keeps what is in state: the CA lives nowhere else. A key file that is gone is said,
// not acted on: the certificates it signed stay valid.
func (r *caResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	var file types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("private_key_file"), &file)...)
	if known(file) {
		if _, err := os.Stat(file.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeWarning(path.Root("private_key_file"), "CA key file unreadable",
				fmt.Sprintf("%v: the CA's certificates stay valid, but no new server certificate can be signed. Restore "+
					"the file, or replace the CA (terraform apply -replace=<this resource>), which replaces every server "+
					"certificate and client config.", err))
		}
	}
}

// Update is never reached with a change (every argument replaces the CA).
func (r *caResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m caModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// ValidateConfig refuses a relative key file: Terraform may run from another directory next time.
func (r *caResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var file types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("private_key_file"), &file)...)
	if known(file) && !filepath.IsAbs(file.ValueString()) {
		resp.Diagnostics.AddAttributeError(path.Root("private_key_file"), "Relative key file",
			fmt.Sprintf("private_key_file = %q is relative: give an absolute path, e.g. \"${abspath(path.root)}/.redlock-secrets/ca.key\".",
				file.ValueString()))
	}
}

// Delete removes the key file: a destroyed CA's key must not linger on disk.
func (r *caResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var file types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("private_key_file"), &file)...)
	if !known(file) {
		return
	}
	if err := os.Remove(file.ValueString()); err != nil && !os.IsNotExist(err) {
		resp.Diagnostics.AddAttributeError(path.Root("private_key_file"), "Cannot remove the CA key file",
			fmt.Sprintf("%v: remove it by hand; it holds the destroyed CA's key.", err))
	}
}
