#!/usr/bin/env bash
# ci/build.sh's scopes and ci/install-deps.sh's package sets, with cmake, dpkg-query and apt-get
# stood in for by shims earlier on PATH that log their arguments (no configure, build or install
# happens): `build.sh --main` configures a fresh build without the tests and with CUDA only where a
# GPU is, and builds the phasebench target alone; a plain `build.sh` widens a build that --main made;
# a build configured for everything keeps its configuration under --main; `install-deps.sh --run`
# asks for the running packages only, a plain one for the test packages too; a bad argument exits 2.
# Then two real configures (the other backends off, so seconds) with PHASEBENCH_WITH_CUDA=IF_GPU
# and an nvidia-smi shim: without a GPU the summary says cuda is off and why; with one, cuda is built.
# And ci/main.sh's run: a first-look time budget unless the arguments set one (or the repetitions).
# Usage: build_scripts_test.sh SCRATCH_DIR
set -uo pipefail
scratch=$1
repo=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$scratch"
mkdir -p "$scratch/bin"
real_cmake=$(command -v cmake)
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# cmake: logs each call as one line; a configure call writes the cache entry build.sh reads.
cat > "$scratch/bin/cmake" <<'SH'
#!/bin/sh
echo "cmake $*" >> "$SHIM_LOG"
build_dir=
scope=
previous=
for arg in "$@"; do
  [ "$previous" = "-B" ] && build_dir=$arg
  case "$arg" in -DPHASEBENCH_BUILD_SCOPE=*) scope=${arg#-DPHASEBENCH_BUILD_SCOPE=} ;; esac
  previous=$arg
done
if [ -n "$build_dir" ] && [ -n "$scope" ]; then
  mkdir -p "$build_dir"
  echo "PHASEBENCH_BUILD_SCOPE:STRING=$scope" > "$build_dir/CMakeCache.txt"
fi
SH
# dpkg-query: every package is installed except those named in $SHIM_MISSING.
cat > "$scratch/bin/dpkg-query" <<'SH'
#!/bin/sh
for last; do :; done
for name in $SHIM_MISSING; do [ "$name" = "$last" ] && exit 1; done
printf 'install ok installed'
SH
cat > "$scratch/bin/apt-get" <<'SH'
#!/bin/sh
echo "apt-get $*" >> "$SHIM_LOG"
SH
printf '#!/bin/sh\nexec "$@"\n' > "$scratch/bin/sudo"  # where the test runs without root
chmod +x "$scratch/bin/"*
export PATH="$scratch/bin:$PATH" SHIM_LOG="$scratch/calls.log"

# build CASE ARGS...: ci/build.sh into $scratch/CASE's build folder; the calls it made in $calls.
build() {
  local name=$1
  shift
  : > "$SHIM_LOG"
  PHASEBENCH_BUILD_DIR="$scratch/$name" PHASEBENCH_CMAKE_ARGS= bash "$repo/ci/build.sh" "$@" > "$scratch/$name.out" 2>&1
  status=$?
  calls=$(cat "$SHIM_LOG")
}
expect_call() {  # expect_call CASE PATTERN: some logged call matches PATTERN (grep -E)
  grep -qE -- "$2" <<< "$calls" || fail "$1: no call matching '$2' in: $calls"
}
expect_no_call() {
  ! grep -qE -- "$2" <<< "$calls" || fail "$1: a call matching '$2' in: $calls"
}

build fresh-main --main
[ "$status" -eq 0 ] || fail "fresh-main: exit $status"
expect_call fresh-main '^cmake -S \. -B .*fresh-main -G Ninja .*-DPHASEBENCH_BUILD_SCOPE=main -DPHASEBENCH_BUILD_TESTS=OFF -DPHASEBENCH_WITH_CUDA=IF_GPU'
expect_call fresh-main '^cmake --build .*fresh-main --target phasebench '

build fresh-main  # the same folder again, everything asked for: widened
expect_call widen '^cmake -S \. -B .*fresh-main -DPHASEBENCH_BUILD_SCOPE=everything -DPHASEBENCH_BUILD_TESTS=ON -DPHASEBENCH_WITH_CUDA=AUTO'
expect_no_call widen '--target'

build fresh-main --main  # configured for everything now: --main keeps that and builds one target
expect_no_call keep '-DPHASEBENCH_(BUILD_TESTS|WITH_CUDA)'
expect_call keep '^cmake --build .*fresh-main --target phasebench '

build fresh-everything
expect_call fresh-everything '^cmake -S \. -B .*fresh-everything -G Ninja .*-DPHASEBENCH_BUILD_SCOPE=everything'
expect_no_call fresh-everything '-DPHASEBENCH_(BUILD_TESTS|WITH_CUDA)|--target'

build bad --tests
[ "$status" -eq 2 ] || fail "build.sh --tests: exit $status, expected 2"
grep -q "unknown argument '--tests'" "$scratch/bad.out" || fail "build.sh --tests: the argument is not named"
[ -z "$calls" ] || fail "build.sh --tests: ran $calls"

# install CASE ARGS...: ci/install-deps.sh with chromium (a test package) and libtorch-dev missing.
install() {
  local name=$1
  shift
  : > "$SHIM_LOG"
  SHIM_MISSING="chromium libtorch-dev" PHASEBENCH_SKIP_KOKKOS=1 bash "$repo/ci/install-deps.sh" "$@" > "$scratch/$name.out" 2>&1
  status=$?
  calls=$(cat "$SHIM_LOG")
}
install run --run
[ "$status" -eq 0 ] || fail "install --run: exit $status"
expect_call install-run '^apt-get install .* libtorch-dev$'
expect_no_call install-run 'chromium'
install all
expect_call install-all '^apt-get install .* libtorch-dev chromium$'
install bad --everything
[ "$status" -eq 2 ] || fail "install-deps.sh --everything: exit $status, expected 2"
[ -z "$calls" ] || fail "install-deps.sh --everything: ran $calls"

# main ARGS...: ci/main.sh's call of `phasebench run` (a stand-in phasebench logs its arguments).
mkdir -p "$scratch/main-build"
printf '#!/bin/sh\necho "$*" > "%s"\n' "$scratch/main-run.log" > "$scratch/main-build/phasebench"
chmod +x "$scratch/main-build/phasebench"
main() {
  PHASEBENCH_SKIP_INSTALL=1 PHASEBENCH_SKIP_BUILD=1 PHASEBENCH_BUILD_DIR="$scratch/main-build" \
    bash "$repo/ci/main.sh" "$@" > /dev/null 2>&1 || fail "main.sh $*: exit $?"
  cat "$scratch/main-run.log"
}
[ "$(main)" = "run --time-budget 240" ] || fail "main.sh: runs '$(main)', expected its first-look budget"
[ "$(main --suite trainer2)" = "run --suite trainer2 --time-budget 240" ] || fail "main.sh --suite: '$(main --suite trainer2)'"
for own in "--time-budget 600" "--reps 20" "--quick --size small"; do
  # shellcheck disable=SC2086
  [ "$(main $own)" = "run $own" ] || fail "main.sh $own: runs '$(main $own)', expected the user's own"
done
[ "$(PHASEBENCH_MAIN_TIME_BUDGET=90 main)" = "run --time-budget 90" ] || fail "PHASEBENCH_MAIN_TIME_BUDGET: not used"

# configure CASE NVIDIA_SMI_OUTPUT STATUS: a real configure with an nvidia-smi that says OUTPUT.
configure() {
  local name=$1
  mkdir -p "$scratch/$name-bin"
  printf '#!/bin/sh\necho "%s"\nexit %s\n' "$2" "$3" > "$scratch/$name-bin/nvidia-smi"
  chmod +x "$scratch/$name-bin/nvidia-smi"
  PATH="$scratch/$name-bin:$PATH" "$real_cmake" -S "$repo" -B "$scratch/$name" -G Ninja \
    -DPHASEBENCH_WITH_CUDA=IF_GPU -DPHASEBENCH_BUILD_TESTS=OFF -DPHASEBENCH_WITH_TORCH=OFF \
    -DPHASEBENCH_WITH_KOKKOS=OFF -DPHASEBENCH_WITH_ONEDNN=OFF > "$scratch/$name.out" 2>&1
  status=$?
  cuda_line=$(grep -E '^-- +cuda ' "$scratch/$name.out")
}
configure no-gpu "No devices were found" 6
[ "$status" -eq 0 ] || fail "configure without a GPU: exit $status (see $scratch/no-gpu.out)"
grep -qE 'cuda +no +no GPU found \(nvidia-smi lists none\)' <<< "$cuda_line" ||
  fail "configure without a GPU: the summary says '$cuda_line'"
if [ -x /usr/local/cuda/bin/nvcc ] || command -v nvcc > /dev/null; then
  configure gpu "GPU 0: NVIDIA H200 (UUID: GPU-0)" 0
  [ "$status" -eq 0 ] || fail "configure with a GPU: exit $status (see $scratch/gpu.out)"
  grep -qE 'cuda +yes ' <<< "$cuda_line" || fail "configure with a GPU: the summary says '$cuda_line'"
else
  echo "build scripts: no nvcc here, so the configure with a GPU is not tried"
fi

if [ "$failed" -eq 0 ]; then echo "build scripts: all cases hold"; fi
exit "$failed"
