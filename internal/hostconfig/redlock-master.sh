#!/bin/sh
# redlock-master: the delayed-restart policy of one Redlock master under systemd.
# Written by redlock-kit. systemd runs each step from the unit's drop-in, with the '+' prefix
# (as root, outside the unit's sandbox, so the server itself keeps every restriction):
#   gate     ExecStartPre   hold the start until locks the last run granted have expired
#   functions ExecStartPost load the kit's function library as the admin (fails the start
#                           when it does not load)
#   started  ExecStartPost  record the pid, run the after_restart hook after a hold
#   stop     ExecStop       pause writes, rewrite the AOF, SHUTDOWN (bounded)
#   stopped  ExecStopPost   record how the run ended: a clean-stop marker or a hold
#   setup    cloud-init     enable and start the unit (once, at provisioning)
#
# Fail-closed: the gate starts at once only after a recorded clean stop. A hold record from
# this boot holds until its time; anything else (a reboot, a power loss, a new or replaced
# host, a record it cannot read) holds restart_delay from now. Times are CLOCK_BOOTTIME
# milliseconds (/proc/uptime), compared only within one boot (boot_id).
set -u

conf=${REDLOCK_MASTER_CONF:-/etc/redlock/master.conf}
# shellcheck disable=SC1090
. "$conf" || { echo "redlock-master: cannot read $conf" >&2; exit 1; }

uptime_file=${REDLOCK_UPTIME_FILE:-/proc/uptime}
boot_id_file=${REDLOCK_BOOT_ID_FILE:-/proc/sys/kernel/random/boot_id}
run_dir=${REDLOCK_RUN_DIR:-/run/redlock}
clean="$DATA_DIR/redlock.clean-stop"
hold="$DATA_DIR/redlock.hold"

log() { echo "redlock-master: $*" >&2; }
now_ms() { awk '{ printf "%d\n", $1 * 1000 }' "$uptime_file"; }
boot_id() { cat "$boot_id_file" 2>/dev/null || echo unknown; }
is_count() { case "$1" in '' | *[!0-9]*) return 1 ;; *) return 0 ;; esac; }

# durable FILE CONTENT: write, fsync the file and its directory.
durable() {
	printf '%s\n' "$2" >"$1.tmp" && sync "$1.tmp" && mv -f "$1.tmp" "$1" && sync "$DATA_DIR"
}
forget() { rm -f "$@" && sync "$DATA_DIR"; }

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
		log "hook $1 failed (status $?); the restart policy goes on"
	return 0
}

gate() {
	mkdir -p "$run_dir"
	rm -f "$run_dir/restarted"
	now=$(now_ms)
	boot=$(boot_id)
	if [ -f "$clean" ] && [ ! -e "$hold" ]; then
		forget "$clean"
		log "last stop was clean: starting at once"
		return 0
	fi
	until=$((now + RESTART_DELAY_MS))
	why="no record of a clean stop (first start, reboot, power loss or a replaced host)"
	if [ -e "$hold" ]; then
		why="the hold record is unreadable"
		if read -r rec_boot rec_until <"$hold" && is_count "$rec_until"; then
			if [ "$rec_boot" = "$boot" ]; then
				until=$rec_until
				why="the last run did not stop cleanly"
			else
				why="the last run did not stop cleanly before a reboot"
			fi
		fi
	fi
	# Recorded before the wait, so that a stop or a power loss during it holds again.
	forget "$clean"
	durable "$hold" "$boot $until" || log "cannot record the hold in $hold"
	wait_ms=$((until - now))
	if [ "$wait_ms" -gt 0 ]; then
		restart_at=$(date -u -d "@$(($(date +%s) + (wait_ms + 999) / 1000))" +%Y-%m-%dT%H:%M:%SZ)
		log "holding the start for ${wait_ms}ms until $restart_at: $why"
		run_hook before_restart hook_before_restart "" "$restart_at"
		while now=$(now_ms) && [ "$now" -lt "$until" ]; do
			left=$((until - now))
			[ "$left" -gt 1000 ] && left=1000
			sleep "$(awk -v ms="$left" 'BEGIN { printf "%.3f\n", ms / 1000 }')"
		done
		: >"$run_dir/restarted"
	fi
	forget "$hold"
	log "hold over: starting"
}

started() {
	mkdir -p "$run_dir"
	echo "${MAINPID:-}" >"$run_dir/pid"
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

# host_admin: the host's own password for the admin (default) user, made here at first
# boot; it never leaves the host, and the user-data holds password hashes only. Its hash
# is one more password of the default user (the operators' admin password stays valid), in
# the server's ACL file: the rendered one (ACL_SEED) the first time, afterwards the file as
# live changes saved it.
host_admin() {
	if [ ! -s "$ADMIN_PASSWORD_FILE" ]; then
		(umask 077 && od -An -vtx1 -N32 /dev/urandom | tr -d ' \n' >"$ADMIN_PASSWORD_FILE") || return 1
	fi
	hash="#$(tr -d '\n' <"$ADMIN_PASSWORD_FILE" | sha256sum | cut -d' ' -f1)"
	from=$ACL_FILE
	[ -s "$ACL_FILE" ] || from=$ACL_SEED
	awk -v h="$hash" '$1 == "user" && $2 == "default" { for (i = 3; i <= NF; i++) if ($i == h) h = ""; if (h != "") $0 = $0 " " h } { print }' \
		"$from" >"$ACL_FILE.new" && grep -q "^user default .*$hash" "$ACL_FILE.new" &&
		chown "$SERVICE_USER:$SERVICE_GROUP" "$ACL_FILE.new" && chmod 0600 "$ACL_FILE.new" && mv "$ACL_FILE.new" "$ACL_FILE"
}

# functions: FUNCTION LOAD REPLACE of the kit's library, as the admin. Lock users may FCALL
# its functions and run no other Lua; functions persist in the AOF, so this replaces the
# version the last run had with the one this host was rendered with.
functions() {
	out=$(cli -x FUNCTION LOAD REPLACE <"$FUNCTIONS_FILE" 2>&1)
	if [ "$out" != "$FUNCTIONS_LIBRARY" ]; then
		log "cannot load the function library $FUNCTIONS_FILE: ${out:-no answer}"
		return 1
	fi
	log "function library $FUNCTIONS_LIBRARY loaded"
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
	cli SHUTDOWN >/dev/null 2>&1
	return 0
}

stopped() {
	result=${SERVICE_RESULT:-unknown}
	if [ "$result" = success ] && [ "${EXIT_CODE:-}" = exited ] && [ "${EXIT_STATUS:-}" = 0 ] && [ ! -e "$hold" ]; then
		durable "$clean" "$(boot_id) $(now_ms)" || log "cannot record the clean stop in $clean"
		log "clean stop recorded"
		return 0
	fi
	if [ -e "$hold" ]; then
		# The gate was interrupted: its hold record stays, whatever the result.
		log "stopped during the hold ($result): the hold stays"
		return 0
	fi
	forget "$clean"
	until=$(($(now_ms) + RESTART_DELAY_MS))
	durable "$hold" "$(boot_id) $until" || log "cannot record the hold in $hold"
	log "stopped uncleanly (result $result, ${EXIT_CODE:-?} ${EXIT_STATUS:-?}): the next start waits ${RESTART_DELAY_MS}ms"
	run_hook crash hook_on_crash "$(cat "$run_dir/pid" 2>/dev/null)" ""
}

setup() {
	host_admin || { log "cannot add the host's admin password to $ACL_FILE"; return 1; }
	# The server config holds the passwords: readable by the service's user only.
	chown "$SERVICE_USER:$SERVICE_GROUP" "$SERVER_CONF" && chmod 0600 "$SERVER_CONF"
	if [ -n "${TLS_KEY_FILE:-}" ]; then
		chown "$SERVICE_USER:$SERVICE_GROUP" "$TLS_KEY_FILE" && chmod 0600 "$TLS_KEY_FILE"
	fi
	systemctl daemon-reload
	systemctl enable "$UNIT"
	# --no-block: a new host holds restart_delay before its first start, and cloud-init
	# need not wait for that.
	systemctl start --no-block "$UNIT"
}

case "${1:-}" in
gate | functions | started | stop | stopped | setup | host_admin) "$1" ;;
hook) case "${2:-}" in hook_on_crash | hook_before_restart | hook_after_restart) "$2" ;; *) exit 64 ;; esac ;;
*)
	echo "usage: redlock-master gate|functions|started|stop|stopped|setup" >&2
	exit 64
	;;
esac
