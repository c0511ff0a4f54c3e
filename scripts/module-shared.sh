#!/usr/bin/env bash
# Copies what modules/redlock-cluster and modules/redlock-hosts share (modules/.shared/*.tf,
# written once) into both, as shared_<name>.tf (versions.tf as is), each under a header that
# names its source. `module-shared.sh check` writes nothing and fails when a copy differs
# from what its source generates (make check-docs, make test-modules).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-write}
case "$mode" in write | check) ;; *) echo "usage: $0 [write|check]" >&2; exit 2 ;; esac
shared=modules/.shared
targets=(modules/redlock-cluster modules/redlock-hosts)
drift=0
for src in "$shared"/*.tf; do
  name=$(basename "$src")
  [ "$name" = versions.tf ] || name="shared_$name"
  want=$(printf '# Generated from %s by scripts/module-shared.sh (make module-docs): edit that file,\n# not this copy; make check-docs fails when they differ.\n\n' "$src"; cat "$src")
  for dir in "${targets[@]}"; do
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
# A shared_*.tf whose source is gone would go on being used: refuse it.
for dir in "${targets[@]}"; do
  for copy in "$dir"/shared_*.tf; do
    [ -e "$copy" ] || continue
    src="$shared/$(basename "$copy" | sed 's/^shared_//')"
    [ -f "$src" ] || { echo "module-shared: $copy has no source $src: remove it" >&2; drift=1; }
  done
done
exit $drift
