#!/usr/bin/env bash
# make test's parts, side by side. Most of each part's time is spent waiting (restart delays,
# TTLs, terraform, systemd booting), so one part after another left the machine idle; the
# longest packages are split over several processes by test name. Each part writes its
# output to build/test/<part>.log, printed whole (never interleaved) as soon as the part ends;
# the exit status fails when any part failed; each part's time (and CPU time) is printed at
# the end.
#   scripts/test.sh            every part
#   scripts/test.sh PART...    only these parts (a single part runs in the foreground)
#   scripts/test.sh check      fails when the steps miss a test or run one twice (the build
#                              part runs it too)
# Processes side by side never share a port: each test process claims loopback addresses of
# its own (internal/localmasters.ClaimLoopback).
# GO_TEST_FLAGS comes from the Makefile.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${GO_TEST_FLAGS:=-count=1 -timeout 40m}"

# Test packages that another make target runs.
ELSEWHERE="github.com/redlock-kit/redlock-kit/monitoring" # make monitoring-check

# The go test runs (steps): packages, -run, -skip (empty: none), -race or not, and whether
# they need the acceptance build. A package split over steps gives each a -run/-skip pair;
# check proves every test runs exactly once. The five-host tests, the longest, are split in two.
HOSTS_A='^TestHosts(Runbook|Day2)$'
HOSTS='^TestHosts'
PROVIDER_A='^TestAcc(AuditDataSource|Master_(dataDirRemoved|badInputs|drift$|crashHeldThenRestarted))'
PROVIDER_B='^TestAcc(Users_|Master_(writeOnly|plain|destroy))'
STEPS=(unit-internal unit-lockagent hostlab chaos provider-a provider-b provider-c hosts-a hosts-b e2e-local)
declare -A PKGS RUN SKIP RACE ACC LAB
# The harnesses, the library (with the README's program), its metrics and the CLI under the race detector, in two
# processes (internal/, lockagent/; go test runs two packages at a time in each); chaos is the
# short chaos run (one round of every fault kind).
PKGS[unit-internal]="$(go list ./internal/... | grep -v -x -e '.*/internal/hostlab' -e '.*/internal/chaos' | tr '
' ' ')" RACE[unit-internal]=1
PKGS[unit-lockagent]="./lockagent/... ./examples/go-client/" RACE[unit-lockagent]=1
PKGS[hostlab]="./internal/hostlab/" RACE[hostlab]=1 LAB[hostlab]=1
PKGS[chaos]="./internal/chaos/" RACE[chaos]=1 LAB[chaos]=1
# The provider's acceptance tests mostly wait (terraform, restart holds): three processes.
PKGS[provider-a]="./provider/..." RUN[provider-a]=$PROVIDER_A ACC[provider-a]=1
PKGS[provider-b]="./provider/..." RUN[provider-b]=$PROVIDER_B SKIP[provider-b]=$PROVIDER_A ACC[provider-b]=1
PKGS[provider-c]="./provider/..." SKIP[provider-c]="$PROVIDER_A|$PROVIDER_B" ACC[provider-c]=1
PKGS[hosts-a]="./test/..." RUN[hosts-a]=$HOSTS_A ACC[hosts-a]=1
PKGS[hosts-b]="./test/..." RUN[hosts-b]=$HOSTS SKIP[hosts-b]=$HOSTS_A ACC[hosts-b]=1
PKGS[e2e-local]="./test/..." SKIP[e2e-local]=$HOSTS ACC[e2e-local]=1
# The parts, side by side; a part's steps run one after another. The packages that boot five
# systemd hosts (hostlab, chaos) each run before one of the two five-host steps, so that at
# most two labs boot at a time (booting is CPU-heavy). build and modules are parts of their
# own (part_cmd). The long parts that mostly wait are split; the CPU-heavy ones (race
# detector, booting hosts) are not split further, as each more process side by side adds
# load on a 2-core machine.
PARTS=(unit-internal unit-lockagent lab-1 lab-2 provider-a provider-b provider-c e2e-local)
declare -A PART_STEPS=([unit-internal]="unit-internal" [unit-lockagent]="unit-lockagent" [lab-1]="chaos hosts-a" [lab-2]="hostlab hosts-b"
  [provider-a]="provider-a" [provider-b]="provider-b" [provider-c]="provider-c" [e2e-local]="e2e-local")

logs=build/test
# The steps of one kind share most of their dependencies (under the race detector: the
# standard library, go-redis; the acceptance tests: the plugin framework, terratest, gRPC), and
# go test processes side by side would each compile them on a cold cache: the build part
# compiles every test once: first the two lab packages (the lab lanes, the longest, start
# as soon as they are built), then the other race-detected ones, then the acceptance ones,
# writing its exit status to $built_lab, $built_race, then $built, which the steps wait for.
built=$logs/.acceptance-built
built_race=$logs/.race-built
built_lab=$logs/.lab-built

# step_cmd STEP: the step's command line.
step_cmd() {
  local s=$1 cmd="go test"
  [ -z "${ACC[$s]:-}" ] || cmd="until [ -e $built ]; do sleep 1; done; TF_ACC=1 go test"
  [ -z "${RACE[$s]:-}" ] || cmd="until [ -e $built_race ]; do sleep 1; done; go test"
  [ -z "${LAB[$s]:-}" ] || cmd="until [ -e $built_lab ]; do sleep 1; done; go test"
  [ -z "${RACE[$s]:-}" ] || cmd+=" -race"
  cmd+=" $GO_TEST_FLAGS"
  [ -z "${RUN[$s]:-}" ] || cmd+=" -run '${RUN[$s]}'"
  [ -z "${SKIP[$s]:-}" ] || cmd+=" -skip '${SKIP[$s]}'"
  echo "$cmd ${PKGS[$s]}"
}

# part_cmd PART: the part's command line (its steps in order; it fails when one failed).
part_cmd() {
  local p=$1 s cmd="rc=0"
  case "$p" in
    # Compiles the lab packages (race-detected), then the other race-detected tests, then
    # installs the provider, then compiles the
    # acceptance tests and the lockagent that test/'s TestMain builds, without linking or
    # running them (go list -export compiles every
    # package, test packages included, into the build cache; a link is not cached, so the
    # steps link for themselves); then checks the steps.
    build)
      local race_pkgs="" lab_pkgs=""
      for s in "${STEPS[@]}"; do
        if [ -n "${LAB[$s]:-}" ]; then lab_pkgs+="${PKGS[$s]} "; elif [ -n "${RACE[$s]:-}" ]; then race_pkgs+="${PKGS[$s]} "; fi
      done
      echo "go list -export -test -race $lab_pkgs >/dev/null; lab_rc=\$?; echo \$lab_rc >$built_lab; go list -export -test -race $race_pkgs >/dev/null; race_rc=\$?; echo \$race_rc >$built_race; scripts/install-provider.sh && go list -export -test ./provider/... ./test/... ./lockagent/cmd/lockagent >/dev/null && scripts/test.sh check && [ \$race_rc = 0 ] && [ \$lab_rc = 0 ]"
      ;;
    modules) echo "until [ -e $built ]; do sleep 1; done; scripts/test-modules.sh" ;;
    *)
      [ -n "${PART_STEPS[$p]:-}" ] || return 1
      for s in ${PART_STEPS[$p]}; do cmd+="; { $(step_cmd "$s"); } || rc=1"; done
      echo "$cmd; exit \$rc"
      ;;
  esac
}

# selected NAME STEP: whether the step's -run/-skip select the top-level test NAME.
selected() {
  local name=$1 p=$2
  { [ -z "${RUN[$p]:-}" ] || grep -Eq -- "${RUN[$p]}" <<<"$name"; } &&
    { [ -z "${SKIP[$p]:-}" ] || ! grep -Eq -- "${SKIP[$p]}" <<<"$name"; }
}

# check: every package with tests is in a step (or run elsewhere); a package in several
# steps has each of its tests selected by exactly one of them.
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
[ ${#parts[@]} -gt 0 ] || parts=(build "${PARTS[@]}" modules)
for p in "${parts[@]}"; do
  part_cmd "$p" >/dev/null || { echo "scripts/test.sh: no part named $p (parts: build ${PARTS[*]} modules)" >&2; exit 2; }
done

mkdir -p "$logs"
rm -f "$built" "$built_race" "$built_lab"
# Without the build part, the steps compile for themselves.
# The build part also installs the provider the acceptance steps and the module tests run.
case " ${parts[*]} " in *" build "*) ;; *) scripts/install-provider.sh >/dev/null && echo 0 >"$built" && echo 0 >"$built_race" && echo 0 >"$built_lab" ;; esac
if [ ${#parts[@]} = 1 ]; then
  cmd=$(part_cmd "${parts[0]}")
  echo "$cmd"
  exec bash -c "$cmd"
fi

timings=build/timings/test.tsv
rm -f "$timings" "$logs"/*.log
# Each part in a process group of its own, so that an interrupted run stops all of them.
set -m
declare -A part_of_pid
for p in "${parts[@]}"; do
  cmd=$(part_cmd "$p")
  echo "test: $p: $cmd"
  [ "$p" != build ] || cmd="$cmd; rc=\$?; echo \$rc >$built; exit \$rc"
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
