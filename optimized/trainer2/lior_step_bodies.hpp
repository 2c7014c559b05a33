#pragma once
// trainer2/lior_step's single pass (phase 9, single_pass_lior): s, dlior and the three
// batch sums of one block of rows, on raw host pointers. The Kokkos variant runs one block per work
// item (optimized/trainer2/lior_step-kokkos.cpp); tests/trainer2_lior_single_pass_test.cpp runs
// every block of sizes that verify's do not reach (partial blocks, rows past the last group of 16).

#include <algorithm>
#include <cstdint>

#include "optimized/common/integer_math.hpp"
#include "reference/trainer2/lior_step.hpp"

namespace pb::optimized::trainer2 {

namespace ref = pb::reference::trainer2;

constexpr int64_t kSinglePassLanes = 16;  // rows taken at once: 16 floats, one AVX-512 register
// Rows per block (a work item): 64 kB of v, many blocks per thread. Not a multiple of the lanes on
// purpose: every verify size's M is one (B·K, K a multiple of 16), so with 2048 no block would end
// in rows taken one by one; 2040 ends each full block in 8 of them.
constexpr int64_t kSinglePassBlockRows = 2040;

/// How many blocks cover `rows` rows (the last one partial).
inline int64_t single_pass_blocks(int64_t rows) { return ceil_div(rows, kSinglePassBlockRows); }

/// Rows [begin, end): s and dlior written, the sums of dlior, R and s added to sums[0..2]. Rows go
/// kSinglePassLanes at a time, each lane with its own accumulators and its row's quadratic form in
/// the reference's order, so the lanes are independent and the compiler vectorizes across them (a
/// sum into one float it may not reorder). The rows past the last full group go one by one.
/// Always inlined: each ISA clone of its caller must get its own copy, not a call to the baseline.
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
inline void single_pass_rows(const float* v, const float* g, const float* R, float* s, float* dlior, int64_t begin,
                             int64_t end, float* sums) {
  constexpr int n = ref::kCoordinateDim;
  float lane_dlior[kSinglePassLanes] = {}, lane_R[kSinglePassLanes] = {}, lane_s[kSinglePassLanes] = {};
  const auto row = [&](int64_t m, int lane) {
    const float speed = ref::clamped_speed(ref::quadratic_form(g, v + m * n, n));
    const float scaled = R[m] * speed;
    s[m] = speed;
    dlior[m] = scaled;
    lane_dlior[lane] += scaled;
    lane_R[lane] += R[m];
    lane_s[lane] += speed;
  };
  int64_t m = begin;
  for (; m + kSinglePassLanes <= end; m += kSinglePassLanes) {
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
    for (int lane = 0; lane < kSinglePassLanes; ++lane) row(m + lane, lane);
  }
  for (; m < end; ++m) row(m, 0);
  for (int lane = 0; lane < kSinglePassLanes; ++lane) {
    sums[0] += lane_dlior[lane];
    sums[1] += lane_R[lane];
    sums[2] += lane_s[lane];
  }
}

/// Block `block` of the `rows` rows: single_pass_rows over its range.
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
inline void single_pass_block(const float* v, const float* g, const float* R, float* s, float* dlior, int64_t rows,
                              int64_t block, float* sums) {
  const int64_t begin = block * kSinglePassBlockRows;
  single_pass_rows(v, g, R, s, dlior, begin, std::min(begin + kSinglePassBlockRows, rows), sums);
}

}  // namespace pb::optimized::trainer2
