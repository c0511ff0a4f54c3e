#!/usr/bin/env bash
# Regenerates the inputs and outputs tables of every module's README.md (modules/*) from its
# .tf files with terraform-docs (pinned; installed into ./bin by scripts/deps.sh), between the
# <!-- BEGIN_TF_DOCS --> and <!-- END_TF_DOCS --> markers, in inject mode: the rest of each
# README is hand-written and kept. Offline: terraform-docs reads the .tf files only.
# make check-docs fails when the committed READMEs differ from what this generates.
set -euo pipefail
cd "$(dirname "$0")/.."
version=v0.22.0 # keep in step with scripts/deps.sh
if ! bin/terraform-docs --version 2>/dev/null | grep "${version}" >/dev/null; then
  echo "module-docs: bin/terraform-docs $version is missing: run make deps (installs it into ./bin)" >&2
  exit 1
fi
# What the modules share is written once (modules/.shared) and copied into each first.
scripts/module-shared.sh write
for dir in modules/*/; do
  dir=${dir%/}
  [ -f "$dir/README.md" ] || { echo "module-docs: $dir has no README.md: write one with the two markers" >&2; exit 1; }
  grep -q '<!-- BEGIN_TF_DOCS -->' "$dir/README.md" || { echo "module-docs: $dir/README.md has no <!-- BEGIN_TF_DOCS --> / <!-- END_TF_DOCS --> markers" >&2; exit 1; }
  bin/terraform-docs --config "$PWD/.terraform-docs.yml" "$dir" >/dev/null
  echo "module-docs: $dir/README.md"
done
