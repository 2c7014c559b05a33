#!/usr/bin/env bash
# The regression gate (docs/regression-gate.md): build, run the quick suite, compare it with the
# committed baseline of this machine (results/baselines/<fingerprint>/) in time mode -- or, when
# no baseline matches this machine's fingerprint, with another baseline in ratio mode -- and write
# a Markdown summary for the pull request.
#
#   bash ci/gate.sh            exit 0 pass, 1 a regression or a check that now fails, 2 bad setup
#   bash ci/gate.sh --record   run the quick suite and record (or refresh) this machine's baseline
#
# Environment (all optional):
#   PHASEBENCH_BUILD_DIR          build directory (default build)
#   PHASEBENCH_SKIP_INSTALL=1     do not run ci/install-deps.sh;  PHASEBENCH_SKIP_BUILD=1: do not build
#   PHASEBENCH_GATE_RUN_ARGS      the suite to run (default below; a baseline must use the same)
#   PHASEBENCH_GATE_COMPARE_ARGS  extra `compare` options, e.g. "--threshold 10"
#   PHASEBENCH_GATE_OUT           run directory to create (default results/runs/gate-<UTC time>)
#   PHASEBENCH_GATE_SUMMARY       Markdown summary to write (default <run directory>/summary.md)
#   PHASEBENCH_BASELINE           a baseline directory to use instead of the automatic choice
set -euo pipefail
cd "$(dirname "$0")/.."

# Measured in docs/regression-gate.md: 25 repetitions keep false alarms and misses within target.
run_args=${PHASEBENCH_GATE_RUN_ARGS:---quick --size small --reps 25}
build_dir=${PHASEBENCH_BUILD_DIR:-build}
out=${PHASEBENCH_GATE_OUT:-results/runs/gate-$(date -u +%Y%m%dT%H%M%SZ)}
summary=${PHASEBENCH_GATE_SUMMARY:-$out/summary.md}
record=0
case "${1:-}" in
  --record) record=1 ;;
  "") ;;
  *) echo "gate: unknown argument '$1' (use --record or nothing)" >&2; exit 2 ;;
esac

if [ -z "${PHASEBENCH_SKIP_INSTALL:-}" ]; then bash ci/install-deps.sh; fi
if [ -z "${PHASEBENCH_SKIP_BUILD:-}" ]; then PHASEBENCH_BUILD_DIR=$build_dir bash ci/build.sh; fi
pb=$build_dir/phasebench

# A failing check (exit 1) still gives a run for compare to report; anything else is fatal.
status=0
# shellcheck disable=SC2086  # run_args is a list of options
"$pb" run $run_args --out "$out" || status=$?
if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then
  echo "gate: phasebench run failed (exit $status)" >&2
  exit "$status"
fi

fingerprint=$("$pb" baseline fingerprint "$out")
if [ "$record" -eq 1 ]; then
  refresh=""
  if [ -d "results/baselines/$fingerprint" ]; then refresh=--refresh; fi
  "$pb" baseline record "$out" $refresh
  echo "gate: commit results/baselines/$fingerprint to make it the baseline of this machine"
  exit 0
fi

if [ -n "${PHASEBENCH_BASELINE:-}" ]; then
  baseline=$PHASEBENCH_BASELINE
elif [ -d "results/baselines/$fingerprint" ]; then
  baseline=results/baselines/$fingerprint
else
  baseline=$(find results/baselines -mindepth 1 -maxdepth 1 -type d | sort | head -n 1)
fi
if [ -z "$baseline" ]; then
  echo "gate: no baseline under results/baselines/; record one on this machine with: bash ci/gate.sh --record" >&2
  exit 2
fi
mode=time
if [ "$("$pb" baseline fingerprint "$baseline")" != "$fingerprint" ]; then
  mode=ratio  # another machine: only within-run ratios are comparable
  echo "gate: no baseline for this machine ($fingerprint); comparing ratios against $baseline"
fi

mkdir -p "$(dirname "$summary")"
compare_status=0
# shellcheck disable=SC2086  # extra options are a list
"$pb" compare "$baseline" "$out" --mode "$mode" --markdown "$summary" ${PHASEBENCH_GATE_COMPARE_ARGS:-} ||
  compare_status=$?
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$summary" ]; then cat "$summary" >> "$GITHUB_STEP_SUMMARY"; fi
echo "gate: run in $out, summary in $summary"
exit "$compare_status"
