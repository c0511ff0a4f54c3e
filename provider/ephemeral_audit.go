package provider

import (
	"context"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/redlock-kit/redlock-kit/provider/internal/validate"
)

var _ ephemeral.EphemeralResource = &auditEphemeral{}

// NewAuditEphemeral is the ephemeral redlock_audit (Terraform >= 1.10): the redlock_audit
// data source's audit for passwords that must stay out of the state. A data source's
// arguments are stored in the state, so Terraform refuses ephemeral values there (such as
// the ephemeral redlock_credentials' passwords); an ephemeral resource takes them and is
// never stored.
func NewAuditEphemeral() ephemeral.EphemeralResource { return &auditEphemeral{} }

type auditEphemeral struct{}

// auditEphemeralModel is the data source's model without the per-master details: what a
// postcondition needs.
type auditEphemeralModel struct {
	auditArgumentsModel
	auditVerdictModel
}

func (e *auditEphemeral) Metadata(_ context.Context, req ephemeral.MetadataRequest, resp *ephemeral.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_audit"
}

func (e *auditEphemeral) Schema(_ context.Context, _ ephemeral.SchemaRequest, resp *ephemeral.SchemaResponse) {
	duration := func(desc string, required bool) schema.StringAttribute {
		return schema.StringAttribute{Required: required, Optional: !required, MarkdownDescription: desc,
			CustomType: timetypes.GoDurationType{}, Validators: []validator.String{validate.Duration(time.Millisecond)}}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The audit of the `redlock_audit` data source (same checks, same arguments), as an ephemeral " +
			"resource (Terraform >= 1.10): its arguments may be ephemeral values, such as the passwords of the ephemeral " +
			"`redlock_credentials`, and nothing of it is stored in a plan or the state. Terraform runs it on every plan " +
			"and apply that needs it. An unsafe deployment does not fail the audit: `safe` is false, `problems` says why, " +
			"and so does a warning (Terraform refuses ephemeral values in error messages, so a `precondition` on `safe` " +
			"can only point to it). Test `safe` in a precondition of a managed resource, such as a `terraform_data`: a " +
			"postcondition on the ephemeral resource itself makes `terraform show -json` of Terraform 1.11 panic. The " +
			"per-master details are in the data source (and `lockagent validate --json`).",
		Attributes: map[string]schema.Attribute{
			"endpoints": schema.ListAttribute{
				ElementType: types.StringType, Required: true,
				MarkdownDescription: "The masters to audit, `host:port` each, in the order clients use them.",
				Validators:          []validator.List{listvalidator.SizeAtLeast(1)},
			},
			"username": schema.StringAttribute{Optional: true,
				MarkdownDescription: "User the audit logs in as (default `default`, the admin user)."},
			"password": schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "Password of `username` (the admin password); may be ephemeral."},
			"lock_username": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Restricted lock user, also logged in as (with `lock_password`)."},
			"lock_password": schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "Password of `lock_username`; may be ephemeral."},
			"max_lock_ttl":  duration("Largest lock TTL clients use (duration, e.g. `30s`).", true),
			"restart_delay": duration("How long the configuration says a crashed master stays down (a cross-check).", false),
			"tls": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Connect with TLS, verifying the masters against `ca_cert_pem`."},
			"ca_cert_pem": schema.StringAttribute{Optional: true,
				MarkdownDescription: "PEM certificate of the deployment's CA; needs `tls = true`."},
			"node_timeout": duration("Per-master bound on connecting and on each command (default `2s`).", false),
			"safe":         schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether every check ran and passed."},
			"quorum":       schema.Int64Attribute{Computed: true, MarkdownDescription: "N/2+1."},
			"reachable":    schema.Int64Attribute{Computed: true, MarkdownDescription: "Masters that answered."},
			"problems": schema.ListAttribute{ElementType: types.StringType, Computed: true,
				MarkdownDescription: "Why the deployment is not safe, one sentence each (master, setting, fix)."},
			"warnings": schema.ListAttribute{ElementType: types.StringType, Computed: true,
				MarkdownDescription: "What is safe but worth knowing."},
		},
	}
}

func (e *auditEphemeral) Open(ctx context.Context, req ephemeral.OpenRequest, resp *ephemeral.OpenResponse) {
	var m auditEphemeralModel
	// The data source's conversion and run, so that both refuse the same arguments the same way.
	rep := runAudit(ctx, req.Config, &m, &resp.Diagnostics)
	if rep == nil {
		return
	}
	tflog.Info(ctx, "ephemeral redlock_audit", map[string]any{"safe": rep.Safe, "quorum": rep.Quorum,
		"reachable": rep.Reachable, "problems": rep.Problems, "warnings": rep.Warnings})
	if !rep.Safe {
		// Terraform refuses ephemeral values in error messages: a precondition on safe can
		// only point here, so the problems are said here.
		resp.Diagnostics.AddWarning("The Redlock deployment is not safe", strings.Join(rep.Problems, " "))
	}
	m.auditVerdictModel = auditVerdict(rep)
	resp.Diagnostics.Append(resp.Result.Set(ctx, &m)...)
}
