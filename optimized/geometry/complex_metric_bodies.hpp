#pragma once
// geometry/complex_metric's entry_vectors phase: the host body, on raw pointers. The
// Kokkos variant runs one block of items per work item (optimized/geometry/complex_metric-kokkos.cpp)
// and inlines it into its ISA clones; tests/geometry_complex_metric_entries_test.cpp runs it at item
// counts verify's sizes do not have. Math: reference/geometry/complex_metric.hpp.
//
// shared_pairs writes the 28 + 36 upper entries of Phi and Theta one 10-term dot product at a time
// and mirrors each into the lower triangle: scalar sums and scattered stores. Here one 8 x 8 matrix
// per item, Q_mn = psi^T 1/2 gamma_m gamma_n psi, is computed as four rows of 16 entries (one
// AVX-512 register each), one multiply-add per pair psi_i psi_j (i <= j) against weights laid out
// by pair; then Phi = Q - Q^T and Theta = Q + Q^T, the transpose by register permutes: 640
// multiply-adds per item, as many as shared_pairs, but in SIMD lanes, with both outputs stored as
// they lie. Phi's diagonal is Q_mm - Q_mm = 0 and its antisymmetry exact, as the reference's.

#include <cstdint>

#include "optimized/common/integer_math.hpp"
#include "optimized/geometry/complex_metric_ladder.hpp"  // pair_of, kS, kD, kPairCount, kPlane

namespace pb::geometry_kernels::entry_vectors {

using pb::optimized::ceil_div;

constexpr int64_t kWeightCount = kPairCount * kPlane;  // 640 floats, 2.5 kB: stays in L1
constexpr int kRowEntries = 16;                        // entries of Q per register: two rows of 8
constexpr int kRegisters = kPlane / kRowEntries;       // 4
// Items per block (a work item): 256 x 512 B of outputs is 128 kB, so the default size's 16,384
// items are 64 blocks, many per thread. No lane runs across items, so there is no tail: a block
// may hold any number of items.
constexpr int64_t kBlockItems = 256;

/// How many blocks cover `items` items (the last one partial).
inline int64_t blocks(int64_t items) { return ceil_div(items, kBlockItems); }

/// Entry (i, j) of 1/2 gamma_m gamma_n: a 4-term product, halved (exact).
inline float half_product(const float* gamma, int m, int n, int i, int j) {
  float sum = 0;
  for (int k = 0; k < kS; ++k) sum += gamma[(m * kS + i) * kS + k] * gamma[(n * kS + k) * kS + j];
  return 0.5f * sum;
}

/// weights[index], index = p * kPlane + m * kD + n: the weight of psi_i psi_j (pair p, i <= j) in
/// Q_mn, 1/2 gamma_m gamma_n folded over i <= j: H_ii on the diagonal, H_ij + H_ji off it.
inline float folded_weight(const float* gamma, int64_t index) {
  const int pair = static_cast<int>(index / kPlane);
  const int m = static_cast<int>(index % kPlane / kD), n = static_cast<int>(index % kD);
  int i = 0, j = 0;
  pair_of(pair, i, j);
  const float forward = half_product(gamma, m, n, i, j);
  return i == j ? forward : forward + half_product(gamma, m, n, j, i);
}

/// 16 floats, as a vector of the GNU extension (GCC and Clang): one AVX-512 register in that clone,
/// two AVX2 or four SSE registers in the others.
typedef float Row16 __attribute__((vector_size(kRowEntries * sizeof(float))));
typedef int Lanes16 __attribute__((vector_size(kRowEntries * sizeof(int))));

// The helpers below return through a reference: a vector returned by value would take a different
// calling convention in the AVX-512 clone than in the baseline (GCC's -Wpsabi), though all inline.

/// out = the lanes of `a` (index < 16) and `b` (index - 16) picked by `lanes`: one vpermt2ps on
/// AVX-512.
inline void pick(const Row16& a, const Row16& b, const int (&lanes)[kRowEntries], Row16& out) {
#if defined(__GNUC__) && !defined(__clang__)
  Lanes16 mask;
  __builtin_memcpy(&mask, lanes, sizeof mask);
  out = __builtin_shuffle(a, b, mask);
#else  // Clang's shuffle takes constant lanes only
  for (int l = 0; l < kRowEntries; ++l) out[l] = lanes[l] < kRowEntries ? a[lanes[l]] : b[lanes[l] - kRowEntries];
#endif
}

/// The lanes of the transpose. Register k of Q^T holds at lane l the entry (m, n) = (2k + l / 8,
/// l % 8), that is Q_nm, which lies in register n / 2 at lane (n % 2) 8 + m. Columns n < 4 come
/// from registers 0 and 1 (`low`), n >= 4 from 2 and 3 (`high`); `merge` takes each lane from the
/// half that has it. Built at compile time, so that the permutes' masks are constants.
struct TransposeLanes {
  int low[kRegisters][kRowEntries], high[kRegisters][kRowEntries], merge[kRegisters][kRowEntries];
};
constexpr TransposeLanes transpose_lanes() {
  TransposeLanes lanes{};
  for (int k = 0; k < kRegisters; ++k)
    for (int l = 0; l < kRowEntries; ++l) {
      const int m = 2 * k + l / kD, n = l % kD;
      const int source = (n % 2) * kD + m + (n / 2 % 2) * kRowEntries;  // in registers (0, 1) or (2, 3)
      lanes.low[k][l] = n < kD / 2 ? source : 0;
      lanes.high[k][l] = n >= kD / 2 ? source : 0;
      lanes.merge[k][l] = n < kD / 2 ? l : l + kRowEntries;
    }
  return lanes;
}
inline constexpr TransposeLanes kTransposeLanes = transpose_lanes();

/// t = register k of Q^T, from Q's four registers: two permutes gather each half, a third merges.
inline void transposed(const Row16 (&q)[kRegisters], int k, Row16& t) {
  Row16 left, right;
  pick(q[0], q[1], kTransposeLanes.low[k], left);
  pick(q[2], q[3], kTransposeLanes.high[k], right);
  pick(left, right, kTransposeLanes.merge[k], t);
}

/// Phi and Theta [d, d] of one item. Always inlined: each ISA clone of the caller must get its
/// own copy, not a call to the baseline (SSE2) one.
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
inline void item(const float* weights, const float* psi, float* phi, float* theta) {
  float pairs[kPairCount];
  int p = 0;
  for (int i = 0; i < kS; ++i)
    for (int j = i; j < kS; ++j) pairs[p++] = psi[i] * psi[j];
  Row16 q[kRegisters], row;
  for (int k = 0; k < kRegisters; ++k) {
    __builtin_memcpy(&row, weights + k * kRowEntries, sizeof row);
    q[k] = row * pairs[0];
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 16
#endif
  for (int pair = 1; pair < kPairCount; ++pair)
    for (int k = 0; k < kRegisters; ++k) {
      __builtin_memcpy(&row, weights + pair * kPlane + k * kRowEntries, sizeof row);
      q[k] += row * pairs[pair];
    }
  for (int k = 0; k < kRegisters; ++k) {
    Row16 t;
    transposed(q, k, t);
    const Row16 difference = q[k] - t, sum = q[k] + t;
    __builtin_memcpy(phi + k * kRowEntries, &difference, sizeof difference);
    __builtin_memcpy(theta + k * kRowEntries, &sum, sizeof sum);
  }
}

/// Block `block` of `items` items: psi [items, S] in, Phi and Theta [items, d, d] out.
#if defined(__GNUC__)
__attribute__((always_inline))
#endif
inline void block(const float* weights, const float* psi, float* phi, float* theta, int64_t items, int64_t block) {
  const int64_t begin = block * kBlockItems;
  const int64_t end = begin + kBlockItems < items ? begin + kBlockItems : items;
  for (int64_t k = begin; k < end; ++k) item(weights, psi + k * kS, phi + k * kPlane, theta + k * kPlane);
}

}  // namespace pb::geometry_kernels::entry_vectors
