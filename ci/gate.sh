#!/usr/bin/env bash
# The regression gate (docs/regression-gate.md): build, run the quick suite, compare it with the
# committed baseline of this machine (results/baselines/<fingerprint>/) in time mode -- or, when
# no baseline matches this machine's fingerprint, with another one in ratio mode -- and write a
# Markdown summary for the pull request.
#
#   bash ci/gate.sh                   exit 0 pass, 1 a regression or a check that now fails, 2 bad setup
#   bash ci/gate.sh --record          run the quick suite; record (or refresh) this machine's baseline
#   bash ci/gate.sh --run-suite DIR   only run the quick suite into DIR (ci/measure-gate.sh uses it)
#
# The quick suite, as docs/regression-gate.md measured it: the small size, one thread, 30 short
# repetitions, in 3 processes whose samples are pooled (`merge --pool`); then `compare` looks at
# the fastest quarter of each row's repetitions and fails slowdowns over 10%. Each choice is there
# because the measurement needed it on a shared machine; see that document.
#
# Environment (all optional):
#   PHASEBENCH_BUILD_DIR          build directory (default build)
#   PHASEBENCH_SKIP_INSTALL=1     do not run ci/install-deps.sh;  PHASEBENCH_SKIP_BUILD=1: do not build
#   PHASEBENCH_GATE_RUN_ARGS      `run` options of the suite (a baseline must be recorded with the same)
#   PHASEBENCH_GATE_PROCESSES     how many processes run the suite (default 3)
#   PHASEBENCH_GATE_COMPARE_ARGS  `compare` options (default "--fastest 25 --threshold 10")
#   PHASEBENCH_GATE_MODE          time (default, this machine's baseline) or ratio (always ratio)
#   PHASEBENCH_GATE_OUT           directory to create for the runs (default results/runs/gate-<UTC time>)
#   PHASEBENCH_GATE_SUMMARY       Markdown summary to write (default <that directory>/summary.md)
#   PHASEBENCH_BASELINE           a baseline directory to use instead of the automatic choice
#   PHASEBENCH_BASELINES_DIR      where baselines live (default results/baselines)
#   PHASEBENCH_GATE_BUSY_LOAD     1-minute load average above which the summary warns that timing
#                                 verdicts are unreliable (default: the number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."

run_args=${PHASEBENCH_GATE_RUN_ARGS:---quick --size small --reps 30 --threads 1}
processes=${PHASEBENCH_GATE_PROCESSES:-3}
compare_args=${PHASEBENCH_GATE_COMPARE_ARGS:---fastest 25 --threshold 10}
gate_mode=${PHASEBENCH_GATE_MODE:-time}
baselines=${PHASEBENCH_BASELINES_DIR:-results/baselines}
build_dir=${PHASEBENCH_BUILD_DIR:-build}
out=${PHASEBENCH_GATE_OUT:-results/runs/gate-$(date -u +%Y%m%dT%H%M%SZ)}
summary=${PHASEBENCH_GATE_SUMMARY:-$out/summary.md}
pb=$build_dir/phasebench

# Runs the suite in $processes processes into $1/process-<i> and pools them into $1/pooled.
# Exit 1 (a check failed) still gives runs for compare to report; anything else is fatal.
run_suite() {
  local dir=$1 i status
  mkdir -p "$dir"
  for ((i = 1; i <= processes; i++)); do
    status=0
    # shellcheck disable=SC2086  # run_args is a list of options
    "$pb" run $run_args --out "$dir/process-$i" || status=$?
    if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then
      echo "gate: phasebench run failed (exit $status)" >&2
      exit "$status"
    fi
  done
  "$pb" merge --pool "$dir"/process-* --out "$dir/pooled"
}

mode_arg=""
case "${1:-}" in
  --record | "") mode_arg=${1:-} ;;
  --run-suite) run_suite "${2:?usage: gate.sh --run-suite DIR}"; exit 0 ;;
  --print-compare-args) echo "$compare_args"; exit 0 ;;  # for ci/measure-gate.sh
  *) echo "gate: unknown argument '$1' (use --record, --run-suite DIR or nothing)" >&2; exit 2 ;;
esac
case "$gate_mode" in
  ratio | time) ;;
  *) echo "gate: PHASEBENCH_GATE_MODE must be time or ratio, not '$gate_mode'" >&2; exit 2 ;;
esac

if [ -z "${PHASEBENCH_SKIP_INSTALL:-}" ]; then bash ci/install-deps.sh; fi
if [ -z "${PHASEBENCH_SKIP_BUILD:-}" ]; then PHASEBENCH_BUILD_DIR=$build_dir bash ci/build.sh; fi

# The baseline: this machine's, else another machine's (ratios only). Chosen before the run, so a
# missing baseline costs no benchmark time.
fingerprint=$("$pb" baseline fingerprint)
if [ "$mode_arg" != --record ]; then
  if [ -n "${PHASEBENCH_BASELINE:-}" ]; then
    baseline=$PHASEBENCH_BASELINE
  elif [ -d "$baselines/$fingerprint" ]; then
    baseline=$baselines/$fingerprint
  else
    baseline=$( (find "$baselines" -mindepth 1 -maxdepth 1 -type d 2> /dev/null || true) | sort | head -n 1)
  fi
  if [ -z "$baseline" ]; then
    echo "gate: no baseline under $baselines/; record one on this machine with: bash ci/gate.sh --record" >&2
    exit 2
  fi
  mode=$gate_mode
  if [ "$mode" = time ] && [ "$("$pb" baseline fingerprint "$baseline")" != "$fingerprint" ]; then
    mode=ratio  # another machine: only within-run ratios are comparable
    echo "gate: no baseline for this machine ($fingerprint); comparing ratios against $baseline"
  fi
fi

# The machine's load around the suite: under heavy load the gate's verdicts were measured to be
# unreliable (docs/regression-gate.md: 11% false alarms, 78% of 25% slowdowns caught at a load
# average of 3.5-16 on 2 vCPUs), so a busy run says so beside its verdict.
load_now() { cut -d' ' -f1 /proc/loadavg 2> /dev/null || echo 0; }
busy_warning() {
  local highest=$1 cores limit
  cores=$(nproc)
  limit=${PHASEBENCH_GATE_BUSY_LOAD:-$cores}
  if awk -v load="$highest" -v limit="$limit" 'BEGIN { exit !(load > limit) }'; then
    echo "**Warning:** the machine was busy while the suite ran (1-minute load average up to $highest on $cores cores). Under such load the gate was measured to raise false alarms on 11% of rows and to miss 22% of 25% slowdowns (docs/regression-gate.md): rerun on a quiet runner before trusting a timing verdict. Correctness verdicts are unaffected."
  fi
}

load_before=$(load_now)
run_suite "$out"
load_after=$(load_now)
busy=$(busy_warning "$(printf '%s\n%s\n' "$load_before" "$load_after" | sort -g | tail -n 1)")

if [ "$mode_arg" = --record ]; then
  refresh=""
  if [ -d "$baselines/$fingerprint" ]; then refresh=--refresh; fi
  "$pb" baseline record "$out/pooled" --root "$baselines" $refresh
  echo "gate: commit $baselines/$fingerprint to make it the baseline of this machine"
  exit 0
fi

mkdir -p "$(dirname "$summary")"
compare_status=0
# shellcheck disable=SC2086  # compare_args is a list of options
"$pb" compare "$baseline" "$out/pooled" --mode "$mode" $compare_args --markdown "$summary" || compare_status=$?
if [ -n "$busy" ]; then
  echo "gate: $busy" >&2
  if [ -f "$summary" ]; then printf '\n%s\n' "$busy" >> "$summary"; fi
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$summary" ]; then cat "$summary" >> "$GITHUB_STEP_SUMMARY"; fi
echo "gate: runs in $out, summary in $summary"
exit "$compare_status"
