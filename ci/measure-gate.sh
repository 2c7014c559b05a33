#!/usr/bin/env bash
# How far the regression gate can be trusted on this machine (docs/regression-gate.md).
#
#   bash ci/measure-gate.sh record DIR TRIALS     the runs, each as ci/gate.sh runs the quick suite
#   bash ci/measure-gate.sh evaluate DIR [compare options...]
#                                                 the rates (default options: ci/gate.sh's)
#
# `record` runs, for each trial t, four runs of the suite as ci/gate.sh runs it (several
# processes, pooled): two unchanged (a-t, b-t), and s10-t and s25-t, in which a few rows (4, or
# PHASEBENCH_MEASURE_ROWS) -- rotating over the timed rows other than the serial references -- are
# made 10% and 25% slower by the test-only PHASEBENCH_INJECT_SLOWDOWN. The four runs' processes
# are interleaved, so drift of the machine hits every kind alike. `evaluate` then compares the
# pooled runs, in time and in ratio mode, for two ways of using the gate (see comparisons()):
# against a baseline recorded earlier, and against the base build run interleaved with the new:
#   false alarms: rows called REGRESSION / rows compared, over A/A pairs (two runs of the same
#                 build) and over the rows not injected in the pairs with injected rows
#   detection:    how often an injected row is called REGRESSION, for 10% and 25%
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

# One process of every kind of trial $2 into $1/<kind>-$2, then each kind pooled. The processes
# are interleaved -- round i runs process i of each kind, starting at a different kind each round
# -- so that whatever the machine does at a moment hits every kind alike.
record_trial() {
  local dir=$1 t=$2 pattern=$3 processes i k
  local kinds=(a b s10 s25)
  local -A inject=([a]="" [b]="" [s10]="$pattern:0.10" [s25]="$pattern:0.25")
  processes=$(bash "$gate" --print-processes)
  for ((i = 1; i <= processes; i++)); do
    for ((k = 0; k < ${#kinds[@]}; k++)); do
      local kind=${kinds[$(((k + i - 1) % ${#kinds[@]}))]}
      env PHASEBENCH_INJECT_SLOWDOWN="${inject[$kind]}" bash "$gate" --run-process "$dir/$kind-$t" "$i" \
        > /dev/null 2>&1 || true
    done
  done
  for kind in "${kinds[@]}"; do bash "$gate" --pool "$dir/$kind-$t" > /dev/null 2>&1 || true; done
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
    record_trial "$dir" "$t" "^($(IFS='|'; echo "${targets[*]}"))\$"
    echo "trial $t/$trials done $(date -u +%H:%M) load $(cut -d' ' -f1 /proc/loadavg)" >&2
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

# The comparisons of one method, one per line: "<kind> <base run> <new run> [injected rows...]",
# kind aa (two runs of the same build) or s10/s25.
#   interleaved: base and new ran interleaved, process by process (what `ci/gate.sh` does with
#                PHASEBENCH_GATE_BASE_BUILD): a-t against b-t, s10-t and s25-t.
#   sequential:  base recorded a trial earlier (what comparing with a committed baseline does):
#                a-t against a-(t+1) for odd t, and a-t against s10-(t+1) and s25-(t+1).
# Runs recorded before interleaving (no b-1) have only the sequential method, with a-t against
# s10-t and s25-t, which ran one after the other.
comparisons() {
  local dir=$1 method=$2 trials t targets
  trials=$(wc -l < "$dir/targets")
  local -a row_lists
  while read -r t targets; do row_lists[t]=$targets; done < "$dir/targets"
  for ((t = 1; t <= trials; t++)); do
    if [ "$method" = interleaved ]; then
      echo "aa $dir/a-$t $dir/b-$t"
      echo "s10 $dir/a-$t $dir/s10-$t ${row_lists[t]}"
      echo "s25 $dir/a-$t $dir/s25-$t ${row_lists[t]}"
    elif [ ! -d "$dir/b-1" ]; then
      if ((t % 2 == 1 && t < trials)); then echo "aa $dir/a-$t $dir/a-$((t + 1))"; fi
      echo "s10 $dir/a-$t $dir/s10-$t ${row_lists[t]}"
      echo "s25 $dir/a-$t $dir/s25-$t ${row_lists[t]}"
    elif ((t < trials)); then
      if ((t % 2 == 1)); then echo "aa $dir/a-$t $dir/a-$((t + 1))"; fi
      echo "s10 $dir/a-$t $dir/s10-$((t + 1)) ${row_lists[t + 1]}"
      echo "s25 $dir/a-$t $dir/s25-$((t + 1)) ${row_lists[t + 1]}"
    fi
  done
}

# One line of rates for a method and a mode.
tally() {
  local dir=$1 method=$2 mode=$3
  shift 3
  local alarms=0 tested=0 pairs=0 alarmed_pairs=0 hits10=0 n10=0 hits25=0 n25=0
  local kind base new targets alarm rows hit injected
  while read -r kind base new targets; do
    [ -d "$base/pooled" ] && [ -d "$new/pooled" ] || continue  # a trial cut off
    read -r alarm rows hit injected < <(judge "$base/pooled" "$new/pooled" "$targets" --mode "$mode" "$@")
    alarms=$((alarms + alarm)); tested=$((tested + rows))
    case "$kind" in
      aa) pairs=$((pairs + 1)); if [ "$alarm" -gt 0 ]; then alarmed_pairs=$((alarmed_pairs + 1)); fi ;;
      s10) hits10=$((hits10 + hit)); n10=$((n10 + injected)) ;;
      s25) hits25=$((hits25 + hit)); n25=$((n25 + injected)) ;;
    esac
  done < <(comparisons "$dir" "$method")
  printf '%-12s %-6s %-26s %-24s %-26s %-26s\n' "$method" "$mode" "$alarms/$tested = $(percent $alarms $tested)" \
    "$alarmed_pairs/$pairs" "$hits10/$n10 = $(percent $hits10 $n10)" "$hits25/$n25 = $(percent $hits25 $n25)"
}

evaluate() {
  local dir=$1
  shift
  local options=("$@") methods=(sequential)
  if [ ${#options[@]} -eq 0 ]; then read -r -a options < <(bash "$gate" --print-compare-args); fi
  if [ -d "$dir/b-1" ]; then methods+=(interleaved); fi
  echo "settings: $(tr '\n' ' ' < "$dir/settings")(others: ci/gate.sh defaults); $(wc -l < "$dir/targets") trials; compare ${options[*]}"
  printf '%-12s %-6s %-26s %-24s %-26s %-26s\n' method mode "false alarms (rows)" "A/A pairs with an alarm" \
    "10% slowdowns detected" "25% slowdowns detected"
  for method in "${methods[@]}"; do
    for mode in time ratio; do tally "$dir" "$method" "$mode" "${options[@]}"; done
  done
}

case "${1:-}" in
  record) shift; record "$@" ;;
  evaluate) shift; evaluate "$@" ;;
  *) echo "usage: $0 record DIR TRIALS | evaluate DIR [compare options...]" >&2; exit 2 ;;
esac
