// Package provider is the Terraform provider "redlock": it stands up supervised, safely
// configured Redis masters for Redlock (resource redlock_master), generates the credentials
// a cluster shares (redlock_credentials, also as an ephemeral resource that never reaches
// the state), audits a deployment (data source redlock_audit)
// and offers provider::redlock::quorum.
package provider

import (
	"context"
	"fmt"
	"net/netip"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var (
	_ provider.Provider                       = &redlockProvider{}
	_ provider.ProviderWithFunctions          = &redlockProvider{}
	_ provider.ProviderWithEphemeralResources = &redlockProvider{}
)

// Built-in defaults, used when neither the resource nor the provider block sets a value.
const (
	DefaultServerBinary = "redis-server"
	DefaultBind         = "127.0.0.1"
)

// New returns a constructor of the provider at the given version ("dev" in tests).
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &redlockProvider{version: version} }
}

type redlockProvider struct {
	version   string
	claims    dataDirClaims   // data dirs planned in this provider process
	replacing replacedMasters // masters the plans of this provider process replace
	// bind replaces DefaultBind when set: the tests give each test process a loopback
	// address of its own, so that processes running side by side never share ports.
	bind string
}

type providerModel struct {
	ServerBinary types.String `tfsdk:"server_binary"`
	Bind         types.String `tfsdk:"bind"`
}

// providerDefaults is what Configure hands to resources: the provider block's values with
// the built-in defaults filled in.
type providerDefaults struct {
	ServerBinary string
	Bind         string
	claims       *dataDirClaims   // shared by every resource of this provider process
	replacing    *replacedMasters // likewise
}

func builtinDefaults() providerDefaults {
	return providerDefaults{ServerBinary: DefaultServerBinary, Bind: DefaultBind}
}

func (p *redlockProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "redlock"
	resp.Version = p.version
}

func (p *redlockProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The `redlock` provider stands up independent, safely configured and supervised Redis " +
			"(or Valkey) masters for the Redlock distributed lock algorithm on the machine Terraform runs on, and audits " +
			"a deployment. Every master runs with AOF `appendfsync always`, `noeviction`, an explicit `maxmemory`, no " +
			"replication and authentication on; a supervisor keeps a crashed master down for longer than the largest " +
			"lock TTL before it rejoins. It needs no registry: `make provider` installs it into a local filesystem mirror.",
		Attributes: map[string]schema.Attribute{
			"server_binary": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Default Redis server program for every `redlock_master` that does not set its own: " +
					"`redis-server` (the default) or `valkey-server`, a name on `PATH` or an absolute path.",
			},
			"bind": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Default address masters listen on (default `127.0.0.1`). Distinct loopback " +
					"addresses (`127.0.0.11`, `127.0.0.12`, ...) give each master its own address without root. " +
					"A non-loopback address also needs `allow_non_loopback_bind = true` on the resource.",
			},
		},
	}
}

func (p *redlockProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	d := builtinDefaults()
	d.claims, d.replacing = &p.claims, &p.replacing
	if p.bind != "" {
		d.Bind = p.bind
	}
	if v := cfg.ServerBinary; !v.IsNull() && !v.IsUnknown() {
		if v.ValueString() == "" {
			resp.Diagnostics.AddAttributeError(path.Root("server_binary"), "Empty server_binary",
				"server_binary must name a program, e.g. \"redis-server\" or \"valkey-server\"; or leave it out.")
		}
		d.ServerBinary = v.ValueString()
	}
	if v := cfg.Bind; !v.IsNull() && !v.IsUnknown() {
		if _, err := netip.ParseAddr(v.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("bind"), "Invalid bind address",
				fmt.Sprintf("bind %q is not an IP address: use e.g. \"127.0.0.1\" or another loopback address.", v.ValueString()))
		}
		d.Bind = v.ValueString()
	}
	resp.ResourceData = d
	resp.DataSourceData = d
}

func (p *redlockProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{
		NewMasterResource,
		NewCredentialsResource,
		NewCAResource,
		NewServerCertificateResource,
		NewUsersResource,
	}
}

// EphemeralResources lists the ephemeral resources (Terraform >= 1.10; older versions
// ignore them).
func (p *redlockProvider) EphemeralResources(context.Context) []func() ephemeral.EphemeralResource {
	return []func() ephemeral.EphemeralResource{NewCredentialsEphemeral, NewAuditEphemeral}
}

// DataSources lists the data sources.
func (p *redlockProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{NewAuditDataSource, NewHostConfigDataSource}
}

func (p *redlockProvider) Functions(context.Context) []func() function.Function {
	return []func() function.Function{
		NewQuorumFunction,
		NewDurationMSFunction,
	}
}
