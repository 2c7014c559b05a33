#pragma once
// trainer2's vectorized_retrieval phase: jit_fusion's retrieval kernel (retrieval_fused,
// trainer2_engine-kokkos.hpp) as host SIMD code on raw pointers, one batch row per call. The
// Kokkos variant runs one row per work item and inlines this into its ISA clones
// (retrieval-kokkos.cpp); tests/trainer2_retrieval_simd_test.cpp runs it against the reference.
// Math: reference/trainer2/trainer2.hpp (retrieval, retrieval_logit).
//
// What holds retrieval_fused back (docs/trainer2.md, "The limit of retrieval"): the
// mixing act_b += w_bk cand_state_bk loads and stores act's row for every candidate k, three
// memory operations per multiply-add at the baseline's 128-bit SSE2, where the only compulsory
// traffic is cand_state's row. Here the candidates are taken kMixBlock at a time: each column's
// partial sum stays in a register across the block, so act's row is loaded and stored once per
// kMixBlock candidate rows, and the block's rows (contiguous in cand_state) stream in order.

#include <cstdint>
#include <limits>

#include "optimized/common/simd_math.hpp"  // exp_nonpositive: e^x that vectorizes
#include "reference/trainer2/trainer2.hpp"

#if defined(__GNUC__)
#define PB_RETRIEVAL_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define PB_RETRIEVAL_ALWAYS_INLINE inline
#endif

namespace pb::trainer2_kernels::retrieval_simd {

/// weights[0, K) hold logits with maximum max_logit; replaces them by softmax_k. The exponentials
/// by exp_nonpositive (within 1 ulp of expf; its domain, x >= -4e6, holds: x = logit − max logit,
/// and β R spd stays within a few hundred for the suites' inputs), in a loop of their own so that
/// it vectorizes; their sum in k order, as the reference's.
PB_RETRIEVAL_ALWAYS_INLINE void softmax_of_logits(float* __restrict weights, int64_t K, float max_logit) {
  for (int64_t k = 0; k < K; ++k) weights[k] = pb::optimized::simd::exp_nonpositive(weights[k] - max_logit);
  float total = 0;
  for (int64_t k = 0; k < K; ++k) total += weights[k];
  for (int64_t k = 0; k < K; ++k) weights[k] /= total;
}

/// Candidate rows whose contributions one pass over act's row adds: 8 rows of cand_state (8 kB at
/// the default d = 256) in flight, one register of partial sums per column chunk.
constexpr int64_t kMixBlock = 8;

/// act[0, d) = Σ_k weights[k] states[k, :], k ascending from 0, the reference's order for every
/// column (each partial sum takes the candidates' products one at a time, as the per-k loop
/// does, so the floats are the same): the candidates kMixBlock at a time, the rest one at a time.
PB_RETRIEVAL_ALWAYS_INLINE void mix_states(const float* __restrict states, const float* __restrict weights, int64_t K,
                                           int64_t d, float* __restrict act) {
  for (int64_t j = 0; j < d; ++j) act[j] = 0;
  const int64_t blocked = K - K % kMixBlock;
  for (int64_t k = 0; k < blocked; k += kMixBlock) {
    const float* s = states + k * d;
    const float w0 = weights[k], w1 = weights[k + 1], w2 = weights[k + 2], w3 = weights[k + 3];
    const float w4 = weights[k + 4], w5 = weights[k + 5], w6 = weights[k + 6], w7 = weights[k + 7];
    for (int64_t j = 0; j < d; ++j) {
      float sum = act[j];
      sum += w0 * s[j];
      sum += w1 * s[d + j];
      sum += w2 * s[2 * d + j];
      sum += w3 * s[3 * d + j];
      sum += w4 * s[4 * d + j];
      sum += w5 * s[5 * d + j];
      sum += w6 * s[6 * d + j];
      sum += w7 * s[7 * d + j];
      act[j] = sum;
    }
  }
  for (int64_t k = blocked; k < K; ++k) {
    const float w = weights[k];
    const float* s = states + k * d;
    for (int64_t j = 0; j < d; ++j) act[j] += w * s[j];
  }
}
static_assert(kMixBlock == 8, "mix_states writes out the block's eight candidates");

/// The largest of x[0, K) (−inf when K = 0; a NaN never wins, as in the reference's std::max),
/// in 16 lanes so that it vectorizes: a maximum is the same float in any order.
PB_RETRIEVAL_ALWAYS_INLINE float maximum(const float* x, int64_t K) {
  constexpr int64_t kLanes = 16;
  float lanes[kLanes];
  for (float& lane : lanes) lane = -std::numeric_limits<float>::infinity();
  const int64_t whole = K - K % kLanes;
  for (int64_t k = 0; k < whole; k += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] = x[k + l] > lanes[l] ? x[k + l] : lanes[l];
  float largest = -std::numeric_limits<float>::infinity();
  for (int64_t k = whole; k < K; ++k) largest = x[k] > largest ? x[k] : largest;
  for (float lane : lanes) largest = lane > largest ? lane : largest;
  return largest;
}

/// One batch row of the retrieval: coords [K, n] and states [K, d] its candidates, query [n],
/// metric [n], curvature R_b; writes weights [K] = softmax_k(−β R_b spd_k) (logits by
/// ref::retrieval_logit, the reference's order) and act [d] = Σ_k weights[k] states[k]. The
/// logits in a loop of their own, which vectorizes across candidates (with the running maximum
/// in it, GCC keeps it scalar, which is several times slower).
PB_RETRIEVAL_ALWAYS_INLINE void retrieval_row(const float* coords, const float* states, int64_t K, int64_t d,
                                              const float* query, const float* metric, float curvature,
                                              float* __restrict weights, float* __restrict act) {
  const int64_t n = pb::reference::trainer2::kCoordinateDim;
  for (int64_t k = 0; k < K; ++k)
    weights[k] = pb::reference::trainer2::retrieval_logit(coords + k * n, query, metric, curvature);
  softmax_of_logits(weights, K, maximum(weights, K));
  mix_states(states, weights, K, d, act);
}

}  // namespace pb::trainer2_kernels::retrieval_simd
