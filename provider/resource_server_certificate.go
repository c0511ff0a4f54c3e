package provider

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/listplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/provider/internal/validate"
)

var (
	_ resource.Resource                   = &serverCertificateResource{}
	_ resource.ResourceWithValidateConfig = &serverCertificateResource{}
)

// NewServerCertificateResource makes one master's server certificate, signed by a
// redlock_ca, offline (internal/pki).
func NewServerCertificateResource() resource.Resource { return &serverCertificateResource{} }

type serverCertificateResource struct{}

type serverCertificateModel struct {
	keyPair
	CACertPEM        types.String         `tfsdk:"ca_cert_pem"`
	CAPrivateKeyPEM  types.String         `tfsdk:"ca_private_key_pem"`
	CAPrivateKeyFile types.String         `tfsdk:"ca_private_key_file"`
	IPAddresses      types.List           `tfsdk:"ip_addresses"`
	DNSNames         types.List           `tfsdk:"dns_names"`
	CommonName       types.String         `tfsdk:"common_name"`
	Validity         timetypes.GoDuration `tfsdk:"validity"`
}

func (r *serverCertificateResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_server_certificate"
}

func (r *serverCertificateResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replace := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	replaceList := []planmodifier.List{listplanmodifier.RequiresReplace()}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A TLS server certificate for one Redlock master, made offline and signed by a " +
			"`redlock_ca`: an ECDSA P-256 key and a certificate for server authentication, valid for the master's " +
			"`ip_addresses` and `dns_names` (clients check the address they dial against them). Give `cert_pem` and " +
			"`private_key_pem` to that master only (`redlock_master`'s `tls_cert_pem` and `tls_key_pem`, or " +
			"`redlock_host_config`). The private key is kept in the Terraform state: keep the state secret, or set " +
			"`private_key_file`: the key is then kept in that file (0600) instead, for your provisioning to deliver " +
			"to the host (`redlock_host_config`'s `tls_key_on_host`).",
		Attributes: keyPairAttributes("the server certificate", "Give it to that master only.",
			"Deliver it to the master's host out of band (`redlock_host_config`'s `tls_key_on_host` says where). "+
				"Lost, the certificate cannot be served by a new host: replace it."),
	}
	for name, a := range map[string]schema.Attribute{
		"ca_cert_pem": schema.StringAttribute{
			Required: true, PlanModifiers: replace,
			MarkdownDescription: "The CA certificate (PEM; `redlock_ca`'s `cert_pem`). Changing it replaces the certificate.",
		},
		"ca_private_key_pem": schema.StringAttribute{
			Optional: true, Sensitive: true, PlanModifiers: replace,
			MarkdownDescription: "The CA's private key (PEM; `redlock_ca`'s `private_key_pem`). Set this or " +
				"`ca_private_key_file`. Changing it replaces the certificate.",
		},
		"ca_private_key_file": schema.StringAttribute{
			Optional: true, PlanModifiers: replace,
			MarkdownDescription: "The file that holds the CA's private key (`redlock_ca`'s `private_key_file`), read " +
				"at create: the key then stays out of this resource's state too. Changing it replaces the certificate.",
		},
		"ip_addresses": schema.ListAttribute{
			Optional: true, ElementType: types.StringType, PlanModifiers: replaceList,
			MarkdownDescription: "IP addresses the master is reached at: its `bind` address at least. At least one " +
				"of `ip_addresses` and `dns_names` is required. Changing them replaces the certificate.",
		},
		"dns_names": schema.ListAttribute{
			Optional: true, ElementType: types.StringType, PlanModifiers: replaceList,
			MarkdownDescription: "DNS names the master is reached at. Changing them replaces the certificate.",
		},
		"common_name": schema.StringAttribute{
			Optional: true, PlanModifiers: replace,
			MarkdownDescription: "Subject common name. Default: the first DNS name, else the first IP address " +
				"(clients check the addresses, not this name). Changing it replaces the certificate.",
		},
		"validity": validityAttribute("8760h", "Default `\"8760h\"` (one year); never beyond the CA's own validity. "+
			"Renew by replacing it (`terraform apply -replace=...`): `redlock_master` loads a new certificate in place."),
	} {
		resp.Schema.Attributes[name] = a
	}
}

// ValidateConfig refuses a certificate for no address and addresses that are not IPs.
func (r *serverCertificateResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var m serverCertificateModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if validateKeyFile(ctx, req.Config, "server-0.key", &resp.Diagnostics); resp.Diagnostics.HasError() {
		return
	}
	if !m.CAPrivateKeyPEM.IsUnknown() && !m.CAPrivateKeyFile.IsUnknown() && m.CAPrivateKeyPEM.IsNull() == m.CAPrivateKeyFile.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("ca_private_key_file"), "The CA key, once",
			"Give the CA's private key one way: ca_private_key_pem (redlock_ca's private_key_pem) or ca_private_key_file "+
				"(its private_key_file).")
	}
	if m.IPAddresses.IsNull() && m.DNSNames.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("ip_addresses"), "No address for the certificate",
			"Neither ip_addresses nor dns_names is set: give the addresses clients reach the master at, e.g. "+
				"ip_addresses = [\"10.0.0.11\"] (the master's bind address).")
		return
	}
	if !known(m.IPAddresses) {
		return
	}
	for i, v := range m.IPAddresses.Elements() {
		s, ok := v.(types.String)
		if !ok || !known(s) {
			continue
		}
		if net.ParseIP(s.ValueString()) == nil {
			resp.Diagnostics.AddAttributeError(path.Root("ip_addresses").AtListIndex(i), "Not an IP address",
				fmt.Sprintf("ip_addresses[%d] = %q is not an IP address: put host names in dns_names.", i, s.ValueString()))
		}
	}
}

func (r *serverCertificateResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	var m serverCertificateModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	var ips, names []string
	resp.Diagnostics.Append(m.IPAddresses.ElementsAs(ctx, &ips, true)...)
	resp.Diagnostics.Append(m.DNSNames.ElementsAs(ctx, &names, true)...)
	if resp.Diagnostics.HasError() {
		return
	}
	o := pki.ServerOptions{CommonName: m.CommonName.ValueString(), DNSNames: names}
	o.Validity, _ = validate.ParseDuration(m.Validity.ValueString()) // the validator checked it
	for _, ip := range ips {
		o.IPAddresses = append(o.IPAddresses, net.ParseIP(ip))
	}
	caKey := m.CAPrivateKeyPEM.ValueString()
	if !m.CAPrivateKeyFile.IsNull() {
		b, err := os.ReadFile(m.CAPrivateKeyFile.ValueString())
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("ca_private_key_file"), "Cannot read the CA key",
				fmt.Sprintf("%v: give redlock_ca's private_key_file, on the machine that runs Terraform.", err))
			return
		}
		caKey = string(b)
	}
	cert, err := pki.NewServer(pki.Pair{CertPEM: m.CACertPEM.ValueString(), KeyPEM: caKey}, o)
	if err != nil {
		field := "ca_cert_pem"
		if strings.HasPrefix(err.Error(), "CA private key") {
			field = "ca_private_key_pem"
		}
		resp.Diagnostics.AddAttributeError(path.Root(field), "Cannot make the server certificate",
			fmt.Sprintf("%s: %v: give one redlock_ca's cert_pem as ca_cert_pem and its private_key_pem as ca_private_key_pem.", field, err))
		return
	}
	if m.set(cert, &resp.Diagnostics); resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Read keeps what is in state: the certificate lives nowhere else. A key file that is gone
// is said, not acted on: hosts that have the key keep serving.
func (r *serverCertificateResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	warnKeyFileGone(ctx, req.State, "hosts that have the key keep serving the certificate, but a new or replaced "+
		"host cannot be given it.", &resp.Diagnostics)
}

// Update is never reached with a change (every argument replaces the certificate).
func (r *serverCertificateResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var m serverCertificateModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &m)...)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// Delete removes the key file: a destroyed certificate's key must not linger on disk.
func (r *serverCertificateResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	removeKeyFile(ctx, req.State, &resp.Diagnostics)
}
