#!/usr/bin/env bash
# Step timings for `make demo` and .ci/run:
#   scripts/timed.sh run FILE NAME CMD...   runs CMD and appends "NAME <tab> SECONDS <tab> ok|failed
#                                           <tab> START <tab> END" (epoch seconds) to FILE; exits with
#                                           CMD's status
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
    status=ok
    [ "$rc" = 0 ] || status="failed (exit $rc)"
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')" "$status" "$start" "$end" >>"$file"
    exit "$rc"
    ;;
  report)
    file=$2 title=$3
    [ -f "$file" ] || exit 0
    echo
    echo "==> $title: time per step"
    awk -F'\t' '{ printf "  %-40s %8.1f s  %s\n", $1, $2, $3
        if (NF >= 5) { if (first == "" || $4 < first) first = $4; if ($5 > last) last = $5 } else { sum += $2 } }
      END { total = (first == "" ? 0 : last - first) + sum
        printf "  %-40s %8.1f s  (%d min %d s)\n", "total (wall clock)", total, int(total / 60), int(total) % 60 }' "$file"
    ;;
  *) echo "usage: scripts/timed.sh run FILE NAME CMD... | report FILE TITLE" >&2; exit 2 ;;
esac
