#!/usr/bin/env bash
# The README's main command: install what running needs, build the phasebench binary (with the
# backends that can run on this machine), run the benchmark suites at the default size, write the
# HTML report beside the results (report.html in the run directory) and print where both are. Extra arguments go to `phasebench run`
# (e.g. `bash ci/main.sh --suite trainer2 --reps 20`). PHASEBENCH_SKIP_INSTALL=1 and
# PHASEBENCH_SKIP_BUILD=1 leave out those steps (ci/gpu.sh configures and builds its own build).
# The run is a first look, fitted to a time budget of PHASEBENCH_MAIN_TIME_BUDGET seconds (default
# 240, so that a fresh clone shows its report within minutes) unless the arguments set
# --time-budget, --reps, --quick or --resume; `phasebench run` on its own keeps its 480.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PHASEBENCH_SKIP_INSTALL:-}" ]; then bash ci/install-deps.sh --run; fi
if [ -z "${PHASEBENCH_SKIP_BUILD:-}" ]; then bash ci/build.sh --main; fi
build_dir=${PHASEBENCH_BUILD_DIR:-build}
run_log=$(mktemp)
trap 'rm -f "$run_log"' EXIT
status=0
run_args=("$@")
case " $* " in
  *" --time-budget"* | *" --reps"* | *" --quick "* | *" --resume"*) ;;
  *) run_args+=(--time-budget "${PHASEBENCH_MAIN_TIME_BUDGET:-240}") ;;
esac
"$build_dir/phasebench" run "${run_args[@]}" | tee "$run_log" || status=${PIPESTATUS[0]}
if [ "$status" -eq 1 ]; then
  echo "main: some variant failed its check (status FAIL, MISTRUSTED or ERROR in results.csv)" >&2
fi
# `run` ends by printing "results: <run directory>"; a run with failed checks gets its report too.
run_dir=$(sed -n 's/^results: //p' "$run_log" | tail -n 1)
if [ -n "$run_dir" ] && [ -f "$run_dir/results.csv" ]; then
  "$build_dir/phasebench" report "$run_dir" --out "$run_dir/report.html" ||
    echo "main: the HTML report could not be written (see above)" >&2
fi
exit "$status"
