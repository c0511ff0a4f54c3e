#!/usr/bin/env bash
# The repository's Go modules, and keeping their go.mod/go.sum files right.
#
#   scripts/modules.sh list    the module directories, root first (one per line)
#   scripts/modules.sh tidy    `go mod tidy` every module; our own modules are required at the
#                              version in VERSION (the one they are tagged with together)
#   scripts/modules.sh check   fails when `tidy` would change a go.mod or go.sum (CI)
#
# Why: a nested module must name its sibling modules at a version a proxy serves (a release
# tag), never the v0.0.0-00010101000000-000000000000 placeholder, and carry no replace
# directive (a user's build ignores them). Inside this repository go.work resolves every
# module from the checkout. `go mod tidy` does not read go.work, so tidy runs each module
# alone with temporary replace directives to the checkout, then sets our requirements to
# VERSION and drops the replace lines again. go.sum keeps no line for our own modules: in the
# workspace none is needed, a user's go.sum gets them from the proxy, and the hashes of
# modules that require each other at one commit could not be written into that commit.
set -euo pipefail
cd "$(dirname "$0")/.."
root_module=github.com/redlock-kit/redlock-kit

module_path() { if [ "$1" = . ]; then echo "$root_module"; else echo "$root_module/$1"; fi; }

# Every directory with a go.mod, tracked or new (build/ and other ignored trees left out).
module_dirs=". $(git ls-files --cached --others --exclude-standard -- '*/go.mod' | xargs -r -n1 dirname | sort | tr '\n' ' ')"
modules() { printf '%s\n' $module_dirs; }

version=$(tr -d ' \n' <VERSION)
case "$version" in
  [0-9]*.[0-9]*.[0-9]*) ;;
  *) echo "modules: VERSION holds '$version'; it must be a release version like 0.2.0" >&2; exit 1 ;;
esac

tidy_one() {
  local dir=$1 d path replaces=""
  for d in $(modules); do
    path=$(module_path "$d")
    [ "$d" = "$dir" ] && continue
    replaces="$replaces -replace=$path=$PWD/$d"
  done
  # Third-party modules at the root module's versions (pinned there), so that tidy looks up
  # no "latest" version and every module builds against the same dependencies.
  local pins
  pins=$(GOWORK=off go mod edit -json go.mod | awk -F'"' -v ours="$root_module" '
    /"Path":/ { path = $4 } /"Version":/ { if (index(path, ours) != 1) printf " -require=%s@%s", path, $4 }')
  (
    cd "$dir"
    drop_replaces() {
      for d in $(modules); do GOWORK=off go mod edit -dropreplace="$(module_path "$d")"; done
    }
    trap drop_replaces EXIT
    # shellcheck disable=SC2086
    [ "$dir" = . ] || GOWORK=off go mod edit $pins
    # shellcheck disable=SC2086
    GOWORK=off go mod edit $replaces
    GOWORK=off GOFLAGS=-mod=mod go mod tidy
    drop_replaces
    for d in $(modules); do
      path=$(module_path "$d")
      if GOWORK=off go mod edit -json | grep "\"Path\": \"$path\"," >/dev/null; then
        GOWORK=off go mod edit -require="$path@v$version"
      fi
    done
    if [ -f go.sum ]; then
      grep -v "^$root_module[ /]" go.sum >go.sum.tmp || true
      mv go.sum.tmp go.sum
    fi
  )
}

# go.work: every module of the checkout, and each of our requirements at VERSION pointed at
# its directory. The go command reads the go.mod of every required version even when that
# module is in the workspace, and VERSION is not tagged (or not yet served) while it is
# being developed; a replace in go.work is seen by this repository only, never by a user.
write_go_work() {
  local d go_line
  go_line=$(GOWORK=off go mod edit -json go.mod | sed -n 's/^\t"Go": "\(.*\)",$/\1/p')
  {
    echo "// Written by scripts/modules.sh tidy: the modules of this repository, built from the checkout."
    echo "go $go_line"
    echo
    echo "use ("
    for d in $(modules); do if [ "$d" = . ]; then echo "	."; else echo "	./$d"; fi; done
    echo ")"
    echo
    echo "replace ("
    for d in $(modules); do [ "$d" = . ] || echo "	$(module_path "$d") v$version => ./$d"; done
    echo ")"
  } >go.work
}

# The files tidy writes, as one text to compare.
snapshot() {
  local d f
  for d in $(modules); do
    for f in "$d/go.mod" "$d/go.sum"; do [ ! -f "$f" ] || { echo "== $f"; cat "$f"; }; done
  done
  echo "== go.work"
  cat go.work
}

case "${1:-}" in
  list) modules ;;
  tidy)
    for dir in $(modules); do
      echo "modules: tidy $dir"
      tidy_one "$dir"
    done
    write_go_work
    ;;
  check)
    before=$(mktemp)
    trap 'rm -f "$before"' EXIT
    snapshot >"$before"
    "$0" tidy >/dev/null
    snapshot | diff -u "$before" - >&2 || {
      echo "modules: a go.mod/go.sum is not tidy (changed above): run scripts/modules.sh tidy and commit" >&2
      exit 1
    }
    echo "modules: $(modules | wc -l) modules tidy at v$version"
    ;;
  *) echo "usage: scripts/modules.sh list|tidy|check" >&2; exit 2 ;;
esac
