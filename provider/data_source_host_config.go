package provider

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/redlock-kit/redlock-kit/internal/hostconfig"
	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/provider/internal/validate"
)

var (
	_ datasource.DataSource                   = &hostConfigDataSource{}
	_ datasource.DataSourceWithValidateConfig = &hostConfigDataSource{}
)

// NewHostConfigDataSource is the redlock_host_config data source: one master rendered for a
// host the user runs (internal/hostconfig), as Terraform values.
func NewHostConfigDataSource() datasource.DataSource { return &hostConfigDataSource{} }

type hostConfigDataSource struct{}

type hostConfigModel struct {
	Name             types.String         `tfsdk:"name"`
	Address          types.String         `tfsdk:"address"`
	Port             types.Int64          `tfsdk:"port"`
	Server           types.String         `tfsdk:"server"`
	MaxLockTTL       timetypes.GoDuration `tfsdk:"max_lock_ttl"`
	ClockDriftMargin timetypes.GoDuration `tfsdk:"clock_drift_margin"`
	RestartDelay     timetypes.GoDuration `tfsdk:"restart_delay"`
	MaxMemory        types.String         `tfsdk:"maxmemory"`
	AdminPassword    types.String         `tfsdk:"admin_password"`
	LockUser         types.String         `tfsdk:"lock_user"`
	LockPassword     types.String         `tfsdk:"lock_password"`
	LockUsers        types.Map            `tfsdk:"lock_users"`
	MonitorUser      types.String         `tfsdk:"monitor_user"`
	MonitorPassword  types.String         `tfsdk:"monitor_password"`
	Exporters        types.Bool           `tfsdk:"exporters"`
	SeedFences       types.Bool           `tfsdk:"seed_fences"`
	Hooks            types.Object         `tfsdk:"hooks"`
	InstallPackages  types.Bool           `tfsdk:"install_packages"`
	// TLS (data_source_host_config_tls.go).
	TLS          types.Bool   `tfsdk:"tls"`
	TLSCertPEM   types.String `tfsdk:"tls_cert_pem"`
	TLSKeyPEM    types.String `tfsdk:"tls_key_pem"`
	TLSCACertPEM types.String `tfsdk:"tls_ca_cert_pem"`
	TLSKeyOnHost types.Bool   `tfsdk:"tls_key_on_host"`
	// Password hashes instead of passwords (data_source_host_config_hashes.go).
	AdminPasswordSHA256   types.String `tfsdk:"admin_password_sha256"`
	LockPasswordSHA256    types.String `tfsdk:"lock_password_sha256"`
	MonitorPasswordSHA256 types.String `tfsdk:"monitor_password_sha256"`

	Endpoint           types.String `tfsdk:"endpoint"`
	RestartDelayMS     types.Int64  `tfsdk:"restart_delay_ms"`
	MaxLockTTLMS       types.Int64  `tfsdk:"max_lock_ttl_ms"`
	Unit               types.String `tfsdk:"unit"`
	DataDir            types.String `tfsdk:"data_dir"`
	UserData           types.String `tfsdk:"user_data"`
	UserDataBase64Gzip types.String `tfsdk:"user_data_base64_gzip"`
	Files              types.Map    `tfsdk:"files"`
	FilePermissions    types.Map    `tfsdk:"file_permissions"`
	Commands           types.List   `tfsdk:"commands"`
}

type hooksModel struct {
	OnCrash       []string `tfsdk:"on_crash"`
	BeforeRestart []string `tfsdk:"before_restart"`
	AfterRestart  []string `tfsdk:"after_restart"`
}

func (d *hostConfigDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_host_config"
}

func (d *hostConfigDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	durationIn := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, Computed: true, MarkdownDescription: desc,
			CustomType: timetypes.GoDurationType{}, Validators: []validator.String{validate.Duration(time.Millisecond)}}
	}
	hookList := func(desc string) schema.ListAttribute {
		return schema.ListAttribute{ElementType: types.StringType, Optional: true, MarkdownDescription: desc +
			" An argv list (no shell), run as root with `REDLOCK_EVENT`, `REDLOCK_MASTER_NAME`, `REDLOCK_MASTER_ADDR`, " +
			"`REDLOCK_DATA_DIR`, `REDLOCK_REDIS_PID`, `REDLOCK_RESTART_DELAY_MS` and `REDLOCK_RESTART_AT`, killed after 30s; " +
			"a failing hook never changes the restart policy."}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "Renders one Redlock master for a host you run: Debian's `redis-server` (or `valkey-server`) " +
			"package under systemd, provisioned by cloud-init. The result is the same safe master `redlock_master` runs " +
			"locally (AOF `appendfsync always`, `noeviction` with an explicit `maxmemory`, no replication, an admin " +
			"password and a restricted lock user), bound to the host's address, plus a drop-in for the package's own " +
			"unit (its sandbox kept) that holds a start until every lock the last run granted has expired: at once after " +
			"a clean stop, `restart_delay` after the exit of a crash, and `restart_delay` from boot in every other case " +
			"(a reboot, a power loss, a new or replaced host). A new host therefore waits one `restart_delay` before it " +
			"grants anything.\n\nGive `user_data` (or `user_data_base64_gzip`) to any cloud's instance resource unchanged; " +
			"`files` and `commands` are the same content for other tools. `user_data` holds no password: the users, the " +
			"admin included, are in an ACL file as SHA-256 hashes (`#<hex>`), which the server loads and `redlock_users` " +
			"changes live; the host's own steps log in as the admin with a second password the host makes at first boot " +
			"and keeps. It stays sensitive (the hashes, and the TLS key with `tls` unless `tls_key_on_host`).",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the master, for logs and hooks.",
				Validators: []validator.String{stringvalidator.RegexMatches(namePattern, "must be 1-64 letters, digits, '.', '_' or '-'")}},
			"address": schema.StringAttribute{Required: true,
				MarkdownDescription: "The host's IP address the master listens on (its private address; never a public one)."},
			"port": schema.Int64Attribute{Optional: true, Computed: true, MarkdownDescription: "Port. Default `6379`.",
				Validators: []validator.Int64{int64validator.Between(1, 65535)}},
			"server": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Debian package that runs the master: `redis-server` (default; bookworm has 7.0) or " +
					"`valkey-server` (bookworm-backports has 8.0).",
				Validators: []validator.String{stringvalidator.OneOf(hostconfig.ServerNames()...)}},
			"max_lock_ttl":       durationIn("Largest lock TTL clients may use (duration). Default `30s`."),
			"clock_drift_margin": durationIn("Added to `max_lock_ttl` for the restart delay. Default 1% of `max_lock_ttl` + 102ms, at least `1s`."),
			"restart_delay": durationIn("How long a master that did not stop cleanly stays down. Default and minimum: " +
				"`max_lock_ttl` + `clock_drift_margin`."),
			"maxmemory": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Explicit `maxmemory` (redis.conf units, e.g. `256mb`). Default `64mb`.",
				Validators:          []validator.String{validate.MaxMemory()}},
			"admin_password": schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "Password of the admin (`default`) user, e.g. from `redlock_credentials`. Set this or " +
					"`admin_password_sha256`.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(master.MinPasswordLength)}},
			"lock_user": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "Restricted ACL user for lock clients. Default `redlock`.",
				Validators: []validator.String{stringvalidator.RegexMatches(userPattern, "must be 1-64 letters, digits, '_' or '-' (an ACL user name)"),
					stringvalidator.NoneOf("default")}},
			"lock_password": schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "Password of `lock_user`. Required unless `lock_users` is set.",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(master.MinPasswordLength)}},
			"monitor_user": schema.StringAttribute{Optional: true, Computed: true,
				MarkdownDescription: "ACL user exporters log in as (default `redlock-monitor`): server state only (PING, INFO, " +
					"CLIENT LIST/INFO, SLOWLOG GET/LEN, LATENCY, MEMORY STATS, COMMAND), no key, no channel, no CONFIG. " +
					"Defined only when `monitor_password` is set.",
				Validators: []validator.String{stringvalidator.RegexMatches(userPattern, "must be 1-64 letters, digits, '_' or '-' (an ACL user name)"),
					stringvalidator.NoneOf("default")}},
			"monitor_password": schema.StringAttribute{Optional: true, Sensitive: true,
				MarkdownDescription: "Password of `monitor_user`, its own (e.g. from a `redlock_credentials`), or give " +
					"`monitor_password_sha256`. No monitoring user when both are null; one is required with `exporters`, " +
					"whose redis_exporter logs in with a password the host makes at first boot (added to `monitor_user`, " +
					"in no user-data).",
				Validators: []validator.String{stringvalidator.LengthAtLeast(master.MinPasswordLength)}},
			"exporters": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Install and start Debian's `prometheus-redis-exporter` (logged in as `monitor_user`, " +
					"TLS when on, port 9121) and `prometheus-node-exporter` (port 9100, textfile collector in " +
					"`/var/lib/prometheus/node-exporter`, where the host publishes the master's state as `redlock.prom`). " +
					"Default false; the `redlock-hosts` module turns it on."},
			"seed_fences": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Admit lock users on a master that started empty (a new or replaced host, a lost data " +
					"disk) only once its fence registers are seeded from a majority of the other masters: its lock users " +
					"are rendered off, and it marks itself unseeded at start (`redlock-kit:fence-seed`). A `redlock_users` " +
					"over every endpoint seeds it and turns its users on; without one they stay off. Needs `lock_users`. " +
					"Default false (users on at first boot: replacing a majority of the hosts one by one can make fences " +
					"go backwards). The day-2 guide has the procedure."},
			"lock_users": schema.MapNestedAttribute{
				Optional: true, MarkdownDescription: lockUsersDescription, Validators: lockUsersValidators(),
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key_prefix": schema.StringAttribute{Required: true,
						MarkdownDescription: "The prefix of every key and channel this user may touch, such as `\"billing:\"`, " +
							"not overlapping the kit's own keys (`redlock-kit:`)."},
					"password": schema.StringAttribute{Optional: true, Sensitive: true, Validators: lockUserPasswordValidators(),
						MarkdownDescription: "This user's password, at least 16 characters without whitespace. Set this or `password_sha256`."},
					"password_sha256": schema.StringAttribute{Optional: true, Validators: sha256Validators(),
						MarkdownDescription: "Hex SHA-256 of this user's password, instead of the password: the state then holds no password."},
					"allow_eval": schema.BoolAttribute{Optional: true, MarkdownDescription: allowEvalDescription},
				}},
			},
			"hooks": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "Commands systemd runs on restart-policy events, as the local supervisor does.",
				Attributes: map[string]schema.Attribute{
					"on_crash":       hookList("After the master stopped uncleanly."),
					"before_restart": hookList("When a start is held, before the hold."),
					"after_restart":  hookList("After a held start, once the master is ready."),
				}},
			"install_packages": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Add the server package to the user-data's `packages` (cloud-init installs it). " +
					"Default `true`; set `false` for images that already have it."},

			"endpoint":         schema.StringAttribute{Computed: true, MarkdownDescription: "`address:port` lock clients use."},
			"restart_delay_ms": schema.Int64Attribute{Computed: true, MarkdownDescription: "`restart_delay` in milliseconds."},
			"max_lock_ttl_ms":  schema.Int64Attribute{Computed: true, MarkdownDescription: "`max_lock_ttl` in milliseconds (for terraform < 1.8, which has no provider functions such as `duration_ms`)."},
			"unit":             schema.StringAttribute{Computed: true, MarkdownDescription: "The systemd unit that runs the master."},
			"data_dir":         schema.StringAttribute{Computed: true, MarkdownDescription: "The package's data dir (AOF and restart records)."},
			"user_data": schema.StringAttribute{Computed: true, Sensitive: true,
				MarkdownDescription: "`#cloud-config` user-data for the host's instance resource, for clouds that take " +
					"more than EC2's 16 KiB: about 18 KiB (its settings files are gzipped when that would keep it under the " +
					"limit, and it does not). Give `user_data_base64_gzip` to an EC2 instance."},
			"user_data_base64_gzip": schema.StringAttribute{Computed: true, Sensitive: true,
				MarkdownDescription: "`user_data` gzipped and base64-encoded (e.g. `user_data_base64` of `aws_instance`); " +
					"cloud-init unpacks it. Its gzip form is always under 16 KiB (a larger one is refused)."},
			"files": schema.MapAttribute{ElementType: types.StringType, Computed: true, Sensitive: true,
				MarkdownDescription: "Path -> content of every file the host needs (for Packer, Ansible, ...)."},
			"file_permissions": schema.MapAttribute{ElementType: types.StringType, Computed: true,
				MarkdownDescription: "Path -> octal mode of each file in `files`."},
			"commands": schema.ListAttribute{ElementType: types.ListType{ElemType: types.StringType}, Computed: true,
				MarkdownDescription: "Commands (argv) to run as root, in order, once the files are written."},
		},
	}
	for name, a := range hostConfigTLSAttributes() {
		resp.Schema.Attributes[name] = a
	}
	for name, a := range hostConfigHashAttributes() {
		resp.Schema.Attributes[name] = a
	}
}

// ValidateConfig refuses at plan time what Render would refuse, for the values already known.
func (d *hostConfigDataSource) ValidateConfig(ctx context.Context, req datasource.ValidateConfigRequest, resp *datasource.ValidateConfigResponse) {
	var m hostConfigModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if known(m.Address) && net.ParseIP(m.Address.ValueString()) == nil {
		resp.Diagnostics.AddAttributeError(path.Root("address"), "Invalid address",
			fmt.Sprintf("address = %q is not an IP address: give the host's private IP, e.g. aws_instance's private_ip.", m.Address.ValueString()))
	}
	admin, lock, _ := hostPasswords(&m, &resp.Diagnostics)
	if m.LockUsers.IsNull() && lock.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("lock_password"), "No lock user",
			"Neither lock_password (or lock_password_sha256) nor lock_users is set: set lock_password (the single lock user, every key) or lock_users (one user per application, each confined to its key prefix).")
	}
	if !m.LockUsers.IsNull() && !m.LockUsers.IsUnknown() && known(m.LockPasswordSHA256) {
		resp.Diagnostics.AddAttributeError(path.Root("lock_password_sha256"), "lock_password_sha256 cannot be used with lock_users",
			"lock_password_sha256 is set and so is lock_users: with lock_users every lock user is an entry there. Remove lock_password_sha256.")
	}
	if m.SeedFences.ValueBool() && m.LockUsers.IsNull() {
		resp.Diagnostics.AddAttributeError(path.Root("seed_fences"), "seed_fences needs lock_users",
			"seed_fences = true renders the lock users off until redlock_users seeds the master, and redlock_users manages "+
				"lock_users (each confined to its key_prefix): set lock_users, or leave seed_fences out.")
	}
	var cfgLockUser types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("lock_user"), &cfgLockUser)...)
	users := hostLockUsersAsPasswords(ctx, m.LockUsers, &resp.Diagnostics)
	checkLockUsersAtPlan(ctx, users, cfgLockUser, m.LockPassword, admin, &resp.Diagnostics)
	if known(admin) && admin.Equal(lock) {
		resp.Diagnostics.AddAttributeError(path.Root("lock_password"), "Lock password equals the admin password",
			"lock_password must differ from admin_password: lock clients must not be able to act as the admin.")
	}
	if m.MaxLockTTL.IsUnknown() || m.ClockDriftMargin.IsUnknown() || m.RestartDelay.IsUnknown() {
		return
	}
	spec, ok := hostTiming(m)
	if !ok {
		return // the attribute validators report unparsable durations
	}
	addFieldErrors(spec.CheckTiming(), &resp.Diagnostics)
}

// hostTiming reads the three durations; ok is false when one does not parse.
func hostTiming(m hostConfigModel) (spec master.Spec, ok bool) {
	for _, f := range []struct {
		v   timetypes.GoDuration
		dst *time.Duration
	}{{m.MaxLockTTL, &spec.MaxLockTTL}, {m.ClockDriftMargin, &spec.ClockDriftMargin}, {m.RestartDelay, &spec.RestartDelay}} {
		if f.v.IsNull() || f.v.IsUnknown() {
			continue
		}
		d, err := validate.ParseDuration(f.v.ValueString())
		if err != nil {
			return spec, false
		}
		*f.dst = d
	}
	if spec.MaxLockTTL == 0 {
		spec.MaxLockTTL = master.DefaultMaxLockTTL
	}
	return spec, true
}

// addFieldErrors reports master.FieldErrors on their attributes, other errors plainly.
func addFieldErrors(err error, diags *diag.Diagnostics) {
	if err == nil {
		return
	}
	fields := master.FieldErrors(err)
	if len(fields) == 0 {
		diags.AddError("Cannot render the master", err.Error())
	}
	for _, fe := range fields {
		diags.AddAttributeError(path.Root(fe.Field), fe.Summary, fe.Detail)
	}
}

func (d *hostConfigDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m hostConfigModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	spec, ok := hostTiming(m)
	if !ok {
		resp.Diagnostics.AddError("Invalid duration", "max_lock_ttl, clock_drift_margin or restart_delay does not parse.")
		return
	}
	spec.Name, spec.Bind, spec.Port = m.Name.ValueString(), m.Address.ValueString(), int(m.Port.ValueInt64())
	spec.MaxMemory, spec.LockUser = m.MaxMemory.ValueString(), m.LockUser.ValueString()
	admin, lock, monitor := hostPasswords(&m, &resp.Diagnostics)
	spec.AdminPassword, spec.LockPassword = admin.ValueString(), lock.ValueString()
	users, _, ds := lockUsersFromModel(ctx, hostLockUsersAsPasswords(ctx, m.LockUsers, &resp.Diagnostics))
	resp.Diagnostics.Append(ds...)
	spec.LockUsers = users
	spec.MonitorUser, spec.MonitorPassword = ifSet(monitor, m.MonitorUser.ValueString()), monitor.ValueString()
	spec.TLS = hostTLS(&m)
	if !m.Hooks.IsNull() {
		var h hooksModel
		resp.Diagnostics.Append(m.Hooks.As(ctx, &h, basetypes.ObjectAsOptions{})...)
		spec.Hooks = master.Hooks{OnCrash: h.OnCrash, BeforeRestart: h.BeforeRestart, AfterRestart: h.AfterRestart}
	}
	if resp.Diagnostics.HasError() {
		return
	}
	tflog.Debug(ctx, "redlock_host_config read: rendering the host's files", map[string]any{
		"name": spec.Name, "address": spec.Bind, "server": m.Server.ValueString()})
	b, err := hostconfig.Render(hostconfig.Host{Spec: spec, Server: m.Server.ValueString(),
		InstallPackages: m.InstallPackages.IsNull() || m.InstallPackages.ValueBool(), Exporters: m.Exporters.ValueBool(),
		SeedFences: m.SeedFences.ValueBool()})
	if err != nil {
		tflog.Debug(ctx, "redlock_host_config read failed", map[string]any{"name": spec.Name, "error": err.Error()})
		addFieldErrors(err, &resp.Diagnostics)
		return
	}
	s := b.Spec
	if len(s.LockUsers) > 0 {
		s.LockUser = "" // tenants replace the single lock user
	}
	m.MonitorUser = types.StringValue(or(s.MonitorUser, redisconf.DefaultMonitorUser))
	m.Port, m.Server, m.LockUser, m.MaxMemory = types.Int64Value(int64(s.Port)), types.StringValue(b.Server.Package),
		types.StringValue(s.LockUser), types.StringValue(s.MaxMemory)
	m.MaxLockTTL, m.ClockDriftMargin, m.RestartDelay = keepOr(m.MaxLockTTL, s.MaxLockTTL), keepOr(m.ClockDriftMargin, s.ClockDriftMargin),
		keepOr(m.RestartDelay, s.RestartDelay)
	m.Endpoint, m.RestartDelayMS = types.StringValue(s.Addr()), types.Int64Value(s.RestartDelay.Milliseconds())
	m.MaxLockTTLMS = types.Int64Value(s.MaxLockTTL.Milliseconds())
	m.Unit, m.DataDir = types.StringValue(b.Server.Unit), types.StringValue(s.DataDir)
	m.UserData, m.UserDataBase64Gzip = types.StringValue(b.UserData), types.StringValue(b.UserDataGzipBase64)
	files, modes := map[string]attr.Value{}, map[string]attr.Value{}
	for _, f := range b.Files {
		files[f.Path], modes[f.Path] = types.StringValue(f.Content), types.StringValue(f.Permissions)
	}
	var diags diag.Diagnostics
	m.Files, diags = types.MapValue(types.StringType, files)
	resp.Diagnostics.Append(diags...)
	m.FilePermissions, diags = types.MapValue(types.StringType, modes)
	resp.Diagnostics.Append(diags...)
	m.Commands, diags = types.ListValueFrom(ctx, types.ListType{ElemType: types.StringType}, b.Commands)
	resp.Diagnostics.Append(diags...)
	tflog.Info(ctx, "redlock_host_config read: rendered", map[string]any{
		"name": m.Name.ValueString(), "address": m.Endpoint.ValueString(), "data_dir": m.DataDir.ValueString(),
		"unit": m.Unit.ValueString(), "max_lock_ttl": m.MaxLockTTL.ValueString(), "restart_delay": m.RestartDelay.ValueString(),
		"files": len(b.Files)})
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// keepOr keeps a configured duration as written ("1m" stays "1m") and fills in a default.
func keepOr(v timetypes.GoDuration, d time.Duration) timetypes.GoDuration {
	if !v.IsNull() && !v.IsUnknown() {
		return v
	}
	return durationValue(d.String())
}
