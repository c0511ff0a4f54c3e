package provider

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/provider/internal/validate"
)

var (
	_ datasource.DataSource                   = &auditDataSource{}
	_ datasource.DataSourceWithValidateConfig = &auditDataSource{}
)

// NewAuditDataSource is the redlock_audit data source: the same audit as
// `lockagent validate` phase 1 (internal/audit), as Terraform values.
func NewAuditDataSource() datasource.DataSource { return &auditDataSource{} }

type auditDataSource struct{}

// auditArgumentsModel is what both redlock_audit's take, the data source and the ephemeral
// resource: one conversion (auditTargetFromModel) refuses bad arguments the same way in both.
type auditArgumentsModel struct {
	Endpoints    []types.String       `tfsdk:"endpoints"`
	Username     types.String         `tfsdk:"username"`
	Password     types.String         `tfsdk:"password"`
	LockUsername types.String         `tfsdk:"lock_username"`
	LockPassword types.String         `tfsdk:"lock_password"`
	MaxLockTTL   timetypes.GoDuration `tfsdk:"max_lock_ttl"`
	RestartDelay timetypes.GoDuration `tfsdk:"restart_delay"`
	TLS          types.Bool           `tfsdk:"tls"`
	CACertPEM    types.String         `tfsdk:"ca_cert_pem"`
	NodeTimeout  timetypes.GoDuration `tfsdk:"node_timeout"`
}

// auditVerdictModel is the verdict both redlock_audit's return.
type auditVerdictModel struct {
	Safe      types.Bool     `tfsdk:"safe"`
	Quorum    types.Int64    `tfsdk:"quorum"`
	Reachable types.Int64    `tfsdk:"reachable"`
	Problems  []types.String `tfsdk:"problems"`
	Warnings  []types.String `tfsdk:"warnings"`
}

type auditModel struct {
	auditArgumentsModel
	auditVerdictModel
	// Independence says whether the masters can be independent (one machine or not).
	Independence types.String       `tfsdk:"independence"`
	Masters      []auditMasterModel `tfsdk:"masters"`
}

type auditMasterModel struct {
	Endpoint               types.String  `tfsdk:"endpoint"`
	Reachable              types.Bool    `tfsdk:"reachable"`
	Error                  types.String  `tfsdk:"error"`
	Role                   types.String  `tfsdk:"role"`
	ConnectedReplicas      types.Int64   `tfsdk:"connected_replicas"`
	MasterHost             types.String  `tfsdk:"master_host"`
	RunID                  types.String  `tfsdk:"run_id"`
	AOFEnabled             types.Bool    `tfsdk:"aof_enabled"`
	AppendFsync            types.String  `tfsdk:"appendfsync"`
	NoAppendfsyncOnRewrite types.String  `tfsdk:"no_appendfsync_on_rewrite"`
	MaxMemory              types.Int64   `tfsdk:"maxmemory"`
	MaxMemoryPolicy        types.String  `tfsdk:"maxmemory_policy"`
	AOFLastWriteStatus     types.String  `tfsdk:"aof_last_write_status"`
	ClockOffsetMS          types.Float64 `tfsdk:"clock_offset_ms"`
	ClockRate              types.Float64 `tfsdk:"clock_rate"`
	RTTMS                  types.Float64 `tfsdk:"rtt_ms"`
	UptimeSeconds          types.Int64   `tfsdk:"uptime_seconds"`
	BusyReplyThresholdMS   types.Int64   `tfsdk:"busy_reply_threshold_ms"`
	FunctionLibrary        types.String  `tfsdk:"function_library"`
	FunctionLibraryVersion types.String  `tfsdk:"function_library_version"`
	PublishedRestartDelay  types.Int64   `tfsdk:"published_restart_delay_ms"`
	Anonymous              types.String  `tfsdk:"anonymous"`
}

func (d *auditDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_audit"
}

func (d *auditDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	computed := func(desc string) schema.Attribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Audits a Redlock deployment: every master is checked for independence (no replication, " +
			"distinct servers), durability (AOF `appendfsync always`, `no-appendfsync-on-rewrite no`, last AOF write ok), " +
			"eviction (`noeviction` with an explicit `maxmemory`), a clock that agrees with this machine's in offset and " +
			"rate, and a round trip small next to the TTL; that clients without credentials are refused; that every " +
			"user but the admin has a password and may run none of the commands the server itself marks `@admin` or " +
			"`@dangerous` or that rewrite functions (asked with `ACL DRYRUN`, whether or not `lock_username` is set); " +
			"that several connections to an endpoint reach one server (no balancer in front of several); the restart " +
			"delay each master's runtime publishes (hash `redlock-kit:deployment`), longer than `max_lock_ttl` plus the " +
			"clock-drift margin; and the deployment for an odd count of at least 3 masters and a reachable quorum.\n\n" +
			"The audit fails closed: a check it cannot make (a command renamed away, an admin without ACL rights) is a " +
			"problem, so `safe` is false.\n\n" +
			"An unsafe deployment does not fail the read: `safe` is false and `problems` says why, one sentence each " +
			"(master, setting, fix). Use it in a `postcondition` or `check` block. Only invalid arguments fail. " +
			"The same code runs as the first phase of `lockagent validate`.",
		Attributes: map[string]schema.Attribute{
			"endpoints": schema.ListAttribute{
				ElementType: types.StringType, Required: true,
				MarkdownDescription: "The masters to audit, `host:port` each, in the order clients use them.",
				Validators:          []validator.List{listvalidator.SizeAtLeast(1)},
			},
			"username": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "User the audit logs in as (default `default`, the admin user). It must be allowed " +
					"`CONFIG GET`, `INFO` and `TIME`; the restricted lock user is not, on purpose.",
			},
			"password": schema.StringAttribute{
				Optional: true, Sensitive: true,
				MarkdownDescription: "Password of `username` (the admin password).",
			},
			"lock_username": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Restricted lock user. When set (with `lock_password`), the audit also logs in as it " +
					"and checks that `CONFIG` is refused. Its rights are checked with every other user's either way.",
			},
			"lock_password": schema.StringAttribute{
				Optional: true, Sensitive: true,
				MarkdownDescription: "Password of `lock_username`.",
			},
			"max_lock_ttl": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Largest lock TTL clients use (duration, e.g. `30s`). The restart-delay, clock and " +
					"round-trip checks are relative to it.",
				CustomType: timetypes.GoDurationType{}, Validators: []validator.String{validate.Duration(time.Millisecond)},
			},
			"restart_delay": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "How long the configuration says a crashed master stays down (duration), a " +
					"cross-check only: the restart delay is read from the masters (what their runtime publishes), and a " +
					"value here that differs from it, or is below `max_lock_ttl` plus the drift margin (1% + 2ms), is a problem.",
				CustomType: timetypes.GoDurationType{}, Validators: []validator.String{validate.Duration(time.Millisecond)},
			},
			"tls": schema.BoolAttribute{
				Optional: true,
				MarkdownDescription: "Connect with TLS (server name = the endpoint's host), verifying the masters " +
					"against `ca_cert_pem` (else the system's roots), and check that every master serves TLS only " +
					"(its plain-text port closed). Default `false`.",
			},
			"ca_cert_pem": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "PEM certificate of the deployment's CA (`redlock_ca`'s `cert_pem`) the masters are " +
					"verified against; needs `tls = true`.",
			},
			"node_timeout": schema.StringAttribute{
				Optional: true,
				MarkdownDescription: "Per-master bound on connecting and on each command (duration, default `2s`); a master " +
					"that does not answer within it is reported unreachable.",
				CustomType: timetypes.GoDurationType{}, Validators: []validator.String{validate.Duration(time.Millisecond)},
			},
			"safe": schema.BoolAttribute{
				Computed:            true,
				MarkdownDescription: "True only when `problems` is empty.",
			},
			"quorum": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Majority of the endpoints, N/2+1: how many masters must grant a lock.",
			},
			"reachable": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "How many masters answered.",
			},
			"problems": schema.ListAttribute{
				ElementType: types.StringType, Computed: true,
				MarkdownDescription: "What makes the deployment unsafe, one plain sentence each naming the master, the " +
					"setting and the fix. Empty when `safe`.",
			},
			"warnings": schema.ListAttribute{
				ElementType: types.StringType, Computed: true,
				MarkdownDescription: "What costs fault tolerance or latency without breaking exclusion, one sentence each: " +
					"a minority of masters unreachable (for example a crashed master waiting out its restart delay), " +
					"round trips large against the TTL. `safe` stays true.",
			},
			"independence": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "Whether the masters can be independent: `one machine: for trying the kit, not independent` " +
					"when every endpoint is on loopback or one address (not a problem, but not a production deployment).",
			},
			"masters": schema.ListNestedAttribute{
				Computed:            true,
				MarkdownDescription: "What the audit found on each endpoint, in the order of `endpoints`.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"endpoint":  computed("The endpoint, as given."),
					"reachable": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the master answered."},
					"error":     computed("Why the master could not be audited (fully); empty when it could."),
					"role":      computed("`master`, or `slave` for a replica (a finding)."),
					"connected_replicas": schema.Int64Attribute{Computed: true,
						MarkdownDescription: "Replicas attached to it (any is a finding: Redlock needs independent masters)."},
					"master_host":               computed("`host:port` of the server it replicates from, when it is a replica."),
					"run_id":                    computed("The server's run id; two endpoints with the same run id are the same server (a finding)."),
					"aof_enabled":               schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether AOF persistence is on."},
					"appendfsync":               computed("AOF fsync policy; anything but `always` is a finding."),
					"no_appendfsync_on_rewrite": computed("`no` is safe; `yes` skips fsync during AOF rewrites (a finding)."),
					"maxmemory": schema.Int64Attribute{Computed: true,
						MarkdownDescription: "Memory limit in bytes; 0 (unlimited) is a finding."},
					"maxmemory_policy":      computed("Eviction policy; anything but `noeviction` is a finding."),
					"aof_last_write_status": computed("`ok`, or `err` when the last AOF write failed (a finding)."),
					"clock_offset_ms": schema.Float64Attribute{Computed: true,
						MarkdownDescription: "The master's clock minus this machine's, in milliseconds, at the midpoint of a `TIME` round trip."},
					"clock_rate": schema.Float64Attribute{Computed: true,
						MarkdownDescription: "How fast the master's clock ran next to this machine's over a short interval (1 = same rate)."},
					"rtt_ms": schema.Float64Attribute{Computed: true,
						MarkdownDescription: "Median round-trip time in milliseconds."},
					"uptime_seconds": schema.Int64Attribute{Computed: true,
						MarkdownDescription: "Seconds since the server started."},
					"busy_reply_threshold_ms": schema.Int64Attribute{Computed: true,
						MarkdownDescription: "How long a script may run before the master answers `BUSY` and accepts `SCRIPT KILL` " +
							"(`busy-reply-threshold`, `lua-time-limit` before Redis 7), in milliseconds; -1 when unread. " +
							"0 or more than 1000 is a warning."},
					"function_library": computed("The kit's function library on the master: `current`, `stale` (another version: " +
						"a warning), `missing` (a warning: lock users that may only `FCALL` cannot lock there), or empty when it " +
						"could not be read."),
					"function_library_version": computed("Version of the loaded function library (`lockagent functions --version` " +
						"prints this kit's)."),
					"published_restart_delay_ms": schema.Int64Attribute{Computed: true,
						MarkdownDescription: "The restart delay the master's runtime publishes (`redlock-kit:deployment`), in " +
							"milliseconds; -1 when it could not be read, or when the record does not vouch for this server (written " +
							"for another run of it, or its config file changed on disk)."},
					"anonymous": computed("`refused` when a client without credentials is refused (NOAUTH), `allowed` when it is " +
						"let in (a problem), empty when it could not be told."),
				}},
			},
		},
	}
}

// ValidateConfig refuses endpoints that are not host:port at plan time.
func (d *auditDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	// The list itself is unknown at plan time when it comes from masters not created yet.
	var list types.List
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("endpoints"), &list)...)
	if resp.Diagnostics.HasError() || list.IsNull() || list.IsUnknown() {
		return
	}
	var endpoints []types.String
	resp.Diagnostics.Append(list.ElementsAs(ctx, &endpoints, false)...)
	if resp.Diagnostics.HasError() {
		return
	}
	for i, e := range endpoints {
		if e.IsNull() || e.IsUnknown() {
			continue
		}
		if err := auditCheckEndpoint(e.ValueString()); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("endpoints").AtListIndex(i), "Invalid endpoint", err.Error())
		}
	}
}

func auditCheckEndpoint(e string) error {
	host, port, err := net.SplitHostPort(e)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("endpoint %q is not host:port: write e.g. \"127.0.0.1:6379\" (IPv6: \"[::1]:6379\")", e)
	}
	return nil
}

func (d *auditDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m auditModel
	rep := runAudit(ctx, req.Config, &m, &resp.Diagnostics)
	if rep == nil {
		return
	}
	tflog.Info(ctx, "redlock_audit read", map[string]any{"safe": rep.Safe, "quorum": rep.Quorum, "reachable": rep.Reachable,
		"masters": len(rep.Masters), "problems": rep.Problems, "warnings": rep.Warnings})
	m.auditVerdictModel = auditVerdict(rep)
	m.Independence = types.StringValue(rep.Independence)
	m.Masters = make([]auditMasterModel, len(rep.Masters))
	for i, a := range rep.Masters {
		m.Masters[i] = auditMasterModel{
			Endpoint:               types.StringValue(a.Endpoint),
			Reachable:              types.BoolValue(a.Reachable),
			Error:                  types.StringValue(a.Error),
			Role:                   types.StringValue(a.Role),
			ConnectedReplicas:      types.Int64Value(int64(a.ConnectedReplicas)),
			MasterHost:             types.StringValue(a.MasterHost),
			RunID:                  types.StringValue(a.RunID),
			AOFEnabled:             types.BoolValue(a.AOFEnabled),
			AppendFsync:            types.StringValue(a.AppendFsync),
			NoAppendfsyncOnRewrite: types.StringValue(a.NoAppendfsyncOnRewrite),
			MaxMemory:              types.Int64Value(a.MaxMemory),
			MaxMemoryPolicy:        types.StringValue(a.MaxMemoryPolicy),
			AOFLastWriteStatus:     types.StringValue(a.AOFLastWriteStatus),
			ClockOffsetMS:          types.Float64Value(audit.Millis(a.ClockOffset)),
			ClockRate:              types.Float64Value(a.ClockRate),
			RTTMS:                  types.Float64Value(audit.Millis(a.RTT)),
			UptimeSeconds:          types.Int64Value(int64(a.Uptime / time.Second)),
			BusyReplyThresholdMS:   types.Int64Value(a.BusyReplyThresholdMS()),
			FunctionLibrary:        types.StringValue(a.FunctionLibrary),
			FunctionLibraryVersion: types.StringValue(a.FunctionLibraryVersion),
			PublishedRestartDelay:  types.Int64Value(a.PublishedRestartDelayMS()),
			Anonymous:              types.StringValue(a.Anonymous),
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// auditConfigModel is a redlock_audit's model (the data source's or the ephemeral resource's):
// its arguments are what runAudit converts.
type auditConfigModel interface{ arguments() *auditArgumentsModel }

func (a *auditArgumentsModel) arguments() *auditArgumentsModel { return a }

// runAudit reads m from the configuration, converts its arguments and runs the audit. An
// unreadable configuration, a bad argument (an attribute error each) or an audit that could
// not finish is added to diags, and the report is nil.
func runAudit(ctx context.Context, config tfsdk.Config, m auditConfigModel, diags *diag.Diagnostics) *audit.Report {
	if diags.Append(config.Get(ctx, m)...); diags.HasError() {
		return nil
	}
	target, ok := auditTargetFromModel(m.arguments(), diags)
	if !ok {
		return nil
	}
	tflog.Debug(ctx, "redlock_audit: checking the masters", map[string]any{
		"endpoints": target.Endpoints, "username": target.Username, "lock_username": target.LockUsername,
		"max_lock_ttl": target.MaxLockTTL.String(), "restart_delay": target.RestartDelay.String(), "node_timeout": target.NodeTimeout.String()})
	rep, err := audit.Run(ctx, target)
	if err != nil {
		tflog.Debug(ctx, "redlock_audit failed", map[string]any{"error": err.Error()})
		if errors.Is(err, audit.ErrBadTarget) {
			diags.AddError("Invalid redlock_audit arguments", err.Error())
		} else {
			diags.AddError("Audit interrupted", fmt.Sprintf("The audit did not finish: %v.", err))
		}
		return nil
	}
	return rep
}

// auditVerdict is the report's verdict as Terraform values.
func auditVerdict(rep *audit.Report) auditVerdictModel {
	return auditVerdictModel{
		Safe:      types.BoolValue(rep.Safe),
		Quorum:    types.Int64Value(int64(rep.Quorum)),
		Reachable: types.Int64Value(int64(rep.Reachable)),
		Problems:  stringValues(rep.Problems),
		Warnings:  stringValues(rep.Warnings),
	}
}

func stringValues(s []string) []types.String {
	out := make([]types.String, len(s))
	for i, v := range s {
		out[i] = types.StringValue(v)
	}
	return out
}

// auditTargetFromModel converts the arguments, adding an attribute error for each bad one.
func auditTargetFromModel(m *auditArgumentsModel, diags *diag.Diagnostics) (audit.Target, bool) {
	t := audit.Target{Username: "default", TLS: m.TLS.ValueBool()}
	for i, e := range m.Endpoints {
		if e.IsNull() {
			diags.AddAttributeError(path.Root("endpoints").AtListIndex(i), "Null endpoint",
				"Every element of endpoints must be a host:port string.")
			continue
		}
		if err := auditCheckEndpoint(e.ValueString()); err != nil {
			diags.AddAttributeError(path.Root("endpoints").AtListIndex(i), "Invalid endpoint", err.Error())
		}
		t.Endpoints = append(t.Endpoints, e.ValueString())
	}
	if v := m.Username.ValueString(); v != "" {
		t.Username = v
	}
	if ca := m.CACertPEM.ValueString(); ca != "" {
		conf, err := pki.ClientConfig(ca)
		switch {
		case !t.TLS:
			diags.AddAttributeError(path.Root("ca_cert_pem"), "ca_cert_pem without tls",
				"ca_cert_pem is set but tls is not true: set tls = true, or remove ca_cert_pem.")
		case err != nil:
			diags.AddAttributeError(path.Root("ca_cert_pem"), "Unusable ca_cert_pem",
				fmt.Sprintf("ca_cert_pem: %v: give the PEM certificate of the deployment's CA (redlock_ca's cert_pem).", err))
		}
		t.TLSConfig = conf
	}
	t.Password = m.Password.ValueString()
	t.LockUsername, t.LockPassword = m.LockUsername.ValueString(), m.LockPassword.ValueString()
	if (t.LockUsername == "") != (t.LockPassword == "") {
		diags.AddAttributeError(path.Root("lock_password"), "Incomplete lock credentials",
			"Set both lock_username and lock_password to check the lock user, or neither.")
	}
	duration := func(name string, v timetypes.GoDuration, dst *time.Duration) {
		if v.IsNull() || v.ValueString() == "" {
			return
		}
		d, err := validate.ParseDuration(v.ValueString())
		if err == nil && d <= 0 {
			err = fmt.Errorf("%s must be greater than zero", v.ValueString())
		}
		if err != nil {
			diags.AddAttributeError(path.Root(name), "Invalid duration", fmt.Sprintf("%s: %v.", name, err))
			return
		}
		*dst = d
	}
	duration("max_lock_ttl", m.MaxLockTTL, &t.MaxLockTTL)
	duration("restart_delay", m.RestartDelay, &t.RestartDelay)
	duration("node_timeout", m.NodeTimeout, &t.NodeTimeout)
	return t, !diags.HasError()
}
