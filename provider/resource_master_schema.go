package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/provider/internal/validate"
)

// Schema is redlock_master's schema: what docs/ is generated from.
func (r *masterResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	keepString := []planmodifier.String{stringplanmodifier.UseStateForUnknown()}
	replaceString := []planmodifier.String{stringplanmodifier.RequiresReplace()}
	passwordValidators := []validator.String{
		stringvalidator.LengthAtLeast(master.MinPasswordLength),
		stringvalidator.RegexMatches(noSpacePattern, "must not contain whitespace or control characters"),
	}
	argv := func(what string) schema.ListAttribute {
		return schema.ListAttribute{
			Optional: true, ElementType: types.StringType,
			MarkdownDescription: "Command (argv: program then arguments, no shell) the supervisor runs " + what + ". " +
				"Its environment has `REDLOCK_EVENT`, `REDLOCK_MASTER_NAME`, `REDLOCK_MASTER_ADDR`, `REDLOCK_DATA_DIR`, " +
				"`REDLOCK_REDIS_PID`, `REDLOCK_RESTART_DELAY_MS` and `REDLOCK_RESTART_AT`. It is bounded by 30s; its output " +
				"goes to `supervisor.log`; a failing hook is logged and never changes the restart policy. " +
				"The program must exist at plan time.",
			Validators: []validator.List{listvalidator.SizeAtLeast(1)},
		}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "One independent Redis (or Valkey) master for Redlock, configured the only safe way and " +
			"supervised on the machine Terraform runs on.\n\n" +
			"The master runs with AOF `appendfsync always`, `no-appendfsync-on-rewrite no`, `save \"\"`, " +
			"`maxmemory-policy noeviction` with an explicit `maxmemory`, no replication, protected mode, an admin " +
			"password and a restricted ACL lock user that may run only what a Redlock client needs. A detached " +
			"supervisor process (the provider binary itself, so nothing else must be installed) outlives " +
			"`terraform apply`: on a crash it keeps the master down for `restart_delay` measured from the last moment " +
			"the master was seen alive, so that every lock it granted has expired on the other masters before it " +
			"rejoins, then restarts it and runs the hooks. A clean stop needs no delay.\n\n" +
			"Changes to the safety settings made behind Terraform's back (`CONFIG SET appendonly`, `appendfsync`, " +
			"`no-appendfsync-on-rewrite`, `maxmemory`, `maxmemory-policy`, `REPLICAOF`), and to the users, `save`, " +
			"`protected-mode` and `maxclients` (`managed_settings`), show up as a diff in the next plan, and apply " +
			"restores them in place (a replica is restarted through its hold instead: see `replica_of`).\n\n" +
			"A change of `data_dir`, `port`, `bind`, `server_binary` or `tls` replaces the master (destroy, then create, " +
			"the destroy waiting for the old master's locks unless `keep_data_on_destroy`); the plan's checks know the " +
			"port and data dir of the master being replaced. A data dir is one directory whatever its spelling (a " +
			"symlink, `..`, a bind mount): another master's is refused at plan and at create.\n\n" +
			"Import with the data directory: `terraform import redlock_master.m1 /var/lib/redlock/m1`.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, PlanModifiers: keepString,
				MarkdownDescription: "The data directory (`data_dir`): what `terraform import` takes.",
			},
			"name": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Name of the master, passed to hooks as `REDLOCK_MASTER_NAME` and written to the supervisor log. 1-64 letters, digits, `.`, `_` or `-`.",
				Validators:          []validator.String{stringvalidator.RegexMatches(namePattern, "must be 1-64 letters, digits, '.', '_' or '-'")},
			},
			"bind": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "IP address the master listens on. Default: the provider's `bind`, else `127.0.0.1`. " +
					"Non-loopback addresses are refused unless `allow_non_loopback_bind = true`, and must be addresses of " +
					"this machine (or `0.0.0.0`/`::`): plan refuses any other, naming the machine's addresses. Changing it " +
					"replaces the master.",
			},
			"allow_non_loopback_bind": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Allow `bind` outside 127.0.0.0/8 and ::1: you accept that the master answers on the " +
					"network (password-protected; without `tls` plan warns that passwords cross it in clear text). The " +
					"address must still be one of this machine's, or the wildcard: plan refuses an address the machine does " +
					"not have, since the master could not listen there. An address that comes to this machine later on " +
					"purpose passes, with a warning, only when the kernel allows listening on it (sysctl " +
					"`net.ipv4.ip_nonlocal_bind = 1`, or `net.ipv6.ip_nonlocal_bind`). Default `false`.",
			},
			"port": schema.Int64Attribute{
				Optional: true, Computed: true,
				MarkdownDescription: "TCP port, 1-65535. Leave it out to pick a free port at create and keep it (shown " +
					"here). `0` also picks a free port, but then stays `0` here (Terraform keeps configured values): read " +
					"`address`. The port must be free: plan refuses a port something already listens on (for a new master, " +
					"or when port or bind change). Changing it replaces the master.",
				Validators:    []validator.Int64{int64validator.Between(0, 65535)},
				PlanModifiers: []planmodifier.Int64{int64planmodifier.UseStateForUnknown(), int64planmodifier.RequiresReplace()},
			},
			"data_dir": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Absolute path of the master's data directory (created with mode 0700): AOF, " +
					"`redis.conf` (0600), `supervisor.json`, `supervisor.state`, the logs. Must be writable and used by " +
					"no other master: plan refuses a data dir another master's supervisor runs, and of two new masters " +
					"sharing one, the apply creates one and fails the other. Changing it replaces the master.",
				Validators:    []validator.String{validate.AbsolutePath()},
				PlanModifiers: replaceString,
			},
			"server_binary": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Redis server program: `redis-server` or `valkey-server`, a name on `PATH` or an " +
					"absolute path; checked at plan time. Default: the provider's `server_binary`, else `redis-server`. " +
					"Changing it replaces the master.",
				Validators: []validator.String{validate.Executable()},
			},
			"max_lock_ttl": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(defaultMaxLockTTL),
				MarkdownDescription: "Largest lock TTL any client uses with this master (duration, e.g. `\"30s\"`, " +
					"default `\"30s\"`). Clients must never use a larger TTL. Sets the minimum `restart_delay`, which a " +
					"crashed master stays down for: above `\"5m\"` plan warns with that duration (a majority down " +
					"blocks every lock that long).",
				CustomType: timetypes.GoDurationType{}, Validators: []validator.String{validate.Duration(time.Millisecond)},
			},
			"clock_drift_margin": schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "Extra time a crashed master stays down on top of `max_lock_ttl` (duration). " +
					"Default: `\"1s\"`, or more for TTLs above about 90s. It must cover the clock-rate error Redlock " +
					"assumes (1% of `max_lock_ttl` + 2ms) plus the supervisor's 100ms health-check interval; a smaller " +
					"value is refused at plan time.",
				CustomType: timetypes.GoDurationType{}, Validators: []validator.String{validate.Duration(time.Millisecond)},
			},
			restartDelayAttribute: schema.StringAttribute{
				Optional: true, Computed: true,
				MarkdownDescription: "How long a crashed master stays unavailable, measured from its exit as its supervisor " +
					"saw it (or, when no exit was seen, such as after a reboot, from the last moment it was seen alive) (duration). Default and minimum: `max_lock_ttl + clock_drift_margin`; a larger value is " +
					"allowed, a smaller one is refused at plan time. Changed in place (the supervisor reloads it): a larger " +
					"value applies at once; a smaller one never shortens a hold, and applies once the master has run " +
					"under it for the difference, i.e. after the locks it granted under the old value have expired " +
					"(plan warns). Lower `max_lock_ttl` in every lock client before that.",
				CustomType: timetypes.GoDurationType{}, Validators: []validator.String{validate.Duration(time.Millisecond)},
			},
			"maxmemory": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(redisconf.DefaultMaxMemory),
				MarkdownDescription: "Explicit memory limit in redis.conf units (`\"64mb\"`, `\"1gb\"`, bytes), at least " +
					"`\"1mb\"`; default `\"64mb\"`. With `noeviction` a full master refuses new locks instead of dropping " +
					"held ones. Changed in place (`CONFIG SET`).",
				Validators: []validator.String{validate.MaxMemory()},
			},
			"appendfsync": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(redisconf.AppendFsync),
				MarkdownDescription: "AOF fsync policy. Only `\"always\"` (the default) keeps every acknowledged lock " +
					"across a crash or power loss; `\"everysec\"` and `\"no\"` are refused unless " +
					"`allow_unsafe_appendfsync = true`, and then every plan warns. Also shows the live value: if " +
					"someone runs `CONFIG SET appendfsync ...`, the next plan shows the diff and apply restores it.",
				Validators: []validator.String{stringvalidator.OneOf("always", "everysec", "no")},
			},
			fsyncAllowAttribute: schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Opt out of `appendfsync always`. Unsafe: a crash can lose acknowledged locks. Default `false`.",
			},
			"appendonly": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("yes"),
				MarkdownDescription: "Must be `\"yes\"` (the default): without the AOF a restarted master forgets every " +
					"lock it granted. It is here so that a live change (`CONFIG SET appendonly no`) shows as a diff in " +
					"the next plan; apply turns the AOF back on and waits until its rewrite has reached the disk.",
			},
			"no_appendfsync_on_rewrite": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(redisconf.NoAppendfsyncOnRewrite),
				MarkdownDescription: "Must be `\"no\"` (the default): `yes` skips the fsync of acknowledged writes while " +
					"the AOF is rewritten, so a crash then loses locks. It is here so that a live change shows as a diff " +
					"in the next plan; apply restores it.",
			},
			"maxmemory_policy": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(redisconf.MaxmemoryPolicy),
				MarkdownDescription: "Must be `\"noeviction\"` (the default): any eviction policy silently drops live " +
					"locks. It is here so that a live change (`CONFIG SET maxmemory-policy allkeys-lru`) shows as a diff " +
					"in the next plan; apply restores it.",
			},
			"replica_of": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(""),
				MarkdownDescription: "Must be empty (the default): Redlock masters are independent, and a promoted " +
					"replica hands out locks its master already granted. A live `REPLICAOF host port` shows here as " +
					"`\"host port\"` and as a diff in a plan made before its supervisor sees it. A replica's dataset may be " +
					"another server's (its lock keys gone), so its supervisor, within a second of seeing it a replica (or " +
					"with the id it had as one in `master_replid2`), restarts it through its hold: killed, held down for " +
					"`restart_delay` as after a crash, then started on its files, which hold no `REPLICAOF`. An apply that " +
					"finds it a replica first does the same, with a warning, rather than `REPLICAOF NO ONE`.",
			},
			"admin_password": schema.StringAttribute{
				Optional: true, Computed: true, Sensitive: true, PlanModifiers: keepString,
				MarkdownDescription: "Password of the admin (`default`) user (`requirepass`), at least 16 characters " +
					"without whitespace. Generated (32 random bytes, hex) when not given. Changed in place. Kept in the state: " +
					"with Terraform >= 1.11 give `admin_password_wo` instead, and the state holds no admin password (null here).",
				Validators: passwordValidators,
			},
			"lock_user": schema.StringAttribute{
				// The default is set in ModifyPlan, not with Default: with lock_users it is "",
				// and a schema default would make every plan differ from the state.
				Optional: true, Computed: true,
				MarkdownDescription: "Restricted ACL user lock clients authenticate as (default `redlock`): it may run " +
					"only the commands a Redlock client needs, on every key. Changed in place. Empty when `lock_users` is set.",
				Validators: []validator.String{
					stringvalidator.RegexMatches(userPattern, "must be 1-64 letters, digits, '_' or '-' (an ACL user name)"),
					stringvalidator.NoneOf("default"),
				},
			},
			"lock_password": schema.StringAttribute{
				Optional: true, Computed: true, Sensitive: true, PlanModifiers: keepString,
				MarkdownDescription: "Password of `lock_user`, at least 16 characters without whitespace. Generated " +
					"(32 random bytes, hex) when not given. Changed in place (`ACL SETUSER`). Empty when `lock_users` is set. " +
					"Kept in the state: with Terraform >= 1.11 give `lock_password_wo` instead, and the state holds no lock " +
					"password (null here).",
				Validators: passwordValidators,
			},
			"monitor_user": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(redisconf.DefaultMonitorUser),
				MarkdownDescription: "ACL user exporters (redis_exporter) log in as, when `monitor_password` is set: server " +
					"state only (PING, INFO, CLIENT LIST/INFO, SLOWLOG GET/LEN, LATENCY, MEMORY STATS, COMMAND), no key, no " +
					"channel, no CONFIG. Changed in place.",
				Validators: []validator.String{
					stringvalidator.RegexMatches(userPattern, "must be 1-64 letters, digits, '_' or '-' (an ACL user name)"),
					stringvalidator.NoneOf("default"),
				},
			},
			"monitor_password": schema.StringAttribute{
				Optional: true, Sensitive: true,
				MarkdownDescription: "Password of `monitor_user`, at least 16 characters without whitespace, its own " +
					"(not the admin's or a lock user's). No monitoring user when null. Changed in place (`ACL SETUSER`). " +
					"Kept in the state: with Terraform >= 1.11 give `monitor_password_wo` instead.",
				Validators: passwordValidators,
			},
			"lock_users": schema.MapNestedAttribute{
				Optional: true, MarkdownDescription: lockUsersDescription, Validators: lockUsersValidators(),
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key_prefix": schema.StringAttribute{Required: true,
						MarkdownDescription: "The prefix of every key and channel this user may touch, such as `\"billing:\"`, " +
							"not overlapping the kit's own keys (`redlock-kit:`). Lock clients of this user set it as their key prefix (the `client_configs` of the modules carry it)."},
					"password": schema.StringAttribute{Optional: true, Sensitive: true, Validators: lockUserPasswordValidators(),
						MarkdownDescription: "This user's password, at least 16 characters without whitespace (one " +
							"`redlock_credentials` per user generates one). Kept in the state: with Terraform >= 1.11 leave it " +
							"out and give it in `" + lockUserPasswordsWOAttribute + "` instead. One of the two is required."},
					"allow_eval": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
						MarkdownDescription: allowEvalDescription},
				}},
			},
			"hooks": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "Commands the supervisor runs around a crash. Changed in place (the supervisor reloads them).",
				Attributes: map[string]schema.Attribute{
					"on_crash":       argv("when redis-server exits without a clean shutdown (`REDLOCK_EVENT=crash`)"),
					"before_restart": argv("after the restart delay, just before it starts redis-server again (`REDLOCK_EVENT=before_restart`)"),
					"after_restart":  argv("once the restarted master answers (`REDLOCK_EVENT=after_restart`)"),
				},
			},
			"keep_data_on_destroy": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Keep `data_dir` (AOF included) when the master is destroyed or replaced. Default " +
					"`false`: the directory is removed, and because the master then forgets the locks it granted, " +
					"destroy first shuts the lock user out (no lock is granted from then on), measures how long the " +
					"locks it holds stay valid, stops it cleanly and waits that long (at most `restart_delay`), so that " +
					"no lock it held is still valid when its address is reused. Until then `data_dir` holds only a " +
					"`supervisor.state` that makes a master created there wait: if the wait is cut short (delete " +
					"timeout, terraform killed) the directory stays with that file, and a warning says until when. " +
					"With `true` the directory is kept and destroy waits all the same (a replacement at the same " +
					"address from another `data_dir` starts empty); a master started on the same `data_dir` replays the AOF.",
			},
			"timeouts": masterTimeoutsAttribute(ctx),
			"address": schema.StringAttribute{
				Computed: true, PlanModifiers: keepString,
				MarkdownDescription: "`host:port` clients connect to.",
			},
			"pid": schema.Int64Attribute{
				Computed: true,
				MarkdownDescription: "Process id of redis-server (0 while the master is held down), as of the last " +
					"refresh: a supervised restart changes it, so it may be stale until the next plan or refresh. Never " +
					"signal it; crash a master for a drill with `terraform-provider-redlock crash <data_dir>`.",
			},
			"supervisor_pid": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "Process id of the supervisor, as of the last refresh.",
			},
			"config_file": schema.StringAttribute{
				Computed: true, PlanModifiers: keepString,
				MarkdownDescription: "Path of the rendered `redis.conf` (mode 0600).",
			},
			"run_id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Redis `run_id` of the running server: changes on every restart; two endpoints with the same run_id are the same server.",
			},
			"restart_delay_ms": schema.Int64Attribute{
				Computed:            true,
				MarkdownDescription: "`restart_delay` in milliseconds.",
			},
			"max_lock_ttl_ms": schema.Int64Attribute{
				Computed: true,
				MarkdownDescription: "`max_lock_ttl` in milliseconds, known at plan time when `max_lock_ttl` is. Modules use it " +
					"instead of the `duration_ms` function, which needs terraform >= 1.8.",
			},
			"status": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "`running`, `starting`, `holding` (crashed and kept down until the restart delay " +
					"has passed; the resource stays in state), or `unsupervised`: redis-server still serves but its " +
					"supervisor is gone, so a crash would not be held back. The next plan then replaces the master: the " +
					"destroy stops that redis-server cleanly (AOF complete) and the create supervises it again. When the " +
					"supervisor and redis-server are both gone, the resource is removed from state and the next apply " +
					"creates it again in the same data_dir, held back for `restart_delay` if the stop was unclean. " +
					"`destroying`: a destroy ended (delete timeout) before the locks the master granted had expired; " +
					"its data is gone, and the next apply or destroy finishes the wait before anything else.",
			},
		},
	}
	resp.Schema.Attributes[lockUserPasswordsWOAttribute] = lockUserPasswordsWOSchema()
	resp.Schema.Attributes[managedAttribute] = managedSettingsAttribute()
	for name, a := range writeOnlyAttributes(passwordValidators) {
		resp.Schema.Attributes[name] = a
	}
	for name, a := range masterTLSAttributes() {
		resp.Schema.Attributes[name] = a
	}
}
