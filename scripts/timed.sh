#!/usr/bin/env bash
# Step timings for `make demo` and .ci/run:
#   scripts/timed.sh run FILE NAME CMD...   runs CMD and appends "NAME <tab> SECONDS <tab> ok|failed
#                                           <tab> START <tab> END <tab> CPU" (epoch seconds; CPU: the
#                                           user+system seconds of CMD and the processes it waited for,
#                                           so CPU well below SECONDS means the step mostly waited) to
#                                           FILE; exits with CMD's status
#   scripts/timed.sh report FILE TITLE      prints the steps of FILE and the wall-clock time from the
#                                           first start to the last end: steps that ran side by side
#                                           (make demo builds terraform while it builds the provider)
#                                           are not added up
set -uo pipefail
case "${1:-}" in
  run)
    file=$2 name=$3
    shift 3
    mkdir -p "$(dirname "$file")"
    start=$(date +%s.%N)
    "$@"
    rc=$?
    end=$(date +%s.%N)
    # `times`' second line: the children's user and system time, e.g. "1m2.500s 0m0.250s"
    # (run in this shell, not in a pipe's subshell, whose children are not CMD's).
    times_file=$(mktemp)
    times >"$times_file"
    cpu=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, t, /[ms]/); s += t[1] * 60 + t[2] } printf "%.1f", s }' "$times_file")
    rm -f "$times_file"
    status=ok
    [ "$rc" = 0 ] || status="failed (exit $rc)"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')" "$status" "$start" "$end" "$cpu" >>"$file"
    exit "$rc"
    ;;
  report)
    file=$2 title=$3
    [ -f "$file" ] || exit 0
    echo
    echo "==> $title: time per step"
    awk -F'\t' '{ printf "  %-40s %8.1f s  %-8s %s\n", $1, $2, (NF >= 6 ? sprintf("cpu %.0f s", $6) : ""), $3
        if (NF >= 5) { if (first == "" || $4 < first) first = $4; if ($5 > last) last = $5 } else { sum += $2 } }
      END { total = (first == "" ? 0 : last - first) + sum
        printf "  %-40s %8.1f s  (%d min %d s)\n", "total (wall clock)", total, int(total / 60), int(total) % 60 }' "$file"
    ;;
  *) echo "usage: scripts/timed.sh run FILE NAME CMD... | report FILE TITLE" >&2; exit 2 ;;
esac
