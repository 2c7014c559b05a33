#!/usr/bin/env bash
# How far the regression gate can be trusted on this machine (docs/regression-gate.md).
#
#   bash ci/measure-gate.sh record DIR TRIALS     the runs, each as ci/gate.sh runs the quick suite
#   bash ci/measure-gate.sh evaluate DIR [compare options...]
#                                                 the rates (default options: ci/gate.sh's)
#
# `record` runs the suite 3 x TRIALS times (each `ci/gate.sh --run-suite`: several processes,
# pooled), interleaved so that drift of the machine hits every kind alike: trial t is an unchanged
# run a-t, then s10-t and s25-t, in which a few rows (4, or PHASEBENCH_MEASURE_ROWS) -- rotating
# over the timed rows other than the serial references -- are made 10% and 25% slower by the
# test-only PHASEBENCH_INJECT_SLOWDOWN. `evaluate` then compares the pooled runs, in time and in
# ratio mode:
#   false alarms: a-t against a-(t+1) for odd t (disjoint A/A pairs of the same build), plus the
#                 rows not injected in a-t against s10-t and s25-t: rows called REGRESSION / rows
#   detection:    a-t against s10-t and s25-t: how often an injected row is called REGRESSION
# Uses PHASEBENCH_BUILD_DIR (default build) and ci/gate.sh's PHASEBENCH_GATE_* settings.
set -euo pipefail
gate=$(cd "$(dirname "$0")" && pwd)/gate.sh
export PHASEBENCH_SKIP_INSTALL=1 PHASEBENCH_SKIP_BUILD=1 PHASEBENCH_BUILD_DIR=${PHASEBENCH_BUILD_DIR:-build}
PHASEBENCH_BUILD_DIR=$(cd "$PHASEBENCH_BUILD_DIR" && pwd)  # gate.sh works from the repository root
pb=$PHASEBENCH_BUILD_DIR/phasebench

# The suite into $1 (pooled into $1/pooled), with the rest of the arguments as environment.
suite() {
  local dir=$1
  shift
  env "$@" bash "$gate" --run-suite "$dir" > /dev/null 2>&1 || true
}

# The timed rows of a run other than the serial references.
injectable_rows() {
  "$pb" compare "$1" "$1" | awk '$2 == "OK" && $1 ~ /\// && $1 !~ /\/reference\// { print $1 }'
}

record() {
  local dir=$1 trials=$2 per_trial=${PHASEBENCH_MEASURE_ROWS:-4}
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  env | grep '^PHASEBENCH_GATE_' > "$dir/settings" || true
  suite "$dir/probe" PHASEBENCH_GATE_PROCESSES=1
  mapfile -t rows < <(injectable_rows "$dir/probe/pooled")
  local next=0
  for ((t = 1; t <= trials; t++)); do
    local targets=()
    for ((k = 0; k < per_trial; k++)); do
      targets+=("${rows[$((next % ${#rows[@]}))]}")
      next=$((next + 1))
    done
    echo "$t ${targets[*]}" >> "$dir/targets"
    local pattern
    pattern="^($(IFS='|'; echo "${targets[*]}"))\$"
    suite "$dir/a-$t"
    suite "$dir/s10-$t" PHASEBENCH_INJECT_SLOWDOWN="$pattern:0.10"
    suite "$dir/s25-$t" PHASEBENCH_INJECT_SLOWDOWN="$pattern:0.25"
    echo "trial $t/$trials done" >&2
  done
}

# "<rows called REGRESSION, not injected> <rows tested, not injected> <injected rows called
# REGRESSION> <injected rows tested>"; TARGETS is a space-separated list of row names.
judge() {
  local base=$1 new=$2 injected_rows=$3
  shift 3
  "$pb" compare "$base" "$new" "$@" | awk -v list="$injected_rows" '
    BEGIN { n = split(list, names, " "); for (i = 1; i <= n; i++) injected[names[i]] = 1 }
    $1 ~ /\// && / \[/ {  # a row with an interval is a row that was tested
      if ($1 in injected) { tested_in++; if ($NF == "REGRESSION") hit++ }
      else { tested_out++; if ($NF == "REGRESSION") alarm++ }
    }
    END { printf "%d %d %d %d\n", alarm, tested_out, hit, tested_in }'
}

percent() { awk -v n="$1" -v d="$2" 'BEGIN { if (d == 0) print "-"; else printf "%.1f%%", 100 * n / d }'; }

evaluate() {
  local dir=$1
  shift
  local trials options=("$@")
  if [ ${#options[@]} -eq 0 ]; then read -r -a options < <(bash "$gate" --print-compare-args); fi
  trials=$(wc -l < "$dir/targets")
  echo "settings: $(tr '\n' ' ' < "$dir/settings")(others: ci/gate.sh defaults); $trials trials; compare ${options[*]}"
  printf '%-6s %-26s %-24s %-26s %-26s\n' mode "false alarms (rows)" "A/A pairs with an alarm" \
    "10% slowdowns detected" "25% slowdowns detected"
  for mode in time ratio; do
    local alarms=0 tested=0 pairs=0 alarmed_pairs=0 hits10=0 n10=0 hits25=0 n25=0
    local alarm rows hit injected t targets
    for ((t = 1; t + 1 <= trials; t += 2)); do
      read -r alarm rows _ _ < <(judge "$dir/a-$t/pooled" "$dir/a-$((t + 1))/pooled" "" --mode "$mode" "${options[@]}")
      alarms=$((alarms + alarm)); tested=$((tested + rows)); pairs=$((pairs + 1))
      if [ "$alarm" -gt 0 ]; then alarmed_pairs=$((alarmed_pairs + 1)); fi
    done
    while read -r t targets; do
      read -r alarm rows hit injected < <(judge "$dir/a-$t/pooled" "$dir/s10-$t/pooled" "$targets" --mode "$mode" "${options[@]}")
      alarms=$((alarms + alarm)); tested=$((tested + rows)); hits10=$((hits10 + hit)); n10=$((n10 + injected))
      read -r alarm rows hit injected < <(judge "$dir/a-$t/pooled" "$dir/s25-$t/pooled" "$targets" --mode "$mode" "${options[@]}")
      alarms=$((alarms + alarm)); tested=$((tested + rows)); hits25=$((hits25 + hit)); n25=$((n25 + injected))
    done < "$dir/targets"
    printf '%-6s %-26s %-24s %-26s %-26s\n' "$mode" "$alarms/$tested = $(percent $alarms $tested)" \
      "$alarmed_pairs/$pairs" "$hits10/$n10 = $(percent $hits10 $n10)" "$hits25/$n25 = $(percent $hits25 $n25)"
  done
}

case "${1:-}" in
  record) shift; record "$@" ;;
  evaluate) shift; evaluate "$@" ;;
  *) echo "usage: $0 record DIR TRIALS | evaluate DIR [compare options...]" >&2; exit 2 ;;
esac
