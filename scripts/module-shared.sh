#!/usr/bin/env bash
# Copies what the modules share (modules/.shared/*.tf, written once) into the modules each
# file names on its first line ("# Shared by: redlock-cluster redlock-hosts ..."), as
# shared_<name>.tf, under a header that names its source.
# `module-shared.sh check` writes nothing and fails when a copy differs from what its source
# generates, or when a shared_*.tf has no source (make check-docs, make test-modules).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-write}
case "$mode" in write | check) ;; *) echo "usage: $0 [write|check]" >&2; exit 2 ;; esac
shared=modules/.shared
drift=0
for src in "$shared"/*.tf; do
  name=shared_$(basename "$src")
  targets=$(sed -n '1s/^# Shared by: //p' "$src")
  [ -n "$targets" ] || { echo "module-shared: $src: the first line must be '# Shared by: <module> ...'" >&2; exit 1; }
  want=$(printf '# Generated from %s by scripts/module-shared.sh (make module-docs): edit that file,\n# not this copy; make check-docs fails when they differ.\n' "$src"; cat "$src")
  for module in $targets; do
    dir=modules/$module
    [ -d "$dir" ] || { echo "module-shared: $src names $module, and there is no $dir" >&2; exit 1; }
    if [ "$mode" = check ]; then
      if [ "$(cat "$dir/$name" 2>/dev/null)" != "$want" ]; then
        echo "module-shared: $dir/$name differs from $src: edit $src and run make module-docs" >&2
        drift=1
      fi
    else
      printf '%s\n' "$want" >"$dir/$name"
    fi
  done
done
# A shared_*.tf whose source is gone, or no longer names its module, would go on being used.
for copy in modules/*/shared_*.tf; do
  [ -e "$copy" ] || continue
  module=$(basename "$(dirname "$copy")")
  src="$shared/$(basename "$copy" | sed 's/^shared_//')"
  if ! [ -f "$src" ] || ! sed -n '1p' "$src" | grep -qw -- "$module"; then
    if [ "$mode" = check ]; then
      echo "module-shared: $copy has no source naming $module in $shared: remove it" >&2
      drift=1
    else
      rm "$copy"
    fi
  fi
done
exit $drift
