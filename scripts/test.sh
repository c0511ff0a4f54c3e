#!/usr/bin/env bash
# make test. Go schedules the tests: one go test per group, with -p (packages at a time) and
# -parallel (tests at a time: the independent tests call t.Parallel). Most tests mostly wait
# (restart holds, TTLs, terraform), so both are set above the 2 cores' default. This script
# does only what Go cannot: it keeps the five-host labs (systemd containers; booting is
# CPU-heavy) to two lanes, so that at most two labs boot at a time.
#   scripts/test.sh            everything: the build, and every part side by side once what it
#                              runs is built (the lab lanes, the longest, first)
#   scripts/test.sh PART...    only these parts (with the build; a single part in the foreground)
#   scripts/test.sh check      fails when the steps miss a test or run one twice (the build
#                              runs it too)
# Each part writes its output to build/test/<part>.log, printed whole (never interleaved) as
# soon as the part ends; the exit status fails when any part failed; each part's time (and
# CPU time) is printed at the end. Test processes side by side never share a loopback address
# (internal/localmasters.ClaimLoopback); tests of one process pick free ports on theirs.
# GO_TEST_FLAGS, TEST_P, TEST_PARALLEL and TEST_PARALLEL_RACE come from the Makefile.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${GO_TEST_FLAGS:=-count=1 -timeout 40m}"
# -p: packages at a time in one go test; -parallel: t.Parallel tests at a time in a package
# (TEST_PARALLEL_RACE under the race detector).
: "${TEST_P:=4}" "${TEST_PARALLEL:=4}" "${TEST_PARALLEL_RACE:=2}"

# Test packages that another make target runs.
ELSEWHERE="github.com/redlock-kit/redlock-kit/monitoring" # make monitoring-check

# The go test runs (steps): packages, -run, -skip (empty: none), -race or not, acceptance
# (TF_ACC) or not. A package in several steps gives each a -run/-skip pair; check proves every
# test runs exactly once. The five-host tests (test/, TestHosts*) are split over the two lanes.
HOSTS_A='^TestHosts(Runbook|Day2)$'
HOSTS='^TestHosts'
STEPS=(unit acc hostlab chaos hosts-a hosts-b)
declare -A PKGS RUN SKIP RACE ACC LAB
# The root module (library, CLI, harnesses, examples' Go program) under the race detector,
# but the two lab packages and what another target runs.
PKGS[unit]="$(go list ./... | grep -v -x -e '.*/internal/hostlab' -e '.*/internal/chaos' -e "$ELSEWHERE" | tr '\n' ' ')" RACE[unit]=1
# The provider's acceptance tests and the local end-to-end tests (terraform, real masters).
PKGS[acc]="./provider/... ./test/..." SKIP[acc]=$HOSTS ACC[acc]=1
# The labs: the short chaos run (one round of every fault kind), the hostlab harness, and the
# five-host end-to-end tests.
PKGS[hostlab]="./internal/hostlab/" RACE[hostlab]=1 LAB[hostlab]=1
PKGS[chaos]="./internal/chaos/" RACE[chaos]=1 LAB[chaos]=1
PKGS[hosts-a]="./test/..." RUN[hosts-a]=$HOSTS_A ACC[hosts-a]=1
PKGS[hosts-b]="./test/..." RUN[hosts-b]=$HOSTS SKIP[hosts-b]=$HOSTS_A ACC[hosts-b]=1
# The parts, side by side; a part's steps run one after another. Each lab lane boots one lab
# at a time. modules is the modules' terraform test files (scripts/test-modules.sh).
PARTS=(unit acc lab-1 lab-2 modules)
declare -A PART_STEPS=([unit]="unit" [acc]="acc" [lab-1]="chaos hosts-a" [lab-2]="hostlab hosts-b")

logs=build/test
# The build writes its exit status to $built_lab once the two lab packages are compiled (the
# lab lanes, the longest, start then), to $built_race once the other race-detected tests are
# (unit starts), and to $built when everything is; the steps wait for theirs and fail when it
# failed.
built_lab=$logs/.lab-built
built_race=$logs/.race-built
built=$logs/.built

# wait_for MARKER: a command that waits for the build's marker and fails when the build did.
wait_for() {
  echo "until [ -e $1 ]; do sleep 1; done; [ \"\$(cat $1)\" = 0 ] || { echo 'the build failed: $logs/build.log'; false; }"
}

# step_cmd STEP: the step's command line. The lab steps run their (few) tests one at a time.
step_cmd() {
  local s=$1 cmd="go test"
  [ -z "${ACC[$s]:-}" ] || cmd="TF_ACC=1 go test"
  if [ -n "${LAB[$s]:-}" ]; then
    cmd="$(wait_for "$built_lab") && $cmd"
  elif [ -n "${RACE[$s]:-}" ]; then
    cmd="$(wait_for "$built_race") && $cmd"
  else
    cmd="$(wait_for "$built") && $cmd"
  fi
  [ -z "${RACE[$s]:-}" ] || cmd+=" -race"
  cmd+=" $GO_TEST_FLAGS"
  case "$s" in
    unit) cmd+=" -p $TEST_P -parallel $TEST_PARALLEL_RACE" ;;
    acc) cmd+=" -p $TEST_P -parallel $TEST_PARALLEL" ;;
  esac
  [ -z "${RUN[$s]:-}" ] || cmd+=" -run '${RUN[$s]}'"
  [ -z "${SKIP[$s]:-}" ] || cmd+=" -skip '${SKIP[$s]}'"
  echo "$cmd ${PKGS[$s]}"
}

# part_cmd PART: the part's command line (its steps in order; it fails when one failed).
part_cmd() {
  local p=$1 s cmd="rc=0"
  case "$p" in
    modules) echo "$(wait_for "$built") && scripts/test-modules.sh" ;;
    *)
      [ -n "${PART_STEPS[$p]:-}" ] || return 1
      for s in ${PART_STEPS[$p]}; do cmd+="; { $(step_cmd "$s"); } || rc=1"; done
      echo "$cmd; exit \$rc"
      ;;
  esac
}

# build_cmd: compiles every test once, without linking or running it (go list -export compiles
# every package, test packages included, into the build cache): the two lab packages' tests
# (race-detected), the other race-detected ones, then installs the provider (the acceptance
# and module tests run it) and compiles the acceptance tests and the lockagent that test/'s
# TestMain builds. The parts share most of their dependencies
# (under the race detector: the standard library, go-redis; the acceptance tests: the plugin
# framework, terratest, gRPC), and go test processes started side by side on a cold cache
# would each compile them. Then checks the steps.
build_cmd() {
  local s race_pkgs="" lab_pkgs=""
  for s in "${STEPS[@]}"; do
    if [ -n "${LAB[$s]:-}" ]; then lab_pkgs+="${PKGS[$s]} "; elif [ -n "${RACE[$s]:-}" ]; then race_pkgs+="${PKGS[$s]} "; fi
  done
  echo "go list -export -test -race $lab_pkgs >/dev/null; echo \$? >$built_lab; go list -export -test -race $race_pkgs >/dev/null; echo \$? >$built_race; scripts/install-provider.sh && go list -export -test ./provider/... ./test/... ./lockagent/cmd/lockagent >/dev/null && scripts/test.sh check && [ \"\$(cat $built_lab)\" = 0 ] && [ \"\$(cat $built_race)\" = 0 ]"
}

# selected NAME STEP: whether the step's -run/-skip select the top-level test NAME.
selected() {
  local name=$1 p=$2
  { [ -z "${RUN[$p]:-}" ] || grep -Eq -- "${RUN[$p]}" <<<"$name"; } &&
    { [ -z "${SKIP[$p]:-}" ] || ! grep -Eq -- "${SKIP[$p]}" <<<"$name"; }
}

# check: every package with tests is in a step (or run elsewhere); a package in several
# steps, or in one with -run/-skip, has each of its tests selected by exactly one step.
check() {
  local bad=0 pkg p n test_parts
  declare -A parts_of
  for p in "${STEPS[@]}"; do
    for pkg in $(go list ${PKGS[$p]}); do parts_of[$pkg]+="$p "; done
  done
  for pkg in $(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./... ./provider/... ./test/...); do
    [ "$pkg" != "$ELSEWHERE" ] || continue
    read -ra test_parts <<<"${parts_of[$pkg]:-}"
    if [ ${#test_parts[@]} = 0 ]; then
      echo "test check: no step of scripts/test.sh runs $pkg: add it to PKGS" >&2
      bad=1
    elif [ ${#test_parts[@]} -gt 1 ] || [ -n "${RUN[${test_parts[0]}]:-}${SKIP[${test_parts[0]}]:-}" ]; then
      local names
      names=$(go test -list '.*' "$pkg" | grep -v '^ok ') || { echo "test check: go test -list $pkg failed" >&2; bad=1; continue; }
      for name in $names; do
        n=0
        for p in "${test_parts[@]}"; do selected "$name" "$p" && n=$((n + 1)); done
        if [ "$n" != 1 ]; then
          echo "test check: $pkg $name is run by $n steps (${test_parts[*]}), not 1: fix RUN/SKIP in scripts/test.sh" >&2
          bad=1
        fi
      done
    fi
  done
  [ "$bad" = 0 ] && echo "test check: every test package is in a step, and each test of a split package runs once"
  return "$bad"
}

if [ "${1:-}" = check ]; then
  check
  exit
fi

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=("${PARTS[@]}")
for p in "${parts[@]}"; do
  part_cmd "$p" >/dev/null || { echo "scripts/test.sh: no part named $p (parts: ${PARTS[*]})" >&2; exit 2; }
done

mkdir -p "$logs"
timings=build/timings/test.tsv
rm -f "$timings" "$logs"/*.log "$built_lab" "$built_race" "$built"
if [ ${#parts[@]} = 1 ]; then
  # One part alone compiles for itself.
  scripts/install-provider.sh >/dev/null || exit 1
  echo 0 >"$built_lab" && echo 0 >"$built_race" && echo 0 >"$built" || exit 1
  cmd=$(part_cmd "${parts[0]}")
  echo "$cmd"
  exec bash -c "$cmd"
fi

# The build and each part in a process group of its own, so that an interrupted run stops all
# of them; the parts wait for the build's markers.
set -m
declare -A part_of_pid
cmd="$(build_cmd); rc=\$?; for m in $built_lab $built_race; do [ -e \$m ] || echo \$rc >\$m; done; echo \$rc >$built; exit \$rc"
echo "test: build: $cmd"
scripts/timed.sh run "$timings" build bash -c "$cmd" >"$logs/build.log" 2>&1 &
part_of_pid[$!]=build
for p in "${parts[@]}"; do
  cmd=$(part_cmd "$p")
  echo "test: $p: $cmd"
  scripts/timed.sh run "$timings" "$p" bash -c "$cmd" >"$logs/$p.log" 2>&1 &
  part_of_pid[$!]=$p
done
trap 'for pid in "${!part_of_pid[@]}"; do kill -TERM -- "-$pid" 2>/dev/null; done; exit 130' INT TERM

failed=()
while [ ${#part_of_pid[@]} -gt 0 ]; do
  wait -n -p pid "${!part_of_pid[@]}"
  rc=$?
  if [ -z "${pid:-}" ]; then
    # 127: none of the parts left is a child of this shell any more (stopped from outside):
    # each of them failed, and waiting again would spin.
    [ "$rc" = 127 ] || continue
    for pid in "${!part_of_pid[@]}"; do failed+=("${part_of_pid[$pid]}"); done
    break
  fi
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
