#!/usr/bin/env bash
# Destroys what `make demo` created: clean SHUTDOWN of every master (AOF fsynced), the
# supervisors stopped, ports freed, data removed.
set -euo pipefail
cd "$(dirname "$0")/.."
example=examples/local-five
export TF_CLI_CONFIG_FILE="$PWD/build/terraformrc"
export TF_IN_AUTOMATION=1
umask 077 # the state terraform rewrites holds passwords until the destroy is done
provider="$PWD/build/mirror/registry.terraform.io/redlock-kit/redlock/${PROVIDER_VERSION:-$(cat VERSION)}/$(go env GOOS)_$(go env GOARCH)/terraform-provider-redlock_v${PROVIDER_VERSION:-$(cat VERSION)}"

# Masters that no state knows of (an apply interrupted before it recorded them): stop each
# cleanly through its supervisor, by the pids in its data dir, then remove the dir.
stop_leftovers() {
  local dir
  for dir in "$example"/.redlock-data/*/; do
    [ -f "$dir/supervisor.json" ] || continue
    if [ ! -x "$provider" ]; then
      echo "down: $dir has a master that no state knows of; run make provider, then make down again" >&2
      return 1
    fi
    echo "down: stopping the master left in $dir"
    "$provider" stop "$(cd "$dir" && pwd)"
    rm -rf "$dir"
  done
}

if [ ! -f "$example/terraform.tfstate" ]; then
  stop_leftovers
  echo "down: nothing (else) to destroy (no state in $example)"
  exit 0
fi
# A provider rebuilt since the apply has a new checksum: record it before destroying.
rm -f "$example/.terraform.lock.hcl"
terraform -chdir="$example" init -input=false -no-color >/dev/null
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! terraform -chdir="$example" destroy -auto-approve -input=false -no-color >"$log" 2>&1; then
  cat "$log" >&2
  echo "down: terraform destroy failed (above); the state is kept, run make down again after fixing the cause." >&2
  exit 1
fi
grep -E '^Destroy complete' "$log" || true
stop_leftovers
# The backup is the state before the destroy: it still holds the passwords.
rm -f "$example/agent.json" "$example/client.json" "$example/terraform.tfstate.backup"
echo "down: examples/local-five destroyed"
