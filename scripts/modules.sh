#!/usr/bin/env bash
# The repository's three Go modules and their go.mod/go.sum files.
#
#   scripts/modules.sh list    the module directories, root first: . provider test
#   scripts/modules.sh tidy    `go mod tidy` in each module (writes go.mod/go.sum)
#   scripts/modules.sh check   fails when `go mod tidy` would change a go.mod or go.sum (CI);
#                              writes nothing in the tree
#
# The root module (library, CLI, harnesses) requires no other module of ours; provider/ and
# test/ require it at VERSION and replace it with the checkout's (=> ../), so `go mod tidy`
# works in every module as it is and go.work needs no replace. go.work is not written here.
#
# The check's verdict depends on the files only. It first fills the module cache with what
# tidy reads (a `go mod tidy -diff` whose result is ignored: it downloads the pinned versions
# it needs, the only step that uses the network), then decides with `go mod tidy -diff` and
# GOPROXY=off: a stale go.mod/go.sum gives the same diff on every machine, and a missing
# requirement fails as "module lookup disabled", never as a lookup of the newest version.
set -euo pipefail
cd "$(dirname "$0")/.."
module_dirs=(. provider test)

case "${1:-}" in
  list) printf '%s\n' "${module_dirs[@]}" ;;
  tidy)
    for d in "${module_dirs[@]}"; do
      echo "modules: tidy $d"
      (cd "$d" && GOWORK=off GOFLAGS=-mod=mod go mod tidy)
    done
    ;;
  check)
    rc=0
    fetch_log=$(mktemp)
    trap 'rm -f "$fetch_log"' EXIT
    for d in "${module_dirs[@]}"; do
      (cd "$d" && GOWORK=off GOFLAGS=-mod=mod go mod tidy -diff >/dev/null 2>>"$fetch_log") || true
    done
    for d in "${module_dirs[@]}"; do
      (cd "$d" && GOWORK=off GOFLAGS=-mod=mod GOPROXY=off go mod tidy -diff) || {
        echo "modules: $d/go.mod or go.sum is not tidy (the diff or the missing module above): run scripts/modules.sh tidy and commit" >&2
        rc=1
      }
    done
    if [ "$rc" != 0 ] && grep -v '^go: downloading' "$fetch_log" | grep . >/dev/null; then
      echo "modules: filling the module cache before the check said (a failed download, not a tidy problem, if a module is missing above):" >&2
      grep -v '^go: downloading' "$fetch_log" >&2
    fi
    [ "$rc" = 0 ] && echo "modules: ${#module_dirs[@]} modules tidy (${module_dirs[*]})"
    exit "$rc"
    ;;
  *) echo "usage: scripts/modules.sh list|tidy|check" >&2; exit 2 ;;
esac
