#!/usr/bin/env bash
# Checks the wait queue's hand-off protocol model (model/handoff.pml) with Spin: the
# protocol as built must pass an exhaustive search, and every negative-control variant
# (the model with a fix taken out) must produce a counterexample, or the check fails:
# a check that cannot fail proves nothing. Installs Debian's spin when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if ! command -v spin >/dev/null 2>&1; then
  echo "model: spin not found; installing Debian's spin package" >&2
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq spin >/dev/null
fi
command -v gcc >/dev/null 2>&1 || { echo "model: gcc is needed to build Spin's verifier (apt-get install gcc)" >&2; exit 1; }

# pan's memory bound (MB): a search that runs out is incomplete and fails the check.
MODEL_MEMLIM=${MODEL_MEMLIM:-3072}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# check NAME EXPECT [-DVARIANT]: EXPECT is "pass" (exhaustive, no error) or "fail" (a
# counterexample, printed as the model's event log).
check() {
  local name=$1 expect=$2 define=${3:-}  # define: -D options, split on spaces
  local dir=$work/$name
  mkdir -p "$dir"
  cp "$root/model/handoff.pml" "$dir/"
  (cd "$dir" && spin -a $define handoff.pml >/dev/null &&
    gcc -w -O2 -DSAFETY -DCOLLAPSE -DMEMLIM="$MODEL_MEMLIM" -o pan pan.c)
  local start end out
  start=$(date +%s.%N)
  out=$(cd "$dir" && ./pan -m1000000 2>&1) || true
  end=$(date +%s.%N)
  local states errors secs
  states=$(sed -n 's/^ *\([0-9e.+]*\) states, stored.*/\1/p' <<<"$out")
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out")
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  echo "model: $name: ${states:-?} states stored, $secs s, errors: ${errors:-?}"
  if grep -qiE 'out of memory|max search depth too small|search not completed' <<<"$out"; then
    echo "model: $name: the search was not exhaustive:" >&2
    grep -iE 'out of memory|max search depth|search not completed' <<<"$out" >&2
    [ "$expect" = fail ] && [ "${errors:-0}" != 0 ] || return 1
  fi
  case $expect in
  pass)
    if [ "${errors:-1}" != 0 ]; then
      echo "model: $name: a counterexample (the protocol breaks an invariant):" >&2
      (cd "$dir" && spin -t $define handoff.pml 2>&1 | grep -E '^ *t=|assert|violated' >&2)
      return 1
    fi ;;
  fail)
    if [ "${errors:-0}" = 0 ]; then
      echo "model: $name: negative control found no counterexample: the model cannot see this bug" >&2
      return 1
    fi
    echo "model: $name: counterexample found, as it must be:"
    (cd "$dir" && spin -t $define handoff.pml 2>&1 | grep -E '^ *t=|violated|text of failed' | sed 's/^ */  /') ;;
  esac
}

# The bounds: three masters, three clients (the first may try three times, the others
# once), ticks 0..3. Each configuration is exhaustive within its bounds; together they
# cover the faults, and each negative control fails in the one its bug needs.
faults="-DTMAX=3 -DNFAULT=1"                                                # one fault of any kind
rewrite_restart="-DTMAX=3 -DNFAULT=2 -DREWRITES=1 -DRESTARTS=1 -DCRASHES=0" # a rewrite and a restart
extensions="-DTMAX=2 -DNFAULT=0 -DEXT=2"                                    # late extensions
status=0
check protocol-faults pass "$faults" || status=1
check protocol-rewrite-restart pass "$rewrite_restart" || status=1
check protocol-extensions pass "$extensions" || status=1
check note-trusted fail "$rewrite_restart -DNOTE_TRUSTED" || status=1
check release-unproven fail "$extensions -DRELEASE_UNPROVEN" || status=1
exit $status
