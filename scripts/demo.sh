#!/usr/bin/env bash
# The main job: apply examples/local-five (five supervised masters), prove it with
# `lockagent validate`, and say what to do next. Run through `make demo`, which installs
# what is missing, builds the provider and lockagent and sets TF_CLI_CONFIG_FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
example=examples/local-five
export TF_CLI_CONFIG_FILE="$root/build/terraformrc" # always ours: the mirror that has the provider
export TF_IN_AUTOMATION=1

step() { printf '\n==> %s\n' "$*"; }
# Each step's time, printed at the end (make demo adds its deps and build steps to the file).
timings=${DEMO_TIMINGS:-$root/build/timings/demo.tsv}
timed() { "$root/scripts/timed.sh" run "$timings" "$@"; }

# Everything written from here on is readable by this user only: terraform.tfstate and its
# backup hold the passwords (see docs/guides/security.md), agent.json
# and client.json too. A state an earlier run left readable by others is fixed as well.
umask 077
chmod 0600 "$example"/terraform.tfstate* 2>/dev/null || true

step "terraform init (offline: the provider comes from $root/build/mirror)"
# The lock file is never committed: a rebuilt provider has a new checksum, so record it anew.
rm -f "$example/.terraform.lock.hcl"
timed "terraform init" terraform -chdir="$example" init -input=false -no-color >/dev/null
step "terraform apply: five masters on this one machine (for trying the kit, not independent), AOF fsync always, noeviction, supervised"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! timed "terraform apply" terraform -chdir="$example" apply -auto-approve -input=false -no-color >"$log" 2>&1; then
  cat "$log" >&2
  echo "demo: terraform apply failed (above). Fix the cause, then run make demo again; make down removes a partial deployment." >&2
  exit 1
fi
grep -E '^(Plan:|Apply complete|.*redlock_master.*Creation complete|Warning)' "$log" || true

terraform -chdir="$example" output -raw agent_config >"$example/agent.json"
terraform -chdir="$example" output -raw client_config >"$example/client.json"

step "lockagent validate: audit, Redlock behaviour, contention safety"
timed "lockagent validate" bin/lockagent validate -c "$example/agent.json"

endpoints=$(terraform -chdir="$example" output -json endpoints | tr -d '[]"' | tr ',' ' ')
# The provider binary crashes a master by its data dir: it reads the live redis-server pid
# from the supervisor's state and proves it against /proc first. A pid from `terraform
# output pids` is as of the last refresh: after a restart it may belong to another process.
provider="$root/build/mirror/registry.terraform.io/redlock-kit/redlock/${PROVIDER_VERSION:-$(cat "$root/VERSION")}/$(go env GOOS)_$(go env GOARCH)/terraform-provider-redlock_v${PROVIDER_VERSION:-$(cat "$root/VERSION")}"
crash_dir=$(terraform -chdir="$example" output -json data_dirs | tr -d '[]"' | tr ',' '\n' | sed -n 3p)
delay=$(terraform -chdir="$example" output -raw restart_delay_ms)
cat <<TXT

==> Your Redlock cluster is up.
  endpoints:      $endpoints
  quorum:         $(terraform -chdir="$example" output -raw quorum) of 5
  max lock TTL:   $(terraform -chdir="$example" output -raw max_lock_ttl_ms) ms; a crashed master stays down ${delay} ms
  credentials:    $root/$example/agent.json (0600): lock user "$(terraform -chdir="$example" output -raw lock_user)" and the
                  admin password, for operators and \`lockagent validate\`;
                  $root/$example/client.json (0600): lock user only, for application hosts
  data and logs:  $root/$example/.redlock-data/<master>/ (redis.log, supervisor.log)

Next:
  - Hold a lock around a command:
      bin/lockagent run -c $example/client.json --key my-job --ttl 30s -- ./my-job.sh
  - Use the locks from Go: see "Using the library" in README.md (package lockagent/redlock).
  - Break it and watch it heal: crash one master by its data dir (SIGKILL to its live redis-server,
    pid read from its supervisor and checked against /proc; never kill -9 a pid from
    \`terraform output pids\`: outputs are as of the last refresh, and a restart changes the pid):
      $provider crash $crash_dir
    then bin/lockagent validate -c $example/agent.json; the master returns ${delay} ms after the crash.
  - Remove everything: make down
TXT
"$root/scripts/timed.sh" report "$timings" "make demo"
