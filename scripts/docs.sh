#!/usr/bin/env bash
# Regenerates docs/ from the provider schema with tfplugindocs, offline: the schema comes
# from the provider built into a local mirror, not from a registry.
#   scripts/docs.sh          writes docs/ (make docs; installs the provider into build/mirror)
#   scripts/docs.sh check    writes nothing in the checkout: generates into a temporary
#                            directory, with a provider built into a temporary mirror (never
#                            the one in build/ that tests run), and fails when docs/ differs
#                            from it (make check-docs)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-write}
case "$mode" in write | check) ;; *) echo "usage: $0 [check]" >&2; exit 2 ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=docs build_dir=build
if [ "$mode" = check ]; then
  # tfplugindocs joins the rendered directory to the provider directory (the checkout). It
  # replaces the parts it manages and keeps the hand-written pages: it gets a copy of docs/.
  out=$(realpath --relative-to=. "$tmp/docs") build_dir=$tmp/build
  cp -r docs "$tmp/docs"
fi
BUILD_DIR=$build_dir scripts/install-provider.sh >/dev/null
mkdir "$tmp/root"
printf 'terraform {\n  required_providers {\n    redlock = { source = "redlock-kit/redlock" }\n  }\n}\n' >"$tmp/root/main.tf"
export TF_CLI_CONFIG_FILE="$(realpath "$build_dir")/terraformrc"
terraform -chdir="$tmp/root" init -input=false -no-color >/dev/null
# tfplugindocs looks the provider up by its short name.
terraform -chdir="$tmp/root" providers schema -json | sed 's#"registry.terraform.io/redlock-kit/redlock"#"redlock"#' >"$tmp/schema.json"
go run github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs@v0.25.0 generate --provider-name redlock \
  --rendered-provider-name redlock --providers-schema "$tmp/schema.json" --examples-dir examples --rendered-website-dir "$out"
if [ "$mode" = check ]; then
  untracked=$(git ls-files --others --exclude-standard -- docs)
  if [ -n "$untracked" ]; then
    echo "docs/ has files not committed (generated ones: run make docs and commit them):" >&2
    echo "$untracked" >&2
    exit 1
  fi
  # A generated page the schema no longer has is gone from the copy: it fails too.
  diff -ru docs "$out" >&2 || {
    echo "docs/ is not what the schema and templates/ generate (the diff above: - docs/, + generated): run make docs and commit it" >&2
    exit 1
  }
  echo "docs: docs/ is what the schema generates"
fi
