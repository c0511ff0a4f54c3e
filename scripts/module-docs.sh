#!/usr/bin/env bash
# Regenerates the inputs and outputs tables of every module's README.md (modules/*) from its
# .tf files with terraform-docs (pinned; installed into ./bin by scripts/deps.sh), between the
# <!-- BEGIN_TF_DOCS --> and <!-- END_TF_DOCS --> markers, in inject mode: the rest of each
# README is hand-written and kept. Offline: terraform-docs reads the .tf files only.
#   scripts/module-docs.sh          writes modules/*/README.md (make module-docs)
#   scripts/module-docs.sh check    writes nothing in the checkout: generates into a temporary
#                                   copy of modules/ and fails when a README.md differs from it
#                                   (make check-docs)
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-write}
case "$mode" in write | check) ;; *) echo "usage: $0 [check]" >&2; exit 2 ;; esac
version=v0.22.0 # keep in step with scripts/deps.sh
if ! bin/terraform-docs --version 2>/dev/null | grep "${version}" >/dev/null; then
  echo "module-docs: bin/terraform-docs $version is missing: run make deps (installs it into ./bin)" >&2
  exit 1
fi
root=modules
if [ "$mode" = check ]; then
  # The copies of modules/.shared must be what it generates (checked, not written); the
  # READMEs are generated in a copy of modules/.
  scripts/module-shared.sh check
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  cp -r modules "$tmp/"
  root=$tmp/modules
else
  # What the modules share is written once (modules/.shared) and copied into each first.
  scripts/module-shared.sh write
fi
for dir in "$root"/*/; do
  dir=${dir%/}
  [ -f "$dir/README.md" ] || { echo "module-docs: modules/${dir##*/} has no README.md: write one with the two markers" >&2; exit 1; }
  grep -q '<!-- BEGIN_TF_DOCS -->' "$dir/README.md" || { echo "module-docs: modules/${dir##*/}/README.md has no <!-- BEGIN_TF_DOCS --> / <!-- END_TF_DOCS --> markers" >&2; exit 1; }
  bin/terraform-docs --config "$PWD/.terraform-docs.yml" "$dir" >/dev/null
  [ "$mode" = check ] || echo "module-docs: $dir/README.md"
done
if [ "$mode" = check ]; then
  rc=0
  for dir in modules/*/; do
    name=$(basename "$dir")
    diff -u "modules/$name/README.md" "$root/$name/README.md" >&2 || {
      echo "module-docs: modules/$name/README.md is not what terraform-docs generates (the diff above): run make module-docs and commit it" >&2
      rc=1
    }
  done
  [ "$rc" != 0 ] || echo "module-docs: every modules/*/README.md is what terraform-docs generates"
  exit "$rc"
fi
