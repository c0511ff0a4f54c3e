#!/usr/bin/env bash
# Checks the wait queue's hand-off protocol model (model/handoff.pml) with Spin: the
# protocol as built must pass an exhaustive search of every configuration below, and
# every negative-control variant (the model with a fix taken out, or the replay the
# client now refuses put back) must produce a counterexample, or the check fails: a
# check that cannot fail proves nothing. A search that is not exhaustive (out of memory,
# depth limit) fails too. Installs Debian's spin when it is missing.
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

# pan's memory bound (MB). -DCOLLAPSE compresses states without loss (the search stays
# exhaustive); no hash-compact or bitstate mode is used.
MODEL_MEMLIM=${MODEL_MEMLIM:-3072}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# incomplete OUT: whether pan's output OUT says the search did not cover every state.
incomplete() {
  grep -qiE 'out of memory|MEMLIM bound|max search depth too small|search not completed' <<<"$1" ||
    ! grep -q 'states, stored' <<<"$1"
}

# check NAME EXPECT DEFINES: EXPECT is "pass" (an exhaustive search, no error) or "fail"
# (a counterexample, printed as the model's event log).
check() {
  local name=$1 expect=$2 define=$3 # define: -D options, split on spaces
  local dir=$work/$name
  mkdir -p "$dir"
  cp "$root/model/handoff.pml" "$dir/"
  if ! (cd "$dir" && spin -a $define handoff.pml >/dev/null &&
    gcc -w -O2 -DSAFETY -DCOLLAPSE -DMEMLIM="$MODEL_MEMLIM" -o pan pan.c); then
    echo "model: $name: the model ($define) does not build" >&2
    return 1
  fi
  local start end out
  start=$(date +%s.%N)
  out=$(cd "$dir" && ./pan -m10000 -w24 2>&1) || true
  end=$(date +%s.%N)
  local states depth errors secs
  states=$(sed -n 's/^ *\([0-9e.+]*\) states, stored.*/\1/p' <<<"$out")
  depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' <<<"$out")
  errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out")
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  printf 'model: %-26s %10s states stored, depth %4s, %6s s, errors: %s\n' "$name:" "${states:-?}" "${depth:-?}" "$secs" "${errors:-?}"
  case $expect in
  pass)
    if [ -z "$errors" ] || incomplete "$out"; then
      echo "model: $name: the search was not exhaustive:" >&2
      grep -iE 'out of memory|MEMLIM bound|max search depth|search not completed|error' <<<"$out" >&2 || tail -5 <<<"$out" >&2
      return 1
    fi
    if [ "$errors" != 0 ]; then
      echo "model: $name: a counterexample (the protocol breaks an invariant):" >&2
      (cd "$dir" && spin -t $define handoff.pml 2>&1 | grep -E '^ *t=|violated|text of failed' | sed 's/^ */  /' >&2)
      return 1
    fi ;;
  fail)
    if [ "${errors:-0}" = 0 ]; then
      echo "model: $name: negative control found no counterexample: the model cannot see this bug" >&2
      return 1
    fi
    echo "model: $name: counterexample found, as it must be:"
    (cd "$dir" && spin -t $define handoff.pml 2>&1 | grep -E '^ *t=|text of failed' | sed 's/^ */    /') ;;
  esac
}

# The bounds: three masters; three clients (tickets 1, 2, 3: up to 3, 2 and 1 attempts;
# in protocol-plain client 2's first attempt is the plain acquireScript);
# TTL 2 ticks, a logged hand-off's slack 1 tick. Each configuration is exhaustive within
# its bounds; together they cover the fault model (docs/protocol.md, "The model"), and
# each negative control fails in the configuration its bug needs. ANY: any number of
# times, at any moment.
faults="-DTMAX=3 -DNO_NOTICES -DREWRITES=ANY -DRESTARTS=ANY"                # rewrites, restarts at once
extensions="-DTMAX=2 -DNO_NOTICES -DEXT=1 -DREWRITES=ANY -DRESTARTS=ANY"    # late extensions
notices="-DTMAX=2 -DNATT1=2 -DREWRITES=0 -DRESTARTS=ANY"                    # lost, late, duplicated notices
crashes="-DTMAX=3 -DNO_NOTICES -DREWRITES=0 -DRESTARTS=0 -DCRASHES=ANY -DRESTARTS0=ANY" # one master: crashes under the hold, restarts at once
lossy="-DTMAX=2 -DNO_NOTICES -DREWRITES=0 -DRESTARTS=0 -DLOSSY"             # rounds that miss a master
plain="$faults -DPLAIN=2"                                                     # client 2 tries first with acquireScript
# The checks run MODEL_JOBS at a time (default: one per core), each into its own log;
# the logs are printed in order once all have finished.
parallel=${MODEL_JOBS:-$(nproc 2>/dev/null || echo 1)}
names=()
run() {
  local name=$1
  names+=("$name")
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  (if check "$@" >"$work/$name.log" 2>&1; then echo 0; else echo 1; fi >"$work/$name.rc") &
}
run protocol-faults pass "$faults"
run protocol-extensions pass "$extensions"
run protocol-notices pass "$notices"
run protocol-crashes pass "$crashes"
run protocol-lossy pass "$lossy"
run protocol-plain pass "$plain"
run note-trusted fail "$faults -DNOTE_TRUSTED"
run release-unproven fail "$extensions -DRELEASE_UNPROVEN"
run replay fail "$faults -DREPLAY"
wait
status=0
for name in "${names[@]}"; do
  cat "$work/$name.log"
  [ "$(cat "$work/$name.rc" 2>/dev/null)" = 0 ] || status=1
done
# The incompleteness check's own negative control: a search cut off by its depth bound
# must be reported as not exhaustive.
if incomplete "$(cd "$work/protocol-lossy" && ./pan -m10 2>&1)"; then
  echo "model: a search cut short by its depth bound is reported as not exhaustive, as it must be"
else
  echo "model: a search cut short by its depth bound was not reported as incomplete" >&2
  status=1
fi
exit $status
