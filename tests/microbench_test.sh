#!/usr/bin/env bash
# ci/microbench builds and its programs measure: each prints its line for a tiny case (no timing
# asserted, the machine is shared), and refuses bad arguments with exit 2.
#   microbench_test.sh WORK_DIR
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$1
rm -rf "$work"
bash "$here/../ci/microbench/run.sh" --build-only "$work"
fail() { echo "microbench_test: $*" >&2; exit 1; }
# refuses PROGRAM ARGS: PROGRAM must exit 2 on ARGS (word-split on purpose)
refuses() {
  local code=0
  "$work/$1" $2 >/dev/null 2>&1 || code=$?
  [ "$code" = 2 ] || fail "$1 $2 exited $code, not 2"
}
export OMP_NUM_THREADS=1
out=$("$work/working_set_bandwidth" 3 2 1)
grep -Eq '^3 read \+ 2 written streams, +1\.0 MB, 1 thread\(s\): best +[0-9.]+ GB/s, median +[0-9.]+ GB/s$' <<<"$out" \
  || fail "working_set_bandwidth printed: $out"
out=$("$work/working_set_bandwidth" 1 0 1)
grep -Eq '^1 read \+ 0 written streams, +1\.0 MB, 1 thread\(s\): best +[0-9.]+ GB/s, median +[0-9.]+ GB/s$' <<<"$out" \
  || fail "working_set_bandwidth 1 0 printed: $out"
out=$("$work/working_set_bandwidth" 2 1nt 1)
grep -Eq '^2 read \+ 1 written \(non-temporal\) streams, +1\.0 MB, 1 thread\(s\): best +[0-9.]+ GB/s, median +[0-9.]+ GB/s$' <<<"$out" \
  || fail "working_set_bandwidth 2 1nt printed: $out"
for bad in "5 5 1" "3 2 0" "3 2" "1 1nt 1" "2 1x 1"; do refuses working_set_bandwidth "$bad"; done
out=$("$work/stencil_neighbours" 64 2)
grep -Eq '^stream 64 KB, all five reads at the centre: +[0-9.]+ ns per 16-float step$' <<<"$out" \
  || fail "stencil_neighbours printed: $out"
grep -Eq '^stream 64 KB, x-neighbours at \+-2 KB: +[0-9.]+ ns per 16-float step$' <<<"$out" \
  || fail "stencil_neighbours printed: $out"
for bad in "64" "63 2" "64 0" "x 2" "64 2k"; do refuses stencil_neighbours "$bad"; done
if [ -x "$work/fftw_chunks" ]; then
  out=$("$work/fftw_chunks" 256 8 1 4)
  grep -Eq '^L 256, 8 lines, 1 thread\(s\), chunks of +4: median +[0-9.]+ ms, +[0-9.]+ GFLOP/s$' <<<"$out" \
    || fail "fftw_chunks printed: $out"
  refuses fftw_chunks "256 8 1 3"  # lines not a multiple of the chunk
fi
echo "microbench_test: passed"
