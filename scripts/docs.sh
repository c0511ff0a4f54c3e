#!/usr/bin/env bash
# Regenerates docs/ from the provider schema with tfplugindocs, offline: the schema comes
# from the provider installed in the local mirror, not from a registry.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-provider.sh >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'terraform {\n  required_providers {\n    redlock = { source = "redlock-kit/redlock" }\n  }\n}\n' >"$tmp/main.tf"
export TF_CLI_CONFIG_FILE="$PWD/build/terraformrc"
terraform -chdir="$tmp" init -input=false -no-color >/dev/null
# tfplugindocs looks the provider up by its short name.
terraform -chdir="$tmp" providers schema -json | sed 's#"registry.terraform.io/redlock-kit/redlock"#"redlock"#' >"$tmp/schema.json"
go run github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs@v0.25.0 generate --provider-name redlock \
  --rendered-provider-name redlock --providers-schema "$tmp/schema.json" --examples-dir examples --rendered-website-dir docs
