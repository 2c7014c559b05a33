#!/usr/bin/env bash
# How far the regression gate can be trusted on this machine (docs/regression-gate.md).
#
#   bash ci/measure-gate.sh record DIR TRIALS [run options...]   the runs (default: the gate's suite)
#   bash ci/measure-gate.sh evaluate DIR [compare options...]     the rates, from the recorded runs
#
# `record` runs the suite 3 x TRIALS times, interleaved so that drift of the machine hits every
# kind alike: trial t is an unchanged run a-t, then s10-t and s25-t, where one row -- rotating over
# the timed rows other than the serial references -- is made 10% and 25% slower by the test-only
# PHASEBENCH_INJECT_SLOWDOWN. `evaluate` then compares, in time and in ratio mode:
#   false alarms: a-t against a-(t+1) for odd t (disjoint A/A pairs of the same build): rows called
#                 REGRESSION / rows tested; plus the rows other than the injected one in s-t
#   detection:    a-t against s10-t and s25-t: how often the injected row is called REGRESSION
# Uses PHASEBENCH_BUILD_DIR (default build).
set -euo pipefail
pb=${PHASEBENCH_BUILD_DIR:-build}/phasebench

# The timed rows of a run other than the serial references, as anchored regular expressions.
injectable_rows() {
  "$pb" compare "$1" "$1" | awk '$2 == "OK" && $1 ~ /\// && $1 !~ /\/reference\// { print "^" $1 "$" }'
}

record() {
  local dir=$1 trials=$2
  shift 2
  local run_args=("$@")
  if [ ${#run_args[@]} -eq 0 ]; then run_args=(--quick --size small --reps 25); fi
  mkdir -p "$dir"
  printf '%s\n' "${run_args[*]}" > "$dir/run-args"
  "$pb" run "${run_args[@]}" --out "$dir/probe" > /dev/null 2>&1
  mapfile -t rows < <(injectable_rows "$dir/probe")
  for ((t = 1; t <= trials; t++)); do
    local target=${rows[$(((t - 1) % ${#rows[@]}))]}
    echo "$t $target" >> "$dir/targets"
    "$pb" run "${run_args[@]}" --out "$dir/a-$t" > /dev/null 2>&1 || true
    PHASEBENCH_INJECT_SLOWDOWN="$target:0.10" "$pb" run "${run_args[@]}" --out "$dir/s10-$t" > /dev/null 2>&1 || true
    PHASEBENCH_INJECT_SLOWDOWN="$target:0.25" "$pb" run "${run_args[@]}" --out "$dir/s25-$t" > /dev/null 2>&1 || true
    echo "trial $t/$trials done ($target)" >&2
  done
}

# "<rows called REGRESSION other than the target> <rows tested> <target called REGRESSION: 0/1>"
judge() {
  local base=$1 new=$2 target=$3
  shift 3
  "$pb" compare "$base" "$new" "$@" | awk -v target="$target" '
    /Holm over/ { match($0, /Holm over [0-9]+/); tested = substr($0, RSTART + 10, RLENGTH - 10) }
    $NF == "REGRESSION" { if ("^" $1 "$" == target) hit = 1; else other++ }
    END { printf "%d %d %d\n", other, tested, hit }'
}

percent() { awk -v n="$1" -v d="$2" 'BEGIN { if (d == 0) print "-"; else printf "%.1f%%", 100 * n / d }'; }

evaluate() {
  local dir=$1
  shift
  local trials
  trials=$(wc -l < "$dir/targets")
  echo "runs: $(cat "$dir/run-args"); $trials trials; compare options: ${*:-(defaults)}"
  printf '%-6s %-32s %-30s %-26s %-26s\n' mode "A/A false alarms (rows)" "A/A pairs with any alarm" "10% slowdown detected" "25% slowdown detected"
  for mode in time ratio; do
    local alarms=0 tested=0 pairs=0 alarmed_pairs=0 hits10=0 hits25=0 n=0
    for ((t = 1; t + 1 <= trials; t += 2)); do
      read -r other rows _ < <(judge "$dir/a-$t" "$dir/a-$((t + 1))" "-" --mode "$mode" "$@")
      alarms=$((alarms + other)); tested=$((tested + rows)); pairs=$((pairs + 1))
      if [ "$other" -gt 0 ]; then alarmed_pairs=$((alarmed_pairs + 1)); fi
    done
    while read -r t target; do
      read -r other rows hit < <(judge "$dir/a-$t" "$dir/s10-$t" "$target" --mode "$mode" "$@")
      hits10=$((hits10 + hit)); alarms=$((alarms + other)); tested=$((tested + rows - 1))
      read -r other rows hit < <(judge "$dir/a-$t" "$dir/s25-$t" "$target" --mode "$mode" "$@")
      hits25=$((hits25 + hit)); alarms=$((alarms + other)); tested=$((tested + rows - 1))
      n=$((n + 1))
    done < "$dir/targets"
    printf '%-6s %-32s %-30s %-26s %-26s\n' "$mode" "$alarms/$tested = $(percent $alarms $tested)" \
      "$alarmed_pairs/$pairs = $(percent $alarmed_pairs $pairs)" "$hits10/$n = $(percent $hits10 $n)" \
      "$hits25/$n = $(percent $hits25 $n)"
  done
}

case "${1:-}" in
  record) shift; record "$@" ;;
  evaluate) shift; evaluate "$@" ;;
  *) echo "usage: $0 record DIR TRIALS [run options...] | evaluate DIR [compare options...]" >&2; exit 2 ;;
esac
