#!/usr/bin/env bash
# make demo's install and build steps, each timed into DEMO_TIMINGS. On a machine with no
# terraform >= 1.5 the terraform build (v1.11.4 from source with only the local-state backends,
# scripts/build-terraform.sh: most of a cold make demo) runs side by side with the provider and
# lockagent builds, so that its module downloads and single-threaded link overlap
# their compiles instead of following them. Its output goes to build/deps-terraform.log, shown
# when it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
timings=${DEMO_TIMINGS:?set DEMO_TIMINGS (make demo does)}
timed() { scripts/timed.sh run "$timings" "$@"; }

# terraform first: when it is built, the apt-get install of redis-server runs beside it too.
tf_pid=""
if scripts/deps.sh terraform-ready; then
  timed "deps: terraform" scripts/deps.sh terraform
else
  mkdir -p build
  tf_log=build/deps-terraform.log
  echo "deps: no terraform >= 1.5 on PATH: ./bin/terraform (v1.11.4, built once) in the background while the rest installs and builds (log: $tf_log)"
  # In a process group of its own (set -m), so that an interrupted or failed make demo stops
  # the whole build it started, go and its compilers included.
  set -m
  timed "deps: terraform (beside the builds)" scripts/deps.sh terraform >"$tf_log" 2>&1 &
  tf_pid=$!
  set +m
  trap '[ -z "$tf_pid" ] || kill -- "-$tf_pid" 2>/dev/null || true' EXIT
fi
timed "deps: redis-server" scripts/deps.sh redis-server
timed "build provider" scripts/install-provider.sh
timed "build lockagent" make --no-print-directory lockagent
if [ -n "$tf_pid" ]; then
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
