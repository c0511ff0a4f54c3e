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
# The check is deterministic: it first fills the module cache with every module of each
# module's graph at the versions go.mod and go.sum pin (`go mod download all`: the only step
# that may use the network, and it fails as a download error, never as a diff), then runs
# `go mod tidy -diff` with GOPROXY=off, so its verdict depends on the files only (a missing
# requirement fails as "module lookup disabled", the same on every machine).
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
    for d in "${module_dirs[@]}"; do
      (cd "$d" && GOWORK=off GOFLAGS=-mod=mod go mod download all) || {
        echo "modules: go mod download in $d failed (the network or the module proxy; not a tidy problem): rerun" >&2
        exit 1
      }
    done
    for d in "${module_dirs[@]}"; do
      (cd "$d" && GOWORK=off GOFLAGS=-mod=mod GOPROXY=off go mod tidy -diff) || {
        echo "modules: $d/go.mod or go.sum is not tidy (the diff above): run scripts/modules.sh tidy and commit" >&2
        rc=1
      }
    done
    [ "$rc" = 0 ] && echo "modules: ${#module_dirs[@]} modules tidy (${module_dirs[*]})"
    exit "$rc"
    ;;
  *) echo "usage: scripts/modules.sh list|tidy|check" >&2; exit 2 ;;
esac
