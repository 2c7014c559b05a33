#!/usr/bin/env bash
# The README's test command: install the packages, build, run every test through CTest.
# The unit tests that start phasebench processes note themselves in
# $build_dir/tests-starting-processes.txt (tests/process.hpp), for ci/sanitize.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
bash ci/build.sh
build_dir=${PHASEBENCH_BUILD_DIR:-build}
export PHASEBENCH_TEST_SUBPROCESS_LOG=$(cd "$build_dir" && pwd)/tests-starting-processes.txt
rm -f "$PHASEBENCH_TEST_SUBPROCESS_LOG"
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)"
