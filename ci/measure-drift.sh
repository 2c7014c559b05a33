#!/usr/bin/env bash
# How often `compare` cries wolf when a team compares each run with the one before it, and
# whether it still catches a real slowdown (docs/regression-gate.md, "Two runs of one build").
#
#   bash ci/measure-drift.sh record DIR PAIRS       PAIRS + 1 unchanged runs, and PAIRS runs with
#                                                   one variant made slower, one after the other
#   bash ci/measure-drift.sh evaluate DIR [compare options...]
#                                                   the rates, with the options given (default:
#                                                   compare's defaults), one line per option set
#
# `record` runs `phasebench run $PHASEBENCH_DRIFT_RUN_ARGS` (default: the geometry suite at the
# small size, 10 repetitions) as separate processes, back to back, in the order
# a-0, s-1, a-1, s-2, a-2, ...: each s-k right after a-(k-1), with one variant -- rotating over
# the timed rows other than the serial references -- made slower by the test-only
# PHASEBENCH_INJECT_SLOWDOWN, 10% for odd k and 25% for even k. `evaluate` then compares
#   A/A pairs:  a-(k-1) with a-k (two runs of one build, another run between them): a failed
#               compare is a false alarm;
#   slowdowns:  a-(k-1) with s-k: the slowed row should be a REGRESSION, and no other row;
# with PHASEBENCH_DRIFT_PAIRS=all, every two a-runs and every a-run with every s-run.
# Uses PHASEBENCH_BUILD_DIR (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PHASEBENCH_BUILD_DIR:-build}
pb=$build_dir/phasebench
read -r -a run_args <<< "${PHASEBENCH_DRIFT_RUN_ARGS:---suite geometry --size small --reps 10}"

# One run into $1; exit 1 (a check failed) still gives a run to compare.
run_into() {
  local out=$1 status=0
  shift
  env "$@" "$pb" run "${run_args[@]}" --out "$out" > "$out.log" 2>&1 || status=$?
  if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then
    echo "measure-drift: run failed (exit $status), see $out.log" >&2
    exit "$status"
  fi
}

# The timed rows of a run other than the serial references.
injectable_rows() {
  "$pb" compare "$1" "$1" | awk '$2 == "OK" && $1 ~ /\// && $1 !~ /\/reference\// { print $1 }'
}

record() {
  local dir=$1 pairs=$2 k
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  echo "${run_args[*]}" > "$dir/run-args"
  run_into "$dir/a-0"
  mapfile -t rows < <(injectable_rows "$dir/a-0")
  : > "$dir/targets"
  for ((k = 1; k <= pairs; k++)); do
    local row=${rows[$(((k * 7) % ${#rows[@]}))]} fraction=0.10
    if ((k % 2 == 0)); then fraction=0.25; fi
    echo "$k $row $fraction" >> "$dir/targets"
    run_into "$dir/s-$k" PHASEBENCH_INJECT_SLOWDOWN="^${row}\$:$fraction"
    run_into "$dir/a-$k"
    echo "pair $k/$pairs done $(date -u +%H:%M:%S) load $(cut -d' ' -f1 /proc/loadavg)" >&2
  done
}

# "<exit status> <rows called REGRESSION other than ROW> <ROW called REGRESSION: 1 or 0>
# <warned: 1 or 0>" of compare BASE NEW with the options after ROW. Warned: compare warned that the
# rows of ROW's workload and backend moved together; for an A/A pair (ROW "-"), those of every row
# called REGRESSION.
judge() {
  local base=$1 new=$2 row=$3 status=0 table
  shift 3
  table=$("$pb" compare "$base" "$new" "$@") || status=$?
  awk -v status="$status" -v row="$row" '
    function group_of(name) { sub(/\/[^\/]*$/, "", name); return name }
    /^warning: .*moved together/ { moved[substr($2, 1, length($2) - 1)] = 1 }
    $1 ~ /\// && $NF == "REGRESSION" { if ($1 == row) hit = 1; else alarms++; failing[group_of($1)] = 1 }
    END {
      warned = 0
      for (group in failing) warned = 1
      for (group in failing) if (!(group in moved)) warned = 0
      if (row != "-") warned = (group_of(row) in moved)
      printf "%d %d %d %d\n", status, alarms, hit, warned
    }' <<< "$table"
}

percent() { awk -v n="$1" -v d="$2" 'BEGIN { if (d == 0) print "-"; else printf "%.1f%%", 100 * n / d }'; }

# The comparisons `evaluate` makes, one "BASE NEW ROW FRACTION" per line, ROW "-" for an A/A
# pair. PHASEBENCH_DRIFT_PAIRS=adjacent (the default): a-(k-1) with a-k and with s-k. =all: every
# two unchanged runs and every unchanged run with every slowed one, ten times as many pairs that
# share runs (so not independent), runs far apart in time among them.
comparisons() {
  local dir=$1 last k row fraction i
  last=$(awk 'END { print $1 }' "$dir/targets")
  while read -r k row fraction; do
    [ -d "$dir/a-$k" ] || continue  # a recording cut off
    if [ "${PHASEBENCH_DRIFT_PAIRS:-adjacent}" = all ]; then
      for ((i = 0; i < k; i++)); do echo "$dir/a-$i $dir/a-$k - -"; done
      for ((i = 0; i <= last; i++)); do [ -d "$dir/a-$i" ] && echo "$dir/a-$i $dir/s-$k $row $fraction"; done
    else
      echo "$dir/a-$((k - 1)) $dir/a-$k - -"
      echo "$dir/a-$((k - 1)) $dir/s-$k $row $fraction"
    fi
  done < "$dir/targets"
}

# One line of rates for one set of compare options.
tally() {
  local dir=$1 base new row fraction status alarms hit warned
  shift
  local pairs=0 failed_pairs=0 false_rows=0 n10=0 hit10=0 n25=0 hit25=0 stray=0
  local failed_warned=0 caught=0 caught_warned=0
  while read -r base new row fraction; do
    read -r status alarms hit warned < <(judge "$base" "$new" "$row" "$@")
    if [ "$row" = - ]; then
      pairs=$((pairs + 1)); false_rows=$((false_rows + alarms))
      if [ "$status" -ne 0 ]; then failed_pairs=$((failed_pairs + 1)); failed_warned=$((failed_warned + warned)); fi
      continue
    fi
    stray=$((stray + alarms))
    if [ "$hit" = 1 ]; then caught=$((caught + 1)); caught_warned=$((caught_warned + warned)); fi
    if [ "$fraction" = 0.10 ]; then n10=$((n10 + 1)); hit10=$((hit10 + hit)); else n25=$((n25 + 1)); hit25=$((hit25 + hit)); fi
  done < <(comparisons "$dir")
  printf '%-34s %-22s %-16s %-16s %-16s %-37s %s\n' "${*:-(defaults)}" "$failed_pairs/$pairs = $(percent $failed_pairs $pairs)" \
    "$false_rows" "$hit10/$n10" "$hit25/$n25" "$stray" "$failed_warned/$failed_pairs, $caught_warned/$caught"
}

evaluate() {
  local dir=$1
  shift
  echo "runs: phasebench run $(cat "$dir/run-args"); $(wc -l < "$dir/targets") slowed runs; pairs: ${PHASEBENCH_DRIFT_PAIRS:-adjacent}"
  printf '%-34s %-22s %-16s %-16s %-16s %-37s %s\n' "compare options" "A/A pairs failed" "A/A rows failed" \
    "10% caught" "25% caught" "other rows failed beside a slowdown" \
    "moved together: failed A/A pairs, slowdowns caught"
  if [ $# -gt 0 ]; then tally "$dir" "$@"; return; fi
  tally "$dir"
  tally "$dir" --shift none
  tally "$dir" --mode ratio
}

case "${1:-}" in
  record) shift; record "$@" ;;
  evaluate) shift; evaluate "$@" ;;
  *) echo "usage: $0 record DIR PAIRS | evaluate DIR [compare options...]" >&2; exit 2 ;;
esac
