#!/usr/bin/env bash
# Exits 0 when a file that the release builds depend on changed since the base commit, so CI
# runs the heavy release builds (make release-check) only then; 1 when none did.
#   base: the merge base with origin/main (or main) on another branch, else the previous
#   commit (HEAD~1); with no base to compare (a shallow clone or the first commit), 0: run them.
#   --base prints the base commit instead.
# Release files: .goreleaser.yml, VERSION, terraform-registry-manifest.json,
# every go.mod/go.sum/go.work, the release scripts, the binaries' main packages, and the
# consumer and release-config checks.
set -uo pipefail
cd "$(dirname "$0")/.."
base=""
branch=$(git rev-parse --abbrev-ref HEAD 2>/dev/null || true)
for ref in origin/main main; do
  if [ "$branch" != main ] && git rev-parse -q --verify "$ref^{commit}" >/dev/null 2>&1; then
    base=$(git merge-base HEAD "$ref" 2>/dev/null || true)
    [ -n "$base" ] && [ "$base" != "$(git rev-parse HEAD)" ] && break
    base=""
  fi
done
[ -n "$base" ] || base=$(git rev-parse -q --verify 'HEAD~1^{commit}' 2>/dev/null || true)
if [ "${1:-}" = --base ]; then echo "${base:-none}"; exit 0; fi
[ -n "$base" ] || exit 0
git diff --name-only "$base" HEAD -- \
  .goreleaser.yml VERSION terraform-registry-manifest.json \
  go.work go.work.sum '*go.mod' '*go.sum' \
  scripts/release-check.sh scripts/modules.sh scripts/release-files-changed.sh \
  provider/cmd lockagent/cmd internal/modproxy internal/libdeps internal/releaseconfig | grep . >/dev/null
