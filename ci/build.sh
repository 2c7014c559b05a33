#!/usr/bin/env bash
# Configures and builds phasebench (Release, Ninja) into ${PHASEBENCH_BUILD_DIR:-build}.
#   bash ci/build.sh          everything: every backend whose dependencies are found, and the tests
#   bash ci/build.sh --main   the phasebench binary alone (ci/main.sh): a fresh configuration leaves
#                             the tests out and builds the CUDA backend only where a GPU is found
# An existing build keeps its own configuration (a test may call this on a debug build), except that
# a build configured by --main is widened to everything when everything is asked for.
# PHASEBENCH_CMAKE_ARGS adds configure arguments.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  "") scope=everything ;;
  --main) scope=main ;;
  *) echo "build: unknown argument '$1' (expected nothing, or --main)" >&2; exit 2 ;;
esac
build_dir=${PHASEBENCH_BUILD_DIR:-build}
start=$(date +%s)

scope_args=()
cached_scope=
if [ -f "$build_dir/CMakeCache.txt" ]; then
  cached_scope=$(sed -n 's/^PHASEBENCH_BUILD_SCOPE:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
  if [ "$scope" = everything ] && [ "$cached_scope" = main ]; then
    scope_args=(-DPHASEBENCH_BUILD_SCOPE=everything -DPHASEBENCH_BUILD_TESTS=ON -DPHASEBENCH_WITH_CUDA=AUTO)
  fi
  cmake -S . -B "$build_dir" "${scope_args[@]}" ${PHASEBENCH_CMAKE_ARGS:-}
else
  if [ "$scope" = main ]; then
    scope_args=(-DPHASEBENCH_BUILD_SCOPE=main -DPHASEBENCH_BUILD_TESTS=OFF -DPHASEBENCH_WITH_CUDA=IF_GPU)
  else
    scope_args=(-DPHASEBENCH_BUILD_SCOPE=everything)
  fi
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${scope_args[@]}" ${PHASEBENCH_CMAKE_ARGS:-}
fi

if [ "$scope" = main ]; then
  cmake --build "$build_dir" --target phasebench -j "$(nproc)"
else
  cmake --build "$build_dir" -j "$(nproc)"
fi
echo "build: $(( $(date +%s) - start )) s in $build_dir ($scope)"
