#!/usr/bin/env bash
# Destroys what `make demo` created: clean SHUTDOWN of every master (AOF fsynced), the
# supervisors stopped, ports freed, data removed.
set -euo pipefail
cd "$(dirname "$0")/.."
example=examples/local-five
export TF_CLI_CONFIG_FILE="$PWD/build/terraformrc"
export TF_IN_AUTOMATION=1
if [ ! -f "$example/terraform.tfstate" ]; then
  echo "down: nothing to destroy (no state in $example)"
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
rm -f "$example/agent.json" "$example/client.json"
echo "down: examples/local-five destroyed"
