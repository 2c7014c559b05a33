#!/usr/bin/env bash
# The sanitizer stage of CI (after ci/test.sh): the unit tests that run in-process, a tour of every
# command, `verify --size small` and `verify --size random:3 --seeds 1` of every variant, built with
# AddressSanitizer and UndefinedBehaviorSanitizer (preset "asan": RelWithDebInfo, into build-asan).
# Only the two targets they need are built, and without the CUDA backend: its variants cannot run on
# a machine without a GPU (their rows are SKIPPED), nvcc does not take these flags, and their
# __host__ __device__ bodies are compiled by the host compiler into tests/cuda/*_test.cpp, which are
# in the test binary here.
# Left out of the test binary here:
# - the tests that start phasebench processes, as ci/test.sh listed them (tests/process.hpp): an
#   instrumented process takes about 5 s of CPU to start (LibTorch's registrations through ASan's
#   allocator), and those tests start hundreds, which made this stage half of CI. What they run is
#   the same code the release tests check; here each command runs once instead (command_tour), and
#   verify below runs every variant. Without ci/test.sh's list (this script run on its own) every
#   test runs, and it says so.
# - Equivalence.EveryRegisteredVariantMatchesTheReference (the registry-driven verify: the `verify`
#   below runs the same checks once, instead of twice) and the browser test (chromium is not ours to
#   check).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=build-asan  # the preset's binaryDir
process_tests=${PHASEBENCH_BUILD_DIR:-build}/tests-starting-processes.txt
start=$(date +%s)

cmake --preset asan -DPHASEBENCH_WITH_CUDA=OFF ${PHASEBENCH_CMAKE_ARGS:-} >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target phasebench phasebench_tests
echo "sanitize: built in $(( $(date +%s) - start )) s"

# Why each option:
# - halt_on_error: the first report fails the stage (UBSan alone would go on).
# - abort_on_error: the process with the report dies on SIGABRT instead of exiting 1, so verify's
#   supervisor records it as that check's ERROR ("crashed: Aborted", the report above it on
#   stderr) and goes on with a new worker: one run names every variant with a memory error.
# - no suppressions yet: LibTorch, oneDNN and Kokkos are not built with ASan, which can give false
#   container-overflow or odr-violation reports; any such report is to be checked, and only then
#   turned off here by name with its reason, never by a blanket switch.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}

# The gtest filter: every test but those left out above.
unit_test_filter() {
  local left_out=(Equivalence.EveryRegisteredVariantMatchesTheReference 'ReportInBrowser.*')
  if [ -s "$process_tests" ]; then
    local starting
    mapfile -t starting < <(sort -u "$process_tests")
    left_out+=("${starting[@]}")
    echo "sanitize: ${#starting[@]} tests that start processes left out ($process_tests)" >&2
  else
    echo "sanitize: no $process_tests (ci/test.sh writes it): the tests that start processes run too" >&2
  fi
  local IFS=:
  echo "-${left_out[*]}"
}

# The unit tests in two shards at once (one per core: the instrumented tests are about 3x slower
# than the release ones), each shard's output kept apart and shown when it fails.
unit_tests() {
  local shards=2 pids=() failed=0 filter
  filter=$(unit_test_filter)
  for ((shard = 0; shard < shards; ++shard)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$shard "$build_dir/tests/phasebench_tests" \
      --gtest_filter="$filter" --gtest_brief=1 >"$build_dir/unit-tests-$shard.log" 2>&1 &
    pids+=($!)
  done
  for ((shard = 0; shard < shards; ++shard)); do
    if ! wait "${pids[$shard]}"; then
      failed=1
      echo "sanitize: unit test shard $shard of $shards failed:"
      tail -200 "$build_dir/unit-tests-$shard.log"
    fi
  done
  grep -h "^\[  PASSED  \]\|^\[  FAILED  \]\|tests\? ran" "$build_dir"/unit-tests-*.log || true
  return $failed
}

# Every command once on the instrumented build, on one small workload: the paths of the tests left
# out above. A sanitizer report aborts the command (exit 134), which fails the stage; exit 1 of
# `run` (a failed check) and `compare` (a regression) is a verdict, not a memory error.
command_tour() {
  local pb=$build_dir/phasebench tour
  tour=$(mktemp -d)
  trap 'rm -rf "$tour"' RETURN
  local selection=(--filter trainer2/lior_step --size small)
  expect_verdict() {
    local status=0
    "$@" >"$tour/last.log" 2>&1 || status=$?
    if [ "$status" -gt 1 ]; then
      cat "$tour/last.log"
      echo "sanitize: command tour: '$*' exited $status"
      return 1
    fi
  }
  "$pb" list "${selection[@]}" >/dev/null
  expect_verdict "$pb" run "${selection[@]}" --quick --out "$tour/a"
  expect_verdict "$pb" run "${selection[@]}" --quick --shard 1/2 --out "$tour/s1"
  expect_verdict "$pb" run "${selection[@]}" --quick --shard 2/2 --out "$tour/s2"
  expect_verdict "$pb" merge "$tour/s1" "$tour/s2" --out "$tour/b"
  expect_verdict "$pb" compare "$tour/a" "$tour/b" --junit "$tour/compare.xml" --markdown "$tour/compare.md"
  expect_verdict "$pb" compare "$tour/a" "$tour/b" --mode ratio --metric cpu --fastest 25
  "$pb" report "$tour/a" "$tour/b" --out "$tour/report.html" >/dev/null
  "$pb" baseline record "$tour/a" --root "$tour/baselines" >/dev/null
  "$pb" history --db "$tour/history.sqlite" add "$tour/a" "$tour/b" >/dev/null
  "$pb" history --db "$tour/history.sqlite" list >/dev/null
  "$pb" history --db "$tour/history.sqlite" trend >/dev/null
  "$pb" report --history "$tour/history.sqlite" --out "$tour/history.html" >/dev/null
  "$pb" dump --workload trainer2/lior_step --size small --out "$tour/dump" >/dev/null
  "$pb" check "$tour/dump" "$tour/dump/reference" >/dev/null
}

unit_tests
echo "sanitize: unit tests done at $(( $(date +%s) - start )) s"
command_tour
echo "sanitize: command tour done at $(( $(date +%s) - start )) s"
"$build_dir/phasebench" verify --size small
echo "sanitize: verify --size small done at $(( $(date +%s) - start )) s"
# Random shapes reach the block offsets and tails that no named size does (docs/reliability.md);
# one seed each, since the small size above already takes every seed-dependent branch.
"$build_dir/phasebench" verify --size random:3 --seeds 1
echo "sanitize: verify --size random:3 --seeds 1 done; $(( $(date +%s) - start )) s in all"
