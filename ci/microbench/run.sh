#!/usr/bin/env bash
# The microbenchmarks behind the measured reasons in the limit sections: builds them
# with the system's g++ (OpenMP; FFTW single precision for fftw_chunks) into DIR and runs the
# cases the docs quote. Timings, not tests: run it on an idle machine and read the spread.
#
#   bash ci/microbench/run.sh [--build-only] [DIR]        (default: build/microbench)
#
# --build-only builds them and runs nothing (tests/microbench_test.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build_only=false
if [ "${1:-}" = --build-only ]; then
  build_only=true
  shift
fi
out=${1:-build/microbench}
mkdir -p "$out"
g++ -O3 -march=native -fopenmp -o "$out/working_set_bandwidth" "$here/working_set_bandwidth.cpp"
g++ -O3 -march=native -o "$out/stencil_neighbours" "$here/stencil_neighbours.cpp"
if pkg-config --exists fftw3f; then
  g++ -O3 -march=native -fopenmp -o "$out/fftw_chunks" "$here/fftw_chunks.cpp" $(pkg-config --cflags --libs fftw3f)
else
  echo "fftw_chunks: not built (no fftw3f; Debian: libfftw3-dev)" >&2
fi
$build_only && exit 0
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
# hamiltonian (read F and V, write H: 3 + 2 floats per complex value), bayesian (read F, E; write
# post, Lambda: 4 + 4), retrieval (cand_state read once: 1 + 0), each past its working set
"$out/working_set_bandwidth" 3 2 4 10 15 20 25 32 40 84
# hamiltonian: its step with the x-neighbour runs at 2 KB (the next site) to 128 KB (a row, the
# default size), one thread, a working set that stays in the L2
"$out/stencil_neighbours" 256 2 8 32 64 128
"$out/working_set_bandwidth" 4 4 8 16 24 34 48 134
"$out/working_set_bandwidth" 1 0 2 8 16 24 36 48 153
# lior_optimizer_step (read p and g, write out) at its default size, ordinary and non-temporal stores
"$out/working_set_bandwidth" 2 1 226
"$out/working_set_bandwidth" 2 1nt 226
if [ -x "$out/fftw_chunks" ]; then
  "$out/fftw_chunks" 8192 512 1 1 4 8 16 512   # lior_memory_conv, default size, one thread
  "$out/fftw_chunks" 8192 512 2 4              # the same on two threads
  "$out/fftw_chunks" 32768 256 1 1 2 4 8       # the large size's line length
fi
