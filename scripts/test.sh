#!/usr/bin/env bash
# make test's parts, side by side. Most of each part's time is spent waiting (restart delays,
# TTLs, terraform, systemd booting), so one part after another left the machine idle; the
# longest packages are split over several processes by test name. Each part writes its
# output to build/test/<part>.log, printed whole (never interleaved) as soon as the part ends;
# the exit status fails when any part failed; each part's time (and CPU time) is printed at
# the end.
#   scripts/test.sh            every part
#   scripts/test.sh PART...    only these parts (a single part runs in the foreground)
#   scripts/test.sh check      fails when the parts miss a test or run one twice (the build
#                              part runs it too)
# Processes side by side never share a port: each test process claims loopback addresses of
# its own (internal/localmasters.ClaimLoopback).
# GO_TEST_FLAGS and NESTED_PKGS come from the Makefile.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${GO_TEST_FLAGS:=-count=1 -timeout 40m}"
: "${NESTED_PKGS:=$(scripts/modules.sh list | sed -n 's|^\([^.].*\)|./\1/...|p' | tr '\n' ' ')}"

# Test packages that another make target runs.
ELSEWHERE="github.com/redlock-kit/redlock-kit/monitoring" # make monitoring-check

# The parts: name, then packages, -run, -skip (empty: none), environment. A package split
# over parts gives each a -run/-skip pair; check proves every test runs exactly once.
# Split by the tests' times on a cold run: the five-host tests are the longest ones.
HOSTS_A='^TestHosts(Runbook|Monitoring)$'
HOSTS='^TestHosts'
PROVIDER_A='^TestAcc(AuditDataSource|Master_(dataDirRemoved|badInputs))'
PROVIDER_B='^TestAcc(Users_|Master_(writeOnly|plain|destroy))'
PARTS=(unit provider-a provider-b provider-c hosts-a hosts-b e2e-local)
declare -A PKGS RUN SKIP ENV
PKGS[unit]="./internal/... ./lockagent/... $NESTED_PKGS" # with -race: part_cmd
PKGS[provider-a]="./provider/..." RUN[provider-a]=$PROVIDER_A ENV[provider-a]="TF_ACC=1"
PKGS[provider-b]="./provider/..." RUN[provider-b]=$PROVIDER_B SKIP[provider-b]=$PROVIDER_A ENV[provider-b]="TF_ACC=1"
PKGS[provider-c]="./provider/..." SKIP[provider-c]="$PROVIDER_A|$PROVIDER_B" ENV[provider-c]="TF_ACC=1"
PKGS[hosts-a]="./test/..." RUN[hosts-a]=$HOSTS_A ENV[hosts-a]="TF_ACC=1"
PKGS[hosts-b]="./test/..." RUN[hosts-b]=$HOSTS SKIP[hosts-b]=$HOSTS_A ENV[hosts-b]="TF_ACC=1"
PKGS[e2e-local]="./test/..." SKIP[e2e-local]=$HOSTS ENV[e2e-local]="TF_ACC=1"

logs=build/test
# The acceptance parts share most of their dependencies (the plugin framework, terratest,
# gRPC): the build part compiles them once, instead of once per process on a cold cache,
# and writes its exit status to $built, which they wait for.
built=$logs/.acceptance-built

# part_cmd NAME: the part's command line.
part_cmd() {
  local p=$1
  case "$p" in
    # The library, its metrics, the CLI and the harnesses under the race detector; this
    # includes the short chaos run (internal/chaos: one round of every fault kind).
    unit) echo "go test -race $GO_TEST_FLAGS ${PKGS[unit]}" ;;
    # Compiles and links the acceptance tests without running them (-exec /bin/true), and
    # the lockagent test/'s TestMain builds; then checks the parts.
    build) echo "go test -count=1 -exec /bin/true ./provider/... ./test/... && go build -o /dev/null ./lockagent/cmd/lockagent && scripts/test.sh check" ;;
    modules) echo "scripts/test-modules.sh" ;;
    *)
      [ -n "${PKGS[$p]:-}" ] || return 1
      local cmd="${ENV[$p]} go test $GO_TEST_FLAGS"
      [ -z "${RUN[$p]:-}" ] || cmd+=" -run '${RUN[$p]}'"
      [ -z "${SKIP[$p]:-}" ] || cmd+=" -skip '${SKIP[$p]}'"
      echo "$cmd ${PKGS[$p]}"
      ;;
  esac
}

# selected NAME PART: whether the part's -run/-skip select the top-level test NAME.
selected() {
  local name=$1 p=$2
  { [ -z "${RUN[$p]:-}" ] || grep -Eq -- "${RUN[$p]}" <<<"$name"; } &&
    { [ -z "${SKIP[$p]:-}" ] || ! grep -Eq -- "${SKIP[$p]}" <<<"$name"; }
}

# check: every package with tests is in a part (or run elsewhere); a package in several parts
# has each of its tests selected by exactly one of them.
check() {
  local bad=0 pkg p n test_parts
  declare -A parts_of
  for p in "${PARTS[@]}"; do
    for pkg in $(go list ${PKGS[$p]}); do parts_of[$pkg]+="$p "; done
  done
  for pkg in $(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... $NESTED_PKGS); do
    [ "$pkg" != "$ELSEWHERE" ] || continue
    read -ra test_parts <<<"${parts_of[$pkg]:-}"
    if [ ${#test_parts[@]} = 0 ]; then
      echo "test check: no part of scripts/test.sh runs $pkg: add it to PKGS" >&2
      bad=1
    elif [ ${#test_parts[@]} -gt 1 ] || [ -n "${RUN[${test_parts[0]}]:-}${SKIP[${test_parts[0]}]:-}" ]; then
      local names
      names=$(go test -list '.*' "$pkg" | grep -v '^ok ') || { echo "test check: go test -list $pkg failed" >&2; bad=1; continue; }
      for name in $names; do
        n=0
        for p in "${test_parts[@]}"; do selected "$name" "$p" && n=$((n + 1)); done
        if [ "$n" != 1 ]; then
          echo "test check: $pkg $name is run by $n parts (${test_parts[*]}), not 1: fix RUN/SKIP in scripts/test.sh" >&2
          bad=1
        fi
      done
    fi
  done
  [ "$bad" = 0 ] && echo "test check: every test package is in a part, and each test of a split package runs once"
  return "$bad"
}

if [ "${1:-}" = check ]; then
  check
  exit
fi

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(build "${PARTS[@]}" modules)
for p in "${parts[@]}"; do
  part_cmd "$p" >/dev/null || { echo "scripts/test.sh: no part named $p (parts: build ${PARTS[*]} modules)" >&2; exit 2; }
done

if [ ${#parts[@]} = 1 ]; then
  cmd=$(part_cmd "${parts[0]}")
  echo "$cmd"
  exec bash -c "$cmd"
fi

timings=build/timings/test.tsv
mkdir -p "$logs"
rm -f "$timings" "$built" "$logs"/*.log
case " ${parts[*]} " in *" build "*) ;; *) echo 0 >"$built" ;; esac
# Each part in a process group of its own, so that an interrupted run stops all of them.
set -m
declare -A part_of_pid
for p in "${parts[@]}"; do
  cmd=$(part_cmd "$p")
  echo "test: $p: $cmd"
  case "$p" in
    unit | build | modules) ;;
    *) cmd="until [ -e $built ]; do sleep 1; done; $cmd" ;;
  esac
  [ "$p" != build ] || cmd="$cmd; rc=\$?; echo \$rc >$built; exit \$rc"
  scripts/timed.sh run "$timings" "$p" bash -c "$cmd" >"$logs/$p.log" 2>&1 &
  part_of_pid[$!]=$p
done
trap 'for pid in "${!part_of_pid[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done' INT TERM

failed=()
while [ ${#part_of_pid[@]} -gt 0 ]; do
  wait -n -p pid "${!part_of_pid[@]}"
  rc=$?
  [ -n "${pid:-}" ] || continue
  p=${part_of_pid[$pid]}
  unset "part_of_pid[$pid]"
  status=ok
  if [ "$rc" != 0 ]; then
    status="FAILED (exit $rc)"
    failed+=("$p")
  fi
  echo
  echo "==> test: $p: $status; its output ($logs/$p.log):"
  cat "$logs/$p.log"
  echo "==> test: $p: $status"
done

scripts/timed.sh report "$timings" "make test"
if [ ${#failed[@]} -gt 0 ]; then
  echo "make test: FAILED: ${failed[*]} (output in $logs/)" >&2
  exit 1
fi
echo "make test: every part passed"
