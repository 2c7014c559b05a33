#!/usr/bin/env bash
# The README's main command: install the packages, build, run the benchmark suites at the default
# size, and print where the results are. Extra arguments go to `phasebench run`
# (e.g. `bash ci/main.sh --suite trainer2 --reps 20`).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PHASEBENCH_SKIP_INSTALL:-}" ]; then bash ci/install-deps.sh; fi
bash ci/build.sh
build_dir=${PHASEBENCH_BUILD_DIR:-build}
status=0
"$build_dir/phasebench" run "$@" || status=$?
if [ "$status" -eq 1 ]; then
  echo "main: some variant failed its check (status FAIL, MISTRUSTED or ERROR in results.csv)" >&2
fi
exit "$status"
