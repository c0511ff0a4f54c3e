#!/bin/sh
# redlock-master: the delayed-restart policy of one Redlock master under systemd.
# Written by redlock-kit. systemd runs each step from the unit's drop-in, with the '+' prefix
# (as root, outside the unit's sandbox, so the server itself keeps every restriction):
#   gate     ExecStartPre   hold the start until locks the last run granted have expired
#   functions ExecStartPost turn an empty master's lock users off, load the function library,
#                           publish the delay (or fail the start)
#   started  ExecStartPost  record the pid, run the after_restart hook after a hold
#   stop     ExecStop       pause writes, rewrite the AOF, SHUTDOWN (bounded)
#   stopped  ExecStopPost   record how the run ended: a clean-stop marker or a hold
#   setup    cloud-init     enable and start the unit (once, at provisioning)
#   state    a timer        publish how the server config on disk differs from the rendered
#                           one, and the master's state for node_exporter (STATE_FILE, below)
#
# The policy and its records: docs/guides/restart-hold.md (fail-closed).
set -u
# The names the kit defines once in Go (the deployment record's key, fields and runtime name,
# MAX_RESTART_DELAY_MS) are not written here: the rendering puts them right after the
# interpreter line (hostconfig's kitNames). The master's own settings, RESTART_DELAY_MS
# (hold.ShellName of the record's restart_delay_ms) among them, come from master.conf.

conf=${REDLOCK_MASTER_CONF:-/etc/redlock/master.conf}
# shellcheck disable=SC1090
. "$conf" || { echo "redlock-master: cannot read $conf" >&2; exit 1; }

uptime_file=${REDLOCK_UPTIME_FILE:-/proc/uptime}
boot_id_file=${REDLOCK_BOOT_ID_FILE:-/proc/sys/kernel/random/boot_id}
machine_id_file=${REDLOCK_MACHINE_ID_FILE:-/etc/machine-id}
run_dir=${REDLOCK_RUN_DIR:-/run/redlock}
clean="$DATA_DIR/redlock.clean-stop"
hold="$DATA_DIR/redlock.hold"
floor="$DATA_DIR/redlock.floor"
proof="$run_dir/stop-proof"
# The token of the last clean stop, kept outside the data dir (root's, this boot's): a data
# dir rolled back to an earlier clean stop brings that stop's marker and token, not this one.
rtok="$run_dir/token"
# The server's pidfile (the rendered config's: hostconfig's Server.PIDFile): after a clean
# stop it holds a token the clean marker names (see stopped).
pidf="$DATA_DIR/${UNIT%.service}.pid"
# With seeding on: a restored AOF was found; the master is marked unseeded at its next start.
unseeded="$DATA_DIR/redlock.unseeded"

log() { echo "redlock-master: $*" >&2; }
# fail: the master stays down (a failed ExecStartPre fails the start; systemd tries again).
fail() {
	log "$*: the master stays down"
	exit 1
}
# is_count: a number the shell computes with as written: digits, no leading 0 (octal), at
# most 18 of them (64-bit arithmetic).
is_count() { case "$1" in 0) ;; '' | *[!0-9]* | 0* | ???????????????????*) return 1 ;; esac; }
# Values read from disk are checked before any arithmetic: unreadable keeps the master down.
# le N MAX: N is whole ms, at most MAX (a MAX that is no number fails too).
le() { is_count "$1" && [ "$1" -le "$2" ]; }
le "${RESTART_DELAY_MS:-}" "${MAX_RESTART_DELAY_MS:-}" && [ "$RESTART_DELAY_MS" -gt 0 ] ||
	{ echo "redlock-master: bad RESTART_DELAY_MS in $conf" >&2 && exit 1; }

# now_ms: CLOCK_BOOTTIME in ms by 64-bit shell arithmetic (mawk's %d stops at 2^31-1).
now_ms() {
	read -r up _ <"$uptime_file" || return 1
	secs=${up%%.*}
	frac=
	case "$up" in *.*) frac=${up#*.} ;; esac
	frac=${frac}000
	frac=${frac%"${frac#???}"}
	while [ "${frac#0}" != "$frac" ]; do frac=${frac#0}; done
	is_count "$secs" && is_count "${frac:-0}" || return 1
	echo $((secs * 1000 + ${frac:-0}))
}
boot_id() { cat "$boot_id_file" 2>/dev/null || echo unknown; }
machine_id() { cat "$machine_id_file" 2>/dev/null || echo unknown; }

# durable FILE CONTENT: write, fsync the file and its directory.
durable() {
	printf '%s\n' "$2" >"$1.tmp" && sync "$1.tmp" && mv -f "$1.tmp" "$1" && sync "$DATA_DIR"
}
# forget FILE...: remove, durably; fails when a file is still there.
forget() {
	rm -f "$@" 2>/dev/null
	for f in "$@"; do [ ! -e "$f" ] || return 1; done
	sync "$DATA_DIR"
}

# The floor: "boot until delay run_delay": locks of earlier runs live until <until> (this
# boot), granted under up to <delay>; the last run grants under <run_delay> (0: stopped).
# read_floor NOW BOOT fails when the record is unreadable: not whole ms, a delay above the
# max, or (this boot) an until beyond NOW + the largest delay: callers keep the master down.
read_floor() {
	f_boot= f_until=0 f_delay=0 f_run=0
	[ -e "$floor" ] || return 0
	read -r f_boot f_until f_delay f_run <"$floor" && is_count "$f_until" && le "$f_delay" "$MAX_RESTART_DELAY_MS" &&
		le "$f_run" "$MAX_RESTART_DELAY_MS" && { [ "$f_boot" != "$2" ] || in_bounds "$f_until" "$1"; }
}
bad_floor() { fail "$floor is unreadable: remove it once the largest delay ever set has passed"; }
max() { if [ "$1" -gt "$2" ]; then echo "$1"; else echo "$2"; fi; }
# largest_delay: the largest delay ever configured, as the floor read last says.
largest_delay() { max "$RESTART_DELAY_MS" "$(max "$f_delay" "$f_run")"; }

# hold_from_now NOW BOOT: until when a master that stops (or is found stopped) now is held.
hold_from_now() {
	read_floor "$1" "$2" || return 1
	d=$(max "$RESTART_DELAY_MS" "$f_run")
	if [ "$f_boot" = "$2" ]; then
		max $(($1 + d)) "$f_until"
	else
		echo $(($1 + $(max "$d" "$f_delay")))
	fi
}

# in_bounds UNTIL NOW: no later than NOW + the largest delay (read_floor first).
in_bounds() { le "$1" $(($2 + $(largest_delay))); }

hook_env() {
	export REDLOCK_EVENT="$1" REDLOCK_MASTER_NAME="$NAME" REDLOCK_MASTER_ADDR="$ADDR" \
		REDLOCK_DATA_DIR="$DATA_DIR" REDLOCK_RESTART_DELAY_MS="$RESTART_DELAY_MS" \
		REDLOCK_REDIS_PID="${2:-}" REDLOCK_RESTART_AT="${3:-}"
}

# run_hook EVENT FUNCTION PID RESTART_AT: the hook runs in its own process, killed after
# HOOK_TIMEOUT_S; a failing or hanging hook never changes the policy.
run_hook() {
	hook_env "$1" "$3" "$4"
	timeout -s KILL "$HOOK_TIMEOUT_S" "$0" hook "$2" </dev/null >&2 2>&1 ||
		log "hook $1 failed (status $?)"
	return 0
}

# runs_server PID: the process runs the server's binary (or the one a package upgrade
# replaced under it: "<path> (deleted)"). Debian's redis-server is a link to redis-check-rdb.
runs_server() { e=$(readlink "/proc/$1/exe" 2>/dev/null) && [ "${e% (deleted)}" = "$(readlink -f "$SERVER_BINARY")" ]; }

# server_seen: a server serves on the master's address or from its data dir, named by a
# record or not (run by hand, an image's stock service): its locks count until it stops.
server_seen() {
	# One find over the processes' cwd links, not a readlink per process: a busy machine runs
	# thousands. (The data dir is the package's: no glob characters in it.)
	for p in $(find /proc -mindepth 2 -maxdepth 2 -name cwd -lname "$DATA_DIR" 2>/dev/null); do
		p=${p%/cwd}
		runs_server "${p#/proc/}" || continue
		seen="pid ${p#/proc/} in $DATA_DIR"
		return 0
	done
	# No answer in 5 s (connected, but paused or SIGSTOPped) is a server too.
	out=$(cli PING 2>&1 </dev/null) || [ $? != 124 ] || out=BUSY
	case "$out" in
	*PONG* | *NOAUTH* | *WRONGPASS* | *ERR* | *LOADING* | *BUSY* | *MASTERDOWN*)
		seen="a server answers on $ADDR"
		return 0
		;;
	esac
	return 1
}

# aof_digest: the AOF files as they are now (name, size, mtime, inode of each): a marker
# vouches for these files only, not for a backup restored or a file replaced since.
aof_digest() {
	(cd "$DATA_DIR/appendonlydir" && export LC_ALL=C && stat -c '%n %s %Y %i' -- *) 2>/dev/null |
		sha256sum | cut -c1-64
}

# read_marker: the clean marker's fields: "v4 <machine> <boot> <ms> <AOF digest> <token>
# <data dir>"; an earlier version's v3 has no token ("v3 <machine> <boot> <ms> <AOF digest>
# <data dir>": its dir is read as m_tok).
read_marker() { [ -f "$clean" ] && read -r m_ver m_machine m_boot m_ms m_aof m_tok m_dir <"$clean"; }

# clean_marker_counts BOOT: the marker was written on this machine, data dir and boot, for
# the AOF files that are there now, by the last clean stop (its token in $rtok too), and no
# server started with the master's config since: every start of one writes its pid over the
# token in the pidfile, and a clean exit removes the file (whatever else its command line
# changes: --appendonly no, --dir). A v3 marker, which names no token, never counts (fail
# closed: one hold after an upgrade in place).
clean_marker_counts() {
	read_marker || return 1
	[ "$m_ver" = v4 ] && [ "$m_machine" = "$(machine_id)" ] && [ "$m_boot" = "$1" ] &&
		is_count "$m_ms" && [ "$m_dir" = "$DATA_DIR" ] && [ "$m_aof" = "$(aof_digest)" ] &&
		[ "$(cat "$pidf" 2>/dev/null)" = "$m_tok" ] && [ "$(cat "$rtok" 2>/dev/null)" = "$m_tok" ]
}

# restored: a marker (v3 or v4, of any boot) is there that was written on another machine
# or for another data dir (a disk image, a volume moved: another master's dataset or an
# older one), or over other AOF files than those there now (a backup restored, files
# replaced), or in this boot by another stop than the last one this boot recorded ($rtok:
# the data dir rolled back to an earlier clean stop).
restored() {
	read_marker && { [ "$m_machine ${m_dir:-$m_tok} $m_aof" != "$(machine_id) $DATA_DIR $(aof_digest)" ] ||
		{ [ "$m_boot" = "$(boot_id)" ] && [ -e "$rtok" ] && [ "$(cat "$rtok")" != "$m_tok" ]; }; }
}

# forget_clean, record_hold CONTENT: or the master stays down.
forget_clean() { forget "$clean" || fail "cannot remove the clean-stop marker $clean"; }
record_hold() { durable "$hold" "$1" || fail "cannot record the hold in $hold"; }

# wait_out_server BOOT: a server that runs now may be granting locks: wait until it is gone,
# and record a hold from then (gone_until). Fails (1) when no server runs.
wait_out_server() {
	server_seen || return 1
	forget_clean
	prior=0
	now=$(now_ms) || fail "cannot read the clock $uptime_file"
	read_floor "$now" "$1" || bad_floor
	read -r rec_boot rec_until _ 2>/dev/null <"$hold" && [ "$rec_boot" = "$1" ] && in_bounds "$rec_until" "$now" && prior=$rec_until
	# Should the wait be cut short (the unit stopped), the server may serve on unseen: the
	# next start holds restart_delay from then (the record reads as no time).
	record_hold "$1 unnamed-server $prior"
	log "$seen, unrecorded: waiting until it stops"
	while server_seen; do sleep 1; done
	now=$(now_ms) || fail "cannot read the clock $uptime_file"
	gone_until=$(hold_from_now "$now" "$1") || bad_floor
	gone_until=$(max "$gone_until" "$prior")
	record_hold "$1 $gone_until"
	log "the server is gone"
}

# gated: the gate lets the server start: the last clean stop's token is used up, and a
# stopped step from now on follows a server's run (gating).
gated() { echo - >"$rtok" && rm -f "$run_dir/gating" || fail "cannot write $rtok"; }

gate() {
	# Until the gate lets the server start, a stopped step follows no run: it keeps the
	# records as the gate left them (a gate that fails keeps the marker it read).
	mkdir -p "$run_dir" && rm -f "$run_dir/restarted" "$proof" && : >"$run_dir/gating" || fail "cannot prepare $run_dir"
	now=$(now_ms) || fail "cannot read the clock $uptime_file"
	boot=$(boot_id)
	# The TLS key may come by the operator's provisioning, after cloud-init (tls_key_on_host).
	# Until it does, a hold counts from the first attempt (its record also tells the stopped
	# step that no server ran: no crash). The server reads the key as its own user.
	k=${TLS_KEY_FILE:-}
	if [ -n "$k" ] && [ ! -s "$k" ]; then
		[ -e "$hold" ] || record_hold "$boot $(hold_from_now "$now" "$boot")"
		fail "no TLS key at $k"
	fi
	[ -z "$k" ] || { chown "$SERVICE_USER:$SERVICE_GROUP" "$k" && chmod 0600 "$k" || fail "cannot chown $k"; }
	# With seeding on, a restore is a replacement (restored): its fence registers, and its
	# seed record, are the backup's. It is recorded (unseeded) before anything can remove the
	# marker (a server found running, which may have changed the files too, or the hold),
	# until a start marks the master unseeded (seed_mark) whatever its record says.
	[ -z "${SEED_KEY:-}" ] || ! restored || durable "$unseeded" restored || fail "cannot record $unseeded"
	wait_out_server "$boot"
	# With seeding on, a data dir without an AOF has no fence registers, whatever its ACL
	# file says (live changes saved it with the lock users on), nor has a restored one: the
	# file is made again from the rendered one (lock users off) until redlock_users seeds the
	# master. The rule's table: internal/redisconf's SeedScenarios (the test harness runs it
	# too). redis-server loads an AOF through its manifest only: a dir without one starts empty.
	[ -z "${SEED_KEY:-}" ] || { [ ! -e "$unseeded" ] && [ -s "$DATA_DIR/appendonlydir/appendonly.aof.manifest" ]; } ||
		host_admin "$ACL_SEED" || fail "cannot reset $ACL_FILE"
	if [ -f "$clean" ] && [ ! -e "$hold" ] && clean_marker_counts "$boot"; then
		forget_clean
		open_floor "$now" "$boot"
		gated
		log "last stop was clean: starting at once"
		state
		return 0
	fi
	read_floor "$now" "$boot" || bad_floor
	until=$(hold_from_now "$now" "$boot") || bad_floor
	why="no record of a clean stop (first start, reboot, power loss, new host)"
	if [ -e "$clean" ] && [ ! -e "$hold" ]; then
		why="the clean-stop marker does not count (its machine, data dir, boot, AOF or token)"
	fi
	if [ -e "$hold" ]; then
		why="unreadable hold record, or an unnamed server's"
		if read -r rec_boot rec_until <"$hold" && { [ "$rec_boot" != "$boot" ] || in_bounds "$rec_until" "$now"; } && is_count "$rec_until"; then
			if [ "$rec_boot" = "$boot" ]; then
				until=$(max "$rec_until" "$f_until")
				why="the last run did not stop cleanly"
			else
				why="the last run did not stop cleanly before a reboot"
			fi
		fi
	fi
	# Recorded before the wait, so that a stop or a power loss during it holds again.
	forget_clean
	record_hold "$boot $until"
	wait_ms=$((until - now))
	state
	if [ "$wait_ms" -gt 0 ]; then
		restart_at=$(date -u -d "@$(($(date +%s) + (wait_ms + 999) / 1000))" +%Y-%m-%dT%H:%M:%SZ)
		log "holding the start for ${wait_ms}ms until $restart_at: $why"
		run_hook before_restart hook_before_restart "" "$restart_at"
		while now=$(now_ms) && [ "$now" -lt "$until" ]; do
			# A server run by hand during the hold grants locks of its own: they count
			# from when it is gone, even when it is gone before the hold ends.
			if wait_out_server "$boot"; then
				until=$(max "$until" "$gone_until")
				log "holding the start for $((until - now))ms: an unnamed server ran"
				continue
			fi
			left=$((until - now))
			[ "$left" -gt 1000 ] && left=1000
			sleep "$((left / 1000)).$(printf %03d $((left % 1000)))"
		done
		: >"$run_dir/restarted"
	fi
	now=$(now_ms) || fail "cannot read the clock $uptime_file"
	open_floor "$now" "$boot"
	forget "$hold" || fail "cannot remove the hold record $hold"
	gated
	log "hold over: starting"
	state
}

# open_floor NOW BOOT: the run about to start grants under RESTART_DELAY_MS.
open_floor() {
	read_floor "$1" "$2" || bad_floor
	keep_until=0 keep_delay=0
	if [ "$f_boot" = "$2" ] && [ "$f_until" -gt "$1" ]; then
		keep_until=$f_until keep_delay=$f_delay
	fi
	durable "$floor" "$2 $keep_until $keep_delay $RESTART_DELAY_MS" || fail "cannot record the restart delay floor in $floor"
}

# close_floor NOW BOOT: the last run stopped: its locks live until NOW + its delay.
close_floor() {
	until=$(hold_from_now "$1" "$2") || return 1
	d=$(max "$RESTART_DELAY_MS" "$f_run")
	if [ "$f_boot" != "$2" ] || [ "$f_until" -gt "$1" ]; then d=$(max "$d" "$f_delay"); fi
	durable "$floor" "$2 $until $d 0"
}

started() {
	mkdir -p "$run_dir"
	echo "${MAINPID:-}" >"$run_dir/pid"
	state
	if [ -e "$run_dir/restarted" ]; then
		rm -f "$run_dir/restarted"
		run_hook after_restart hook_after_restart "${MAINPID:-}" ""
	fi
}

cli() {
	# A TLS master serves TLS only: the CLI verifies it against the deployment's CA.
	if [ -n "${TLS_CA_FILE:-}" ]; then set -- --tls --cacert "$TLS_CA_FILE" "$@"; fi
	REDISCLI_AUTH=$(cat "$ADMIN_PASSWORD_FILE") timeout 5 "$CLI" -h "$HOST" -p "$PORT" --no-auth-warning "$@"
}

# host_admin: the host's own passwords, made here at first boot, which never leave the host
# (the user-data holds password hashes only): the admin (default) user's, for the host's
# steps, and with the exporters (EXPORTER_ENV) the monitoring user's, for redis_exporter,
# kept in its root-only environment file. Each hash is one more password of its user (the
# operators' stay valid), in the server's ACL file: the rendered one (ACL_SEED) the first
# time or when given it, afterwards the file as live changes saved it.
pw() { od -An -vtx1 -N32 /dev/urandom | tr -d ' \n'; }
sha() { printf %s "$1" | sha256sum | cut -d' ' -f1; }
host_admin() {
	[ -s "$ADMIN_PASSWORD_FILE" ] || (umask 077 && pw >"$ADMIN_PASSWORD_FILE") || return 1
	hash="#$(sha "$(cat "$ADMIN_PASSWORD_FILE")")" mu= mh=
	if [ -n "${EXPORTER_ENV:-}" ]; then
		grep -q ^REDIS_PASSWORD= "$EXPORTER_ENV" || echo "REDIS_PASSWORD=$(pw)" >>"$EXPORTER_ENV" || return 1
		mu=$(sed -n 's/^REDIS_USER="\(.*\)"$/\1/p' "$EXPORTER_ENV")
		mh="#$(sha "$(sed -n 's/^REDIS_PASSWORD=//p' "$EXPORTER_ENV")")"
	fi
	from=${1:-$ACL_FILE}
	[ -s "$from" ] || from=$ACL_SEED
	awk -v h="$hash" -v mu="$mu" -v mh="$mh" 'function add(x) { for (i = 3; i <= NF; i++) if ($i == x) return; $0 = $0 " " x }
$1 == "user" && $2 == "default" { add(h) } $1 == "user" && $2 == mu { add(mh) } { print }' "$from" >"$ACL_FILE.new" &&
		grep -q "^user default .*$hash" "$ACL_FILE.new" && { [ -z "$mu" ] || grep -q "^user $mu .*$mh" "$ACL_FILE.new"; } &&
		chown "$SERVICE_USER:$SERVICE_GROUP" "$ACL_FILE.new" && chmod 0600 "$ACL_FILE.new" && mv "$ACL_FILE.new" "$ACL_FILE"
}

# functions: FUNCTION LOAD REPLACE of the kit's library, as the admin. Lock users may FCALL
# its functions and run no other Lua; functions persist in the AOF, so this replaces the
# version the last run had with the one this host was rendered with.
functions() {
	# A fence is taken through the library only (FCALL): a master that loaded nothing has
	# no fence function for its lock users until this loads it, so seed_mark turns them
	# off first where it must.
	seed_mark || return 1
	out=$(cli -x FUNCTION LOAD REPLACE <"$FUNCTIONS_FILE" 2>&1)
	if [ "$out" != "$FUNCTIONS_LIBRARY" ]; then
		log "cannot load the function library $FUNCTIONS_FILE: ${out:-no answer}"
		return 1
	fi
	log "function library $FUNCTIONS_LIBRARY loaded"
	publish
}

# seed_mark: with SEED_KEY (seed_fences), a master that started empty is marked unseeded
# (its lock users are off in the rendered ACL file; redlock_users seeds its fence registers
# from the other masters, then turns them on); a master that cannot be marked stays down.
# A master with no record loaded none: a seeded one has it in its AOF, so its files passed
# the gate but loaded nothing (an incr file emptied over an empty base), and the ACL file it
# loaded may have the lock users on: the rendered one is loaded before the mark, so that
# redlock_users (which seeds a marked master only) cannot turn them on in between, and
# before the library is loaded (functions), so that they can take no fence until then.
# A restored AOF (the gate's unseeded record) is marked whatever record it brought.
seed_mark() {
	if [ -n "${SEED_KEY:-}" ]; then
		had=$(cli HEXISTS "$SEED_KEY" state)
		is_count "$had" || { log "cannot mark $SEED_KEY unseeded: ${had:-no answer}"; return 1; }
		set -- HSETNX "$SEED_KEY" state unseeded
		# A restored or replaced dataset's record is replaced: the backup's seeding, its reason
		# and sources, is not this master's.
		[ ! -e "$unseeded" ] || { had=0 && set -- EVAL "redis.call('DEL',KEYS[1]) return redis.call('HSET',KEYS[1],unpack(ARGV))" 1 "$SEED_KEY" state unseeded reason "$(cat "$unseeded")"; }
		if [ "$had" = 0 ]; then
			host_admin "$ACL_SEED" && [ "$(cli ACL LOAD 2>&1)" = OK ] ||
				{ log "$SEED_KEY: cannot turn the lock users off (ACL LOAD of $ACL_SEED)"; return 1; }
		fi
		is_count "$(cli "$@")" && forget "$unseeded" || { log "cannot mark $SEED_KEY unseeded"; return 1; }
	fi
}

# publish: the deployment record a validator reads: the delay a lock granted from now on is
# held for, this runtime, and the storage the data dir is on. A floor still in effect (a lowered delay) holds longer, but it
# lapses with nothing here to republish then: the record never says more than is held.
publish() {
	delay_ms=$RESTART_DELAY_MS
	# The run_id and replid of the server the unit started: the record vouches for those.
	id=$(info server run_id)
	rid=$(info replication master_replid)
	# The drift of the file the server was started on counts for its whole run (drift_check);
	# its run_id and master_replid2 at the start, for replaced.
	d=$(config_drift) r2=$(info replication master_replid2)
	fs=$(stat -f -c %T "$DATA_DIR") && [ -n "$fs" ] || { log "cannot tell the storage $DATA_DIR is on"; return 1; }
	out=$(cli HSET "$DEPLOYMENT_KEY" "$DELAY_FIELD" "$delay_ms" "$RUNTIME_FIELD" "$RUNTIME" "$RUN_ID_FIELD" "${id:-?}" "$REPL_ID_FIELD" "${rid:-?}" "$DRIFT_FIELD" "$d" "$FS_FIELD" "$fs" 2>&1)
	if ! is_count "$out"; then
		log "cannot record the restart delay in $DEPLOYMENT_KEY: ${out:-no answer}"
		return 1
	fi
	# Once the record is there: the tick takes a run whose record is gone for a flushed one.
	mkdir -p "$run_dir" && echo "$d" >"$run_dir/start-drift" && echo "$id $r2" >"$run_dir/repl" ||
		{ log "cannot write $run_dir"; return 1; }
	log "restart delay ${delay_ms}ms recorded in $DEPLOYMENT_KEY"
}

# config_drift: how the server config on disk differs from the one rendered for this host
# (CONFIG_SHA256; none: nothing to compare with), or nothing. The server runs on what it
# loaded, but its next start, after a crash too, loads the file: the deployment record says
# so (DRIFT_FIELD) and the audit reports it.
config_drift() {
	[ -z "${CONFIG_SHA256:-}" ] || { s=$(sha256sum <"$CONFIG_FILE" | cut -c1-64) && [ "$s" = "$CONFIG_SHA256" ] ||
		echo "$CONFIG_FILE changed on disk since it was rendered (sha256 ${s:-unreadable}, rendered $CONFIG_SHA256)"; } 2>/dev/null
}
# info SECTION FIELD: a field of INFO (letters and digits: INFO ends its lines with CR).
info() { cli INFO "$1" | sed -n "s/^$2:\([0-9a-z]*\).*/\1/p"; }

# replaced: the server the unit started (its run_id and master_replid2 at the start, which
# publish recorded) serves another server's dataset since: it is a replica, or its
# master_replid2 holds an id it did not have at the start (the id it had as one, kept after
# REPLICAOF NO ONE). A new master_replid alone is no replacement: Redis makes one when a
# replica or a backup (redis-cli --rdb) first attaches, and when the backlog is freed. The
# local supervisor decides the same (replacedSince). So is a server whose deployment record
# is gone: the functions step wrote it, and only a flush (or a DEL) takes it. No answer: not
# replaced.
replaced() {
	read -r b_id b_r2 <"$run_dir/repl" && [ "$(info server run_id)" = "$b_id" ] || return 1
	[ "$(cli EXISTS "$DEPLOYMENT_KEY")" != 0 ] || return 0
	r2=$(info replication master_replid2)
	case $(info replication role):$r2 in slave:*) ;; master:*[!0]*) [ "$r2" != "$b_r2" ] ;; *) false ;; esac
}

# drift_check: the state timer republishes the drift: the file's now, or, with the file as
# rendered, that this server was started on one that was not (start-drift): putting the
# file back does not change what the server loaded, and the audit reads only some settings
# live. Only into the record of the server running
# now (a record that is gone or names another run is left as it is: the audit reports those
# on their own); the script's reply is checked (redis-cli exits 0 on error replies).
drift_check() {
	d=$(config_drift) s=$(cat "$run_dir/start-drift" 2>/dev/null)
	[ -n "$d" ] || [ -z "$s" ] || d="the server runs on a config that was not the rendered one ($s): restart it"
	[ -z "$d" ] || log "$d"
	id=$(info server run_id 2>/dev/null </dev/null) && [ -n "$id" ] || return 0
	out=$(cli EVAL "if redis.call('HGET',KEYS[1],ARGV[1])==ARGV[2] then return redis.call('HSET',KEYS[1],ARGV[3],ARGV[4]) end return 0" 1 \
		"$DEPLOYMENT_KEY" "$RUN_ID_FIELD" "$id" "$DRIFT_FIELD" "$d" 2>&1 </dev/null)
	is_count "$out" || log "cannot publish the config drift: $out"
}

stop() {
	# Rewrite the AOF from memory first, so released locks do not come back after the
	# restart; bounded, best effort: SHUTDOWN fsyncs the AOF either way.
	if cli CLIENT PAUSE 10000 WRITE >/dev/null 2>&1 && cli BGREWRITEAOF >/dev/null 2>&1; then
		i=0
		while [ "$i" -lt 50 ]; do
			info=$(cli INFO persistence 2>/dev/null) || break
			case "$info" in *aof_rewrite_in_progress:0*) case "$info" in *aof_rewrite_scheduled:0*) break ;; esac ;; esac
			sleep 0.1
			i=$((i + 1))
		done
	else
		log "could not rewrite the AOF before the stop"
	fi
	# Durable only with the AOF on and fsynced before every reply, read as writes pause.
	mkdir -p "$run_dir" && rm -f "$proof"
	conf=" $(cli CONFIG GET appendonly appendfsync 2>&1 | tr '\n' ' ') "
	case "$conf" in
	*" appendonly yes "*) case "$conf" in *" appendfsync always "*) durable=yes ;; esac ;;
	esac
	# Nor is the stop of a server whose dataset was replaced (the state timer may not have
	# seen it yet): what it fsyncs is another server's.
	! replaced 2>/dev/null || { log "its dataset was replaced: this stop counts as unclean"; durable=; mark_replaced; }
	if [ "${durable:-}" = yes ]; then
		echo "${MAINPID:-} durable" >"$proof" || log "cannot record the durable stop in $proof"
	else
		log "not durable (${conf# }): this stop counts as unclean"
	fi
	cli SHUTDOWN >/dev/null 2>&1
	return 0
}

# durable_exit PID: the stop step shut PID down with the AOF on and appendfsync always, and
# the server's log (its file, else the unit's journal: it logs to stdout) shows PID, since
# its start, fsync the AOF at the exit and say "ready to exit": an admin may turn the AOF
# off after the step read it, and lose what it acknowledged since. The journal may lag the
# exit of a process by a moment: asked for about 5 s.
durable_exit() {
	[ -n "$1" ] && [ -f "$proof" ] && read -r p_pid p_what <"$proof" && [ "$p_pid" = "$1" ] && [ "$p_what" = durable ] || return 1
	for _ in 1 2 3 4 5; do
		if [ -n "${SERVER_LOG_FILE:-}" ]; then cat "$SERVER_LOG_FILE"; else journalctl -u "$UNIT" -o cat -n 9999; fi 2>/dev/null |
			awk -v p="$1:" 'index($0,p)!=1{next} /oO0OoO0OoO0Oo/{f=r=0} /fsync\(\) on the AOF/{f=1} /ready to exit/{r=1} END{exit !(f&&r)}' && return 0
		sleep 1
	done
	log "no AOF fsync and exit of pid $1 logged"
	return 1
}

stopped() {
	trap 'rm -f "$proof"' EXIT
	result=${SERVICE_RESULT:-unknown}
	now=$(now_ms) || { log "cannot read the clock $uptime_file"; exit 1; }
	boot=$(boot_id)
	pid=$(cat "$run_dir/pid" 2>/dev/null)
	# Whatever the records below become, the state file says so (telemetry, after them).
	trap 'rm -f "$proof"; state' EXIT
	if [ -e "$hold" ] || [ -e "$run_dir/gating" ]; then
		# The gate was interrupted, or failed, before the server started: its records stay.
		log "stopped during the hold ($result)"
		return 0
	fi
	exited "$(date +%s) 0"
	# An unreadable floor is kept as it is (the gate refuses on it): replaced, it would
	# forget the delay earlier runs granted under.
	read_floor "$now" "$boot" || bad_floor
	close_floor "$now" "$boot" || { log "cannot record the restart delay floor in $floor"; exit 1; }
	# The server removed its pidfile at its exit: one there now is a server's started by hand
	# since (its pid), which the token must not replace.
	if [ "$result" = success ] && [ "${EXIT_CODE:-}" = exited ] && [ "${EXIT_STATUS:-}" = 0 ] && [ ! -e "$pidf" ] && durable_exit "$pid"; then
		# A token in its place, named by the marker (and kept in $rtok), is overwritten by the
		# next server started with the config (clean_marker_counts).
		tok=$(pw)
		durable "$pidf" "$tok" && chown "$SERVICE_USER:$SERVICE_GROUP" "$pidf" && echo "$tok" >"$rtok" &&
			durable "$clean" "v4 $(machine_id) $boot $now $(aof_digest) $tok $DATA_DIR" || { log "cannot record the clean stop in $clean"; exit 1; }
		exited "$(date +%s) 1"
		log "clean stop recorded"
		return 0
	fi
	why="result $result, ${EXIT_CODE:-?} ${EXIT_STATUS:-?}"
	[ "$result" = success ] && why="$why, no durable shutdown proven"
	forget "$clean" || log "cannot remove the clean-stop marker $clean"
	until=$(hold_from_now "$now" "$boot") || bad_floor
	if ! durable "$hold" "$boot $until"; then
		log "cannot record the hold in $hold ($why)"
		run_hook crash hook_on_crash "$pid" ""
		exit 1
	fi
	log "stopped uncleanly ($why): the next start waits $((until - now))ms"
	run_hook crash hook_on_crash "$pid" ""
}

# exited WALL CLEAN: the server's last exit, for the state file only (this boot's).
exited() { echo "$1" >"$run_dir/last-exit" 2>/dev/null || :; }

# mark_replaced: a replaced dataset holds another server's fence registers and seed record:
# recorded as a restore is (unseeded; with seeding off too, for a seed_fences set later).
mark_replaced() { durable "$unseeded" replaced || log "cannot record $unseeded"; }

# state: republish the config drift, and with STATE_FILE set (exporters on), publish the
# master's state for node_exporter's textfile collector (docs/monitoring.md has the
# contract). Both run in subshells that cannot touch the caller's variables or exit it, and
# a failure is logged, never more.
state() {
	# A server whose dataset was replaced (replaced) may grant again a lock it granted: it is
	# killed, so that systemd restarts it through the gate, which holds it restart_delay from
	# the exit, as after a crash. The state timer looks every 30 s. The pid it reports is
	# killed only if it runs the server's binary (runs_server).
	(! replaced 2>/dev/null </dev/null || { mark_replaced; p=$(info server process_id) && runs_server "$p" && kill -KILL "$p" &&
		w="pid $p killed" || w="pid ${p:-?} cannot be killed"; log "its dataset was replaced (REPLICAOF, a flush): $w"; })
	(drift_check)
	[ -n "${STATE_FILE:-}" ] || return 0
	(write_state) || log "cannot write $STATE_FILE"
	return 0
}

# g NAME HELP VALUE [LABELS,]: one gauge, with the HELP line the contract fixes.
g() { printf '# HELP redlock_%s %s\n# TYPE redlock_%s gauge\nredlock_%s{%smaster="%s"} %s\n' "$1" "$2" "$1" "$1" "${4:-}" "$label" "$3"; }

write_state() {
	now=$(now_ms) && wall=$(date +%s) || return 1
	boot=$(boot_id)
	label=$(printf %s "$NAME" | sed 's/[\\"]/\\&/g')
	held=0 left=0
	if [ -e "$hold" ]; then
		# The gate holds, or will as soon as systemd starts it again.
		held=1 until=
		read -r rec_boot until <"$hold" && is_count "$until" && [ "$rec_boot" = "$boot" ] || until=$(hold_from_now "$now" "$boot")
		left=$(max $((until - now)) 0)
	fi
	ex=0 ok=0
	[ -f "$run_dir/last-exit" ] && read -r ex ok <"$run_dir/last-exit"
	is_count "$ex" && is_count "$ok" || ex=0 ok=0
	fsync=$(cli CONFIG GET appendfsync 2>/dev/null </dev/null | sed -n 2p)
	cert=
	[ -z "${TLS_CERT_FILE:-}" ] || cert=$(date -d "$(openssl x509 -enddate -noout -in "$TLS_CERT_FILE" | cut -d= -f2)" +%s) || cert=
	mkdir -p "${STATE_FILE%/*}" && tmp=$(mktemp "$STATE_FILE.XXXXXX") || return 1
	{
		g master_holding "1 while the gate holds the master's start after an unclean stop, else 0." $held
		g master_hold_until_seconds "Unix time at which the current hold ends; 0 when not holding." $((held * (wall + (left + 999) / 1000)))
		# In seconds although the delay is kept in ms everywhere else: seconds are Prometheus's
		# base unit for time, and the local supervisor's metric of the same name agrees.
		g master_restart_delay_seconds "How long a master that did not stop cleanly is held down." "$((RESTART_DELAY_MS / 1000)).$(printf %03d $((RESTART_DELAY_MS % 1000)))"
		g master_last_exit_seconds "Unix time of the server's last exit; 0 when none is recorded." "$ex"
		g master_last_exit_clean "1 when the last exit left a valid clean-stop marker, else 0." "$ok"
		g master_boot_info "The boot (/proc/sys/kernel/random/boot_id) the restart records belong to." 1 "boot_id=\"$boot\","
		case "$fsync" in
		always) g master_appendfsync_always "$fh" 1 ;;
		everysec | no) g master_appendfsync_always "$fh" 0 ;;
		esac
		sd=1
		[ -z "${SEED_KEY:-}" ] || [ "$(cli HGET "$SEED_KEY" state)" != unseeded ] || sd=0
		g fence_seeded "1 once the fence registers are seeded from a majority of the other masters (or needed no seeding), 0 while lock users wait for it." $sd
		[ -z "$cert" ] || g tls_cert_not_after_seconds "Unix time at which the master's TLS server certificate expires (TLS only)." "$cert"
	} >"$tmp" && chmod 0644 "$tmp" && mv -f "$tmp" "$STATE_FILE" && return
	rm -f "$tmp"
	return 1
}
fh="1 when the server's appendfsync was always at the last check, 0 when not; absent when unknown."

# state_timer: a timer runs the state step every 30 s (the file must never be a minute old;
# the config drift is republished as often).
state_timer() {
	u=/etc/systemd/system/redlock-state
	printf '[Unit]\nDescription=redlock.prom\n[Service]\nType=oneshot\nExecStart=%s state\n' "$0" >$u.service &&
		printf '[Timer]\nOnBootSec=5s\nOnUnitActiveSec=30s\nAccuracySec=1s\n[Install]\nWantedBy=timers.target\n' >$u.timer
}

setup() {
	host_admin || { log "cannot add the host's admin password to $ACL_FILE"; return 1; }
	# The server config holds the passwords: readable by the service's user only.
	chown "$SERVICE_USER:$SERVICE_GROUP" "$CONFIG_FILE" && chmod 0600 "$CONFIG_FILE"
	state_timer || log "cannot write the state timer's units"
	systemctl daemon-reload
	systemctl enable "$UNIT"
	systemctl enable --now redlock-state.timer
	# --no-block: a new host holds restart_delay before its first start, and cloud-init
	# need not wait for that.
	systemctl start --no-block "$UNIT"
}

case "${1:-}" in
gate | functions | started | stop | stopped | setup | host_admin | state) "$1" ;;
hook) case "${2:-}" in hook_on_crash | hook_before_restart | hook_after_restart) "$2" ;; *) exit 64 ;; esac ;;
*)
	echo "usage: $0 gate|functions|started|stop|stopped|setup|state" >&2
	exit 64
	;;
esac
