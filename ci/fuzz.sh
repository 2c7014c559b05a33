#!/usr/bin/env bash
# The fuzz stage of CI: builds the libFuzzer harnesses of tests/fuzz with clang-14 (only the core,
# the workloads and the reference backend: a few minutes) and runs each one for
# ${PHASEBENCH_FUZZ_SECONDS:-30} s. Each run first replays its committed corpus
# (tests/fuzz/corpus/<harness>/), which holds every input a past run crashed on, so a regression
# fails here. New inputs go to a scratch directory, never into the committed corpus; a crash's
# input is kept in ${PHASEBENCH_FUZZ_ARTIFACTS:-build-fuzz/artifacts} and fails the stage.
# The long runs quoted in docs/reliability.md: PHASEBENCH_FUZZ_SECONDS=1800 bash ci/fuzz.sh HARNESS
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PHASEBENCH_FUZZ_BUILD_DIR:-build-fuzz}
seconds=${PHASEBENCH_FUZZ_SECONDS:-30}
artifacts=${PHASEBENCH_FUZZ_ARTIFACTS:-$build_dir/artifacts}
harnesses=("$@")
[ ${#harnesses[@]} -gt 0 ] || harnesses=(results_csv samples_csv machine_json catalog_json command_line npy)

start=$(date +%s)
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPHASEBENCH_FUZZ=ON -DPHASEBENCH_BUILD_TESTS=OFF -DPHASEBENCH_WITH_TORCH=OFF -DPHASEBENCH_WITH_KOKKOS=OFF \
    -DPHASEBENCH_WITH_ONEDNN=OFF -DPHASEBENCH_WITH_CUDA=OFF ${PHASEBENCH_CMAKE_ARGS:-}
fi
cmake --build "$build_dir" -j "$(nproc)" --target fuzzers
echo "fuzz: built in $(( $(date +%s) - start )) s"

mkdir -p "$artifacts"
# One harness's run: its log and its fuzzer's exit status (a crash is non-zero) in $artifacts.
run_harness() {
  local harness=$1 scratch dictionary=tests/fuzz/$1.dict dict_option=() status=0
  scratch=$(mktemp -d)
  [ -f "$dictionary" ] && dict_option=(-dict="$dictionary")
  "$build_dir/tests/fuzz/fuzz_$harness" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$artifacts/$harness-" "${dict_option[@]}" \
    "$scratch" "tests/fuzz/corpus/$harness" >"$artifacts/$harness.log" 2>&1 || status=$?
  rm -rf "$scratch"
  echo "$status" >"$artifacts/$harness.status"
}

# The harnesses run side by side, one per core (each fuzzer is one thread): the stage takes
# ceil(harnesses / cores) x $seconds instead of harnesses x $seconds. Each one's exit status goes
# to a file, and all are reported in order once all have ended, so that one crash hides no other.
cores=$(nproc)
for harness in "${harnesses[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$cores" ]; do wait -n || true; done
  echo "fuzz: $harness for $seconds s (log: $artifacts/$harness.log)"
  rm -f "$artifacts/$harness.status"  # no earlier run's status stands in for a harness that died
  run_harness "$harness" &
done
wait
failed=0
for harness in "${harnesses[@]}"; do
  status=$(cat "$artifacts/$harness.status" 2>/dev/null || echo "no status")
  log=$artifacts/$harness.log
  echo "fuzz: $harness:"
  grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::(number_of_executed_units|peak_rss)|SUMMARY|Test unit written" "$log" || true
  if [ "$status" != 0 ]; then
    tail -40 "$log"
    echo "fuzz: $harness failed (exit $status); a crash's input is in $artifacts: fix it, then add the input to tests/fuzz/corpus/$harness/"
    failed=1
  fi
done
[ "$failed" -eq 0 ] || exit 1
echo "fuzz: ${#harnesses[@]} harnesses, $(( $(date +%s) - start )) s in all"
