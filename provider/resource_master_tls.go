package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/boolplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/master"
)

// redlock_master's TLS arguments: the schema, the conversion to master.TLS and the plan-time
// checks. The material usually comes from redlock_ca and redlock_server_certificate.

// tlsAttributes are the names of the TLS material arguments, in the order checks report them.
var tlsAttributes = []string{"tls_cert_pem", "tls_key_pem", "tls_ca_cert_pem"}

// masterTLSAttributes are merged into redlock_master's schema.
func masterTLSAttributes() map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"tls": schema.BoolAttribute{
			Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Serve TLS only (default `false`): the plain-text port is closed (`port 0`) and `port` " +
				"is the TLS port (`tls-port`). Needs `tls_cert_pem`, `tls_key_pem` and `tls_ca_cert_pem`. Clients " +
				"authenticate with passwords, as without TLS (`tls-auth-clients no`), and verify the master against " +
				"the CA. The supervisor's health check, refresh, drift repair, destroy and import use TLS too. " +
				"Changing it replaces the master.",
			PlanModifiers: []planmodifier.Bool{boolplanmodifier.RequiresReplace()},
		},
		"tls_cert_pem": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "PEM server certificate of the master (`redlock_server_certificate`'s `cert_pem`), " +
				"issued by `tls_ca_cert_pem` and valid for `bind`: checked at plan time. Written to " +
				"`<data_dir>/tls-server.crt`. Changed in place: the running master loads the new certificate " +
				"(`CONFIG SET tls-cert-file`) without a restart.",
		},
		"tls_key_pem": schema.StringAttribute{
			Optional: true, Sensitive: true,
			MarkdownDescription: "PEM private key of `tls_cert_pem` (`redlock_server_certificate`'s `private_key_pem`). " +
				"Written to `<data_dir>/tls-server.key` (mode 0600). It is kept in the Terraform state: keep the state " +
				"secret, or, with Terraform >= 1.11, give `tls_key_pem_wo` instead. Changed in place with the certificate.",
		},
		"tls_ca_cert_pem": schema.StringAttribute{
			Optional: true,
			MarkdownDescription: "PEM certificate of the CA that issued `tls_cert_pem` (`redlock_ca`'s `cert_pem`): " +
				"what clients trust. Written to `<data_dir>/tls-ca.crt`. Changed in place.",
		},
	}
}

// masterTLS is the master.TLS m describes; nil when tls is off.
func masterTLS(m *masterModel) *master.TLS {
	if !m.TLS.ValueBool() {
		return nil
	}
	return &master.TLS{CertPEM: m.TLSCertPEM.ValueString(), KeyPEM: m.TLSKeyPEM.ValueString(), CACertPEM: m.TLSCACertPEM.ValueString()}
}

// setTLSModel writes t into m (import).
func setTLSModel(m *masterModel, t *master.TLS) {
	m.TLS = types.BoolValue(t != nil)
	m.TLSCertPEM, m.TLSKeyPEM, m.TLSCACertPEM = types.StringNull(), types.StringNull(), types.StringNull()
	if t != nil {
		m.TLSCertPEM, m.TLSKeyPEM, m.TLSCACertPEM = types.StringValue(t.CertPEM), types.StringValue(t.KeyPEM), types.StringValue(t.CACertPEM)
	}
}

// validateTLSConfig: with tls = true every piece of material is required; without it none
// may be given (it would silently do nothing).
func validateTLSConfig(ctx context.Context, cfg tfsdk.Config, diags *diag.Diagnostics) {
	var on types.Bool
	var keyWO types.String
	diags.Append(cfg.GetAttribute(ctx, path.Root("tls"), &on)...)
	diags.Append(cfg.GetAttribute(ctx, path.Root(tlsKeyPEMWOAttribute), &keyWO)...)
	if diags.HasError() || on.IsUnknown() {
		return
	}
	if !on.ValueBool() && !keyWO.IsNull() {
		diags.AddAttributeError(path.Root(tlsKeyPEMWOAttribute), tlsKeyPEMWOAttribute+" without tls = true",
			fmt.Sprintf("%s is set but tls is false, so the master would serve plain text and ignore it: set tls = true, or remove %s.",
				tlsKeyPEMWOAttribute, tlsKeyPEMWOAttribute))
	}
	for _, name := range tlsAttributes {
		var v types.String
		diags.Append(cfg.GetAttribute(ctx, path.Root(name), &v)...)
		if name == "tls_key_pem" && v.IsNull() && !keyWO.IsNull() {
			continue // given write-only
		}
		switch {
		case on.ValueBool() && v.IsNull():
			diags.AddAttributeError(path.Root(name), name+" is required with tls = true",
				fmt.Sprintf("tls = true and %s is not set: %s, or set tls = false.", name, tlsSource[name]))
		case !on.ValueBool() && !v.IsNull():
			diags.AddAttributeError(path.Root(name), name+" without tls = true",
				fmt.Sprintf("%s is set but tls is false, so the master would serve plain text and ignore it: set tls = true, or remove %s.", name, name))
		}
	}
}

var tlsSource = map[string]string{
	"tls_cert_pem":    "give the master's server certificate (redlock_server_certificate's cert_pem, with the bind address in its ip_addresses)",
	"tls_key_pem":     "give its private key (redlock_server_certificate's private_key_pem; or tls_key_pem_wo, kept out of the state)",
	"tls_ca_cert_pem": "give the CA certificate that issued it (redlock_ca's cert_pem)",
}

// checkTLSPlan checks the material as the master will use it (master.Spec.CheckTLS), once it
// and the bind address are known: it parses, the key is the certificate's, the CA issued the
// certificate, which is valid now and covers the bind address. keyWO is tls_key_pem_wo.
func checkTLSPlan(plan *masterModel, keyWO types.String, diags *diag.Diagnostics) {
	if !known(plan.TLS) || !plan.TLS.ValueBool() || !known(plan.Bind) {
		return
	}
	if !keyWO.IsNull() {
		withKey := *plan
		withKey.TLSKeyPEM = keyWO
		plan = &withKey
	}
	for _, v := range []types.String{plan.TLSCertPEM, plan.TLSKeyPEM, plan.TLSCACertPEM} {
		if v.IsUnknown() {
			return // made in this apply: the create checks it
		}
	}
	addErrors(diags, (master.Spec{Bind: plan.Bind.ValueString(), TLS: masterTLS(plan)}).CheckTLS(time.Now()))
}
