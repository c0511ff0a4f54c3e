package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/provider/internal/validate"
)

// What redlock_ca and redlock_server_certificate share: the computed attributes of a key pair
// and `private_key_file`, the mode that keeps the private key in a 0600 file on the machine
// that runs Terraform instead of the state.

// certValidityMin is the shortest validity accepted for a CA or a server certificate.
const certValidityMin = time.Hour

// keyPair is the part of a certificate resource's model that this file fills; the models
// embed it.
type keyPair struct {
	ID            types.String `tfsdk:"id"`
	CertPEM       types.String `tfsdk:"cert_pem"`
	PrivateKeyPEM types.String `tfsdk:"private_key_pem"`
	NotAfter      types.String `tfsdk:"not_after"`
	// PrivateKeyFile keeps the key in a file instead of the state.
	PrivateKeyFile types.String `tfsdk:"private_key_file"`
}

// keyPairAttributes are the computed attributes of a certificate resource (id, cert_pem,
// private_key_pem, not_after) and its private_key_file; what names the certificate ("the CA
// certificate"), keyUse says who needs the private key, fileUse what to give the file to.
func keyPairAttributes(what, keyUse, fileUse string) map[string]schema.Attribute {
	keep := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	return map[string]schema.Attribute{
		"id": schema.StringAttribute{
			Computed: true, PlanModifiers: keep,
			MarkdownDescription: "Serial number of " + what + " (hex).",
		},
		"cert_pem": schema.StringAttribute{
			Computed: true, PlanModifiers: keep,
			MarkdownDescription: capitalized(what) + " (PEM).",
		},
		"private_key_pem": schema.StringAttribute{
			Computed: true, Sensitive: true, PlanModifiers: keep,
			MarkdownDescription: "The private key of " + what + " (PEM, PKCS#8). " + keyUse + " Null with `private_key_file`.",
		},
		"not_after": schema.StringAttribute{
			Computed: true, PlanModifiers: keep,
			MarkdownDescription: "End of the validity of " + what + " (RFC 3339).",
		},
		"private_key_file": schema.StringAttribute{
			Optional: true, PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
			MarkdownDescription: "Absolute path of a file that keeps the private key instead of the state " +
				"(`private_key_pem` is then null): created at create with mode 0600 (missing directories 0700), never " +
				"overwritten, removed at destroy. " + fileUse + " Changing it replaces the resource.",
		},
	}
}

// validityAttribute is a certificate's validity: a duration of at least certValidityMin, def
// by default; more says what else to know (the default in words, its limits).
func validityAttribute(def, more string) schema.StringAttribute {
	return schema.StringAttribute{
		Optional: true, Computed: true, Default: stringdefault.StaticString(def),
		MarkdownDescription: "How long the certificate is valid from its creation (duration, at least `\"1h\"`). " + more +
			" Changing it replaces the resource.",
		CustomType: timetypes.GoDurationType{}, Validators: []validator.String{validate.Duration(certValidityMin)},
		PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
	}
}

func capitalized(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// set fills the computed attributes from p, and with private_key_file writes the key there
// instead (private_key_pem null).
func (k *keyPair) set(p pki.Pair, diags *diag.Diagnostics) {
	cert, _ := pki.ParseCert(p.CertPEM) // made by pki just now
	k.ID = types.StringValue(cert.SerialNumber.Text(16))
	k.CertPEM, k.PrivateKeyPEM = types.StringValue(p.CertPEM), types.StringValue(p.KeyPEM)
	k.NotAfter = types.StringValue(cert.NotAfter.UTC().Format(time.RFC3339))
	if k.PrivateKeyFile.IsNull() {
		return
	}
	if err := writeSecretFile(k.PrivateKeyFile.ValueString(), []byte(p.KeyPEM), "keys"); err != nil {
		diags.AddAttributeError(path.Root("private_key_file"), "Cannot write the private key", err.Error())
		return
	}
	k.PrivateKeyPEM = types.StringNull()
}

// validateKeyFile refuses a relative private_key_file: Terraform may run from another
// directory next time. example is an absolute path to suggest.
func validateKeyFile(ctx context.Context, config tfsdk.Config, example string, diags *diag.Diagnostics) {
	var file types.String
	diags.Append(config.GetAttribute(ctx, path.Root("private_key_file"), &file)...)
	if known(file) && !filepath.IsAbs(file.ValueString()) {
		diags.AddAttributeError(path.Root("private_key_file"), "Relative key file",
			fmt.Sprintf("private_key_file = %q is relative: give an absolute path, e.g. \"${abspath(path.root)}/.redlock-secrets/%s\".",
				file.ValueString(), example))
	}
}

// warnKeyFileGone warns, at refresh, when the private_key_file in state is gone; lost says
// what that costs. It only says so: what the key served stays valid until it is replaced.
func warnKeyFileGone(ctx context.Context, state tfsdk.State, lost string, diags *diag.Diagnostics) {
	var file types.String
	diags.Append(state.GetAttribute(ctx, path.Root("private_key_file"), &file)...)
	if !known(file) {
		return
	}
	if _, err := os.Stat(file.ValueString()); err != nil {
		diags.AddAttributeWarning(path.Root("private_key_file"), "Key file unreadable",
			fmt.Sprintf("%v: %s Restore the file, or replace this resource (terraform apply -replace=<its address>).", err, lost))
	}
}

// removeKeyFile removes the private_key_file in state at destroy: a destroyed resource's key
// must not linger on disk.
func removeKeyFile(ctx context.Context, state tfsdk.State, diags *diag.Diagnostics) {
	var file types.String
	diags.Append(state.GetAttribute(ctx, path.Root("private_key_file"), &file)...)
	if !known(file) {
		return
	}
	if err := os.Remove(file.ValueString()); err != nil && !os.IsNotExist(err) {
		diags.AddAttributeError(path.Root("private_key_file"), "Cannot remove the key file",
			fmt.Sprintf("%v: remove it by hand; it holds a destroyed resource's private key.", err))
	}
}
