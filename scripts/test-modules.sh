#!/usr/bin/env bash
# Runs each module's native tests (modules/*/tests/*.tftest.hcl) with the provider from the
# local mirror. `terraform test` with .tftest.hcl files needs terraform >= 1.6.
set -euo pipefail
cd "$(dirname "$0")/.."
export TF_CLI_CONFIG_FILE="$PWD/build/terraformrc" TF_IN_AUTOMATION=1
version=$(TF_CLI_CONFIG_FILE=/dev/null terraform version -json | sed -n 's/.*"terraform_version": *"\([0-9.]*\)".*/\1/p')
if [ "$(printf '%s\n1.6.0\n' "$version" | sort -V | head -1)" != 1.6.0 ]; then
  echo "test-modules: terraform $version cannot run .tftest.hcl files (needs >= 1.6): install a newer terraform" >&2
  exit 1
fi
# The modules' shared files must be the copies of modules/.shared they say they are.
scripts/module-shared.sh check
# Each module is tested in a copy, so no .terraform or lock file lands in the tree.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for dir in modules/*/; do
  [ -d "$dir/tests" ] || continue
  name=$(basename "$dir")
  echo "==> terraform test: modules/$name"
  mkdir -p "$work/$name"
  cp -r "$dir"/*.tf "$dir/tests" "$work/$name/"
  terraform -chdir="$work/$name" init -input=false -backend=false >/dev/null
  terraform -chdir="$work/$name" test -no-color
done
