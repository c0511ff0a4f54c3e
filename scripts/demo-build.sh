#!/usr/bin/env bash
# make demo's install and build steps, each timed into DEMO_TIMINGS. On a machine with no
# terraform >= 1.5 (and no ./bin/terraform-1.11.4 from an earlier run), terraform v1.11.4 is
# built from source (scripts/build-terraform.sh: only the local-state backends, no S3/GCS
# module getters; most of a cold make demo) in the background, in this order:
#   1. its source, edits and module downloads run beside the apt-get check and the provider and
#      lockagent build (one go build, scripts/build-binaries.sh): network waits overlap compiles;
#   2. its compile starts when that build is done (BUILD_TERRAFORM_AFTER): the three use the
#      same build flags, so the standard library compiled for the provider serves terraform
#      from GOCACHE. Compiles running side by side share nothing in flight: they would each
#      compile it, on the same cores.
# Its output goes to build/deps-terraform.log, shown when it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
timings=${DEMO_TIMINGS:?set DEMO_TIMINGS (make demo does)}
timed() { scripts/timed.sh run "$timings" "$@"; }

tf_pid=""
if scripts/deps.sh terraform-ready || scripts/deps.sh terraform-built; then
  timed "deps: terraform" scripts/deps.sh terraform
else
  mkdir -p build
  tf_log=build/deps-terraform.log
  tf_gate=build/deps-terraform.compile
  rm -f "$tf_gate"
  echo "deps: no terraform >= 1.5 on PATH: ./bin/terraform (v1.11.4, built once) in the background: its downloads beside the provider and lockagent build, its compile after it (log: $tf_log)"
  # In a process group of its own (set -m), so that an interrupted or failed make demo stops
  # the whole build it started, go and its compilers included.
  set -m
  BUILD_TERRAFORM_AFTER=$PWD/$tf_gate timed "deps: terraform (beside the builds)" scripts/deps.sh terraform >"$tf_log" 2>&1 &
  tf_pid=$!
  set +m
  trap 'rm -f "$tf_gate"; [ -z "$tf_pid" ] || kill -- "-$tf_pid" 2>/dev/null || true' EXIT
fi
timed "deps: redis-server" scripts/deps.sh redis-server
timed "build provider, lockagent" scripts/build-binaries.sh provider lockagent
if [ -n "$tf_pid" ]; then
  touch "$tf_gate"
  tf_status=0
  wait "$tf_pid" || tf_status=$?
  tf_pid=""
  if [ "$tf_status" != 0 ]; then
    cat "$tf_log" >&2
    echo "demo: building terraform failed (exit $tf_status; above, and in $tf_log)" >&2
    exit 1
  fi
  grep -v '^go: downloading' "$tf_log" || true
fi
