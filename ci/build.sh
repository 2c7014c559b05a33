#!/usr/bin/env bash
# Configures and builds phasebench (preset "default": Release, Ninja) into ${PHASEBENCH_BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${PHASEBENCH_BUILD_DIR:-build}
start=$(date +%s)
if [ -f "$build_dir/CMakeCache.txt" ]; then
  # An existing build keeps its own configuration (a test may call this on a debug build).
  cmake -S . -B "$build_dir" ${PHASEBENCH_CMAKE_ARGS:-}
else
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release ${PHASEBENCH_CMAKE_ARGS:-}
fi
cmake --build "$build_dir" -j "$(nproc)"
echo "build: $(( $(date +%s) - start )) s in $build_dir"
