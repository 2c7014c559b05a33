#!/usr/bin/env bash
# The sanitizer stage of CI (after ci/test.sh): the unit tests, `verify --size small` and
# `verify --size random:3 --seeds 1` of every variant, built with AddressSanitizer and
# UndefinedBehaviorSanitizer (preset "asan": RelWithDebInfo, into build-asan). Only the two targets
# they need are built, and without the CUDA backend: its variants cannot run on a machine without a
# GPU (their rows are SKIPPED), nvcc does not take these flags, and their __host__ __device__
# bodies are compiled by the host compiler into tests/cuda/*_test.cpp, which are in the test
# binary here.
# Left out of the test binary here: Equivalence.EveryRegisteredVariantMatchesTheReference (the registry-driven verify: the `verify` below
# runs the same checks once, instead of twice) and the browser test (chromium is not ours to check).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=build-asan  # the preset's binaryDir
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

# The unit tests in two shards at once (one per core: the instrumented tests are about 3x slower
# than the release ones), each shard's output kept apart and shown when it fails.
unit_tests() {
  local shards=2 pids=() failed=0
  for ((shard = 0; shard < shards; ++shard)); do
    GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$shard "$build_dir/tests/phasebench_tests" \
      --gtest_filter='-Equivalence.EveryRegisteredVariantMatchesTheReference:ReportInBrowser.*' --gtest_brief=1 \
      >"$build_dir/unit-tests-$shard.log" 2>&1 &
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

unit_tests
echo "sanitize: unit tests done at $(( $(date +%s) - start )) s"
"$build_dir/phasebench" verify --size small
echo "sanitize: verify --size small done at $(( $(date +%s) - start )) s"
# Random shapes reach the block offsets and tails that no named size does (docs/reliability.md);
# one seed each, since the small size above already takes every seed-dependent branch.
"$build_dir/phasebench" verify --size random:3 --seeds 1
echo "sanitize: verify --size random:3 --seeds 1 done; $(( $(date +%s) - start )) s in all"
