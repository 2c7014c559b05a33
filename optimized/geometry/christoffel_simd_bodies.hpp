#pragma once
// geometry/christoffel's vectorized_points phase: Γ for a block of kLanes points at once, one point
// per SIMD lane, on raw pointers. The Kokkos variant runs one block per work item and inlines this
// into its ISA clones (optimized/geometry/christoffel-kokkos.cpp);
// tests/geometry_christoffel_simd_test.cpp runs its pieces against the reference. Math:
// reference/geometry/christoffel.hpp.
//
// What holds the other rows back (docs/geometry.md, "The limit of christoffel"): each point's 17
// metric evaluations call erf 24 times and tanh 64 times through libm, one value per call, and the
// network's layers are 8- and 16-wide dot products that no compiler vectorizes across one point.
// Here every value is a vector of the block's 16 points (optimized/common/simd_lanes.hpp; left to
// auto-vectorization, GCC vectorizes the layers' small loops across the wrong index, with shuffles
// and scalar adds, which is slower than the scalar code):
//   - GELU, tanh and softplus as branch-free polynomials that vectorize (simd_lanes.hpp), measured
//     against libm in the test;
//   - h = 0.1 tanh(½(H + Hᵀ)) is symmetric, so only its 36 entries a <= b are formed, each from
//     one 16-term dot product with the summed rows W_ab + W_ba (the reference forms all 64 H_ab);
//     G, its derivatives and S are kept as those 36 entries too;
//   - Γ^λ_μν is symmetric in (μ, ν): G X = S is solved for the 36 right-hand sides μ <= ν (the
//     reference solves 64), by LU with partial pivoting chosen per lane (each lane's pivot row is
//     swapped in by blends), then written to both (μ, ν) and (ν, μ).
// The arithmetic is the reference's up to fp32 rounding (a different order of summation, the
// polynomials' last bits); verify checks it against the fp64 oracle like every other row.

#include <cmath>
#include <cstdint>
#include <cstring>

#include "optimized/common/simd_lanes.hpp"  // Lanes, the element-wise functions, blocks of kLanes
#include "reference/geometry/christoffel.hpp"

#if defined(__GNUC__)
#define PB_CHRISTOFFEL_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define PB_CHRISTOFFEL_ALWAYS_INLINE inline
#endif

// The functions below return vectors by value; they are always inlined into one ISA clone, so the
// ABI GCC warns about (a 64-byte vector returned without AVX-512) never applies.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pb::geometry_kernels::christoffel_simd {

namespace ref = pb::reference::geometry;

// The lanes hold one point each; the block is built from these.
using pb::optimized::simd::abs_lanes;
using pb::optimized::simd::any_lane;
using pb::optimized::simd::blend;
using pb::optimized::simd::block_count;
using pb::optimized::simd::blocks;
using pb::optimized::simd::first_point;
using pb::optimized::simd::gelu_lanes;
using pb::optimized::simd::kLanes;
using pb::optimized::simd::LaneInts;
using pb::optimized::simd::Lanes;
using pb::optimized::simd::log1p_unit_lanes;
using pb::optimized::simd::softplus_lanes;
using pb::optimized::simd::tanh_lanes;
using pb::optimized::simd::transpose_lanes;

constexpr int kD = ref::kDim;
constexpr int kHidden = ref::kHidden;
constexpr int kPairs = kD * (kD + 1) / 2;  // 36 entries a <= b of a symmetric d x d matrix

/// The index of entry (a, b) of a symmetric matrix kept as its kPairs upper entries, row by row.
constexpr int pair_index(int a, int b) {
  return a <= b ? a * kD - a * (a - 1) / 2 + (b - a) : pair_index(b, a);
}

/// pair_index as a table, so that loops over entries that the compiler keeps rolled read it
/// instead of computing it.
struct PairTable {
  int index[kD][kD];
};
constexpr PairTable make_pair_table() {
  PairTable table{};
  for (int a = 0; a < kD; ++a)
    for (int b = 0; b < kD; ++b) table.index[a][b] = pair_index(a, b);
  return table;
}
inline constexpr PairTable kPairOf = make_pair_table();

// ---- the metric network over a block -----------------------------------------------------------

/// The network's weights laid out for the block kernels, built once in setup() from the inputs.
struct PreparedWeights {
  float r_w1[kD * kD], r_b1[kD], r_w2[kD], r_b2;  // R(x): as the inputs
  float h_w1[kHidden * kD], h_b1[kHidden];         // H's hidden layer: as the inputs
  float pair_w[kPairs * kHidden], pair_b[kPairs];  // row (a, b): ½ (W2_ab + W2_ba), ½ (b2_ab + b2_ba)
  float constant[kPairs];                          // (L Lᵀ)_ab + 1e-4 δ_ab
};

/// The block layout of weights `w` (the reference's pointers into the inputs).
inline PreparedWeights prepare(const ref::MetricWeights<float>& w) {
  PreparedWeights out{};
  for (int i = 0; i < kD * kD; ++i) out.r_w1[i] = w.resilience.w1[i];
  for (int i = 0; i < kD; ++i) out.r_b1[i] = w.resilience.b1[i], out.r_w2[i] = w.resilience.w2[i];
  out.r_b2 = w.resilience.b2[0];
  for (int i = 0; i < kHidden * kD; ++i) out.h_w1[i] = w.h1w[i];
  for (int i = 0; i < kHidden; ++i) out.h_b1[i] = w.h1b[i];
  for (int a = 0; a < kD; ++a)
    for (int b = a; b < kD; ++b) {
      const int p = pair_index(a, b), ab = a * kD + b, ba = b * kD + a;
      // The ½ of tanh(½ (H + Hᵀ)) folded in (a power of two: the same roundings as halving the sum).
      for (int c = 0; c < kHidden; ++c)
        out.pair_w[p * kHidden + c] = 0.5f * (w.h2w[ab * kHidden + c] + w.h2w[ba * kHidden + c]);
      out.pair_b[p] = 0.5f * (w.h2b[ab] + w.h2b[ba]);
      float llt = 0;
      for (int k = 0; k < kD; ++k) llt += w.L[a * kD + k] * w.L[b * kD + k];
      out.constant[p] = llt + (a == b ? float(ref::kMetricRegularizer) : 0.0f);
    }
  return out;
}

/// Rows of a layer whose dot products run side by side: independent chains of multiply-adds keep
/// the FMA units busy where one chain waits for each add's latency (docs/geometry.md times the
/// group sizes).
constexpr int kRowGroup = 4;
constexpr int kPairGroup = 12;

/// sum[g] = bias[r + g] + Σ_c weight[r + g, c] in[c] for the kRowGroup rows from r of a [., kCols]
/// layer, the terms in c order.
template <int kCols, int kGroup>
PB_CHRISTOFFEL_ALWAYS_INLINE void dot_rows(const float* weight, const float* bias, int r, const Lanes* in, Lanes* sum) {
  for (int g = 0; g < kGroup; ++g) sum[g] = Lanes{} + bias[r + g];
  for (int c = 0; c < kCols; ++c)
    for (int g = 0; g < kGroup; ++g) sum[g] += weight[(r + g) * kCols + c] * in[c];
}

/// The first layers of both networks before their GELU: r = W1_R x + b1_R, h = W1_H x + b1_H.
struct Preactivations {
  Lanes r[kD], h[kHidden];
};

/// out = W x + b for the kRows rows of a [kRows, kD] layer, kRowGroup rows at a time.
template <int kRows>
PB_CHRISTOFFEL_ALWAYS_INLINE void first_layer(const float* weight, const float* bias, const Lanes* x, Lanes* out) {
  static_assert(kRows % kRowGroup == 0, "whole groups of rows");
  for (int r = 0; r < kRows; r += kRowGroup) dot_rows<kD, kRowGroup>(weight, bias, r, x, out + r);
}

/// Both networks' first layers at the block's points x[c] (coordinate c of every lane's point).
PB_CHRISTOFFEL_ALWAYS_INLINE void preactivations_lanes(const PreparedWeights& w, const Lanes* x, Preactivations& out) {
  first_layer<kD>(w.r_w1, w.r_b1, x, out.r);
  first_layer<kHidden>(w.h_w1, w.h_b1, x, out.h);
}

/// The first layers at x + δ ê_ρ from those at x: base + δ W1[:, ρ], one multiply-add per row
/// where the whole layer takes d. (The reference evaluates W1 (x + δ ê_ρ) afresh; the two differ by
/// rounding only, and the shifted pair shares base's rounding, which cancels in G(+) - G(-).)
PB_CHRISTOFFEL_ALWAYS_INLINE void shifted_preactivations(const PreparedWeights& w, const Preactivations& base, int rho,
                                                         const Lanes& delta, Preactivations& out) {
  for (int r = 0; r < kD; ++r) out.r[r] = base.r[r] + w.r_w1[r * kD + rho] * delta;
  for (int r = 0; r < kHidden; ++r) out.h[r] = base.h[r] + w.h_w1[r * kD + rho] * delta;
}

/// G at the points whose first layers are `pre`, as its kPairs upper entries G[p]:
/// R² (L Lᵀ + 1e-4 I + 0.1 tanh(½ (H + Hᵀ))), R = clamp(softplus(w2_R · GELU(pre.r) + b2_R), 0.1, 10).
PB_CHRISTOFFEL_ALWAYS_INLINE void metric_lanes(const PreparedWeights& w, const Preactivations& pre, Lanes* G) {
  Lanes z = Lanes{} + w.r_b2;
  for (int c = 0; c < kD; ++c) z += w.r_w2[c] * gelu_lanes(pre.r[c]);
  const Lanes softplus = softplus_lanes(z);
  const float low = float(ref::kResilienceMin), high = float(ref::kResilienceMax);
  const Lanes R = softplus < low ? low : (softplus > high ? high : softplus);
  const Lanes r_squared = R * R;
  Lanes h_hidden[kHidden];
  for (int c = 0; c < kHidden; ++c) h_hidden[c] = gelu_lanes(pre.h[c]);
  static_assert(kPairs % kPairGroup == 0, "whole groups of pairs");
  for (int p = 0; p < kPairs; p += kPairGroup) {
    Lanes sum[kPairGroup];  // ½ (H_ab + H_ba)
    dot_rows<kHidden, kPairGroup>(w.pair_w, w.pair_b, p, h_hidden, sum);
    for (int g = 0; g < kPairGroup; ++g) {
      const Lanes h = float(ref::kPerturbationScale) * tanh_lanes(sum[g]);
      G[p + g] = r_squared * (w.constant[p + g] + h);
    }
  }
}

// ---- the solve ---------------------------------------------------------------------------------

/// Solves A X = B in every lane: A[kD][kD], B[kD][kColumns] (X replaces B; A is destroyed). The
/// reference's solve_in_place (Gaussian elimination with partial pivoting, the first largest |A_rc|
/// wins) with each lane's pivot row swapped in by selects, so that lanes whose pivots differ still
/// share every instruction; the divisions by a pivot as one reciprocal each.
template <int kColumns>
PB_CHRISTOFFEL_ALWAYS_INLINE void solve_lanes(Lanes (*A)[kD], Lanes (*B)[kColumns]) {
  for (int col = 0; col < kD; ++col) {
    LaneInts pivot = LaneInts{} + col;
    Lanes largest = abs_lanes(A[col][col]);
    for (int r = col + 1; r < kD; ++r) {
      const Lanes candidate = abs_lanes(A[r][col]);
      const LaneInts larger = candidate > largest;
      pivot = larger ? r : pivot;
      largest = larger ? candidate : largest;
    }
    for (int r = col + 1; r < kD; ++r) {
      // All ones in the lanes whose pivot is row r, by arithmetic: GCC 12 crashes (internal
      // compiler error) on the compare pivot == r here in the AVX-512 clone.
      const LaneInts offset = pivot - r, swap = ~((offset | -offset) >> 31);
      if (!any_lane(swap)) continue;  // the usual case: G is dominated by its diagonal
      for (int c = col; c < kD; ++c) {
        const Lanes top = A[col][c], other = A[r][c];
        A[col][c] = blend(swap, other, top);
        A[r][c] = blend(swap, top, other);
      }
      for (int c = 0; c < kColumns; ++c) {
        const Lanes top = B[col][c], other = B[r][c];
        B[col][c] = blend(swap, other, top);
        B[r][c] = blend(swap, top, other);
      }
    }
    const Lanes inverse_pivot = 1.0f / A[col][col];
    for (int r = col + 1; r < kD; ++r) {
      const Lanes factor = A[r][col] * inverse_pivot;
      for (int c = col + 1; c < kD; ++c) A[r][c] -= factor * A[col][c];
      for (int c = 0; c < kColumns; ++c) B[r][c] -= factor * B[col][c];
    }
  }
  for (int row = kD - 1; row >= 0; --row) {
    const Lanes inverse_diagonal = 1.0f / A[row][row];
    for (int c = 0; c < kColumns; ++c) {
      Lanes sum = B[row][c];
      for (int k = row + 1; k < kD; ++k) sum -= A[row][k] * B[k][c];
      B[row][c] = sum * inverse_diagonal;
    }
  }
}

// ---- one block -----------------------------------------------------------------------------------

/// Everything a block keeps between its steps (48 kB: one per work item, on its thread's stack).
struct BlockScratch {
  Lanes x[kD];
  Lanes G[kPairs], plus[kPairs], minus[kPairs];
  Lanes dG[kD][kPairs];  // ½ ∂_ρ G, symmetric in its entry: dG[ρ][pair(a, b)]
  Lanes A[kD][kD];
  Lanes S[kD][kPairs];   // ½ S[ρ][pair(μ, ν)], then the solution Γ[λ][pair(μ, ν)]
};

/// G at x and dG[ρ] = ½ ∂_ρ G = (G(x + e ê_ρ) - G(x - e ê_ρ)) / 4e, the shifted coordinate rounded to
/// fp32 as the reference's x[ρ] ± e. The ½ of Γ = ½ G⁻¹ S taken here: fp32(4e) = 2 fp32(2e), so
/// every value from here on is exactly half the unhalved one (the same roundings), and the solve
/// yields Γ itself.
PB_CHRISTOFFEL_ALWAYS_INLINE void metric_and_derivatives(const PreparedWeights& w, BlockScratch& s) {
  const float step = float(ref::kStep), four_steps = float(4 * ref::kStep);
  Preactivations base, shifted;
  preactivations_lanes(w, s.x, base);
  metric_lanes(w, base, s.G);
  for (int rho = 0; rho < kD; ++rho) {
    shifted_preactivations(w, base, rho, (s.x[rho] + step) - s.x[rho], shifted);
    metric_lanes(w, shifted, s.plus);
    shifted_preactivations(w, base, rho, (s.x[rho] - step) - s.x[rho], shifted);
    metric_lanes(w, shifted, s.minus);
    for (int p = 0; p < kPairs; ++p) s.dG[rho][p] = (s.plus[p] - s.minus[p]) / four_steps;
  }
}

/// ½ S[ρ][pair(μ, ν)] = ½ (∂_μ G_νρ + ∂_ν G_μρ - ∂_ρ G_μν) (symmetric in μ, ν), and A = G in full.
PB_CHRISTOFFEL_ALWAYS_INLINE void first_kind_lanes(BlockScratch& s) {
  for (int rho = 0; rho < kD; ++rho)
    for (int mu = 0; mu < kD; ++mu)
      for (int nu = mu; nu < kD; ++nu) {
        const int out = kPairOf.index[mu][nu];
        s.S[rho][out] = s.dG[mu][kPairOf.index[nu][rho]] + s.dG[nu][kPairOf.index[mu][rho]] - s.dG[rho][out];
      }
  for (int a = 0; a < kD; ++a)
    for (int b = 0; b < kD; ++b) s.A[a][b] = s.G[kPairOf.index[a][b]];
}
/// Writes Γ for the block's first `count` points, gamma [count][d³]: X[λ][pair(μ, ν)] to both (μ, ν)
/// and (ν, μ). Sixteen consecutive entries of Γ (two rows μ of one λ) at a time, one
/// vector per entry, transposed so that each point's sixteen are one vector store.
PB_CHRISTOFFEL_ALWAYS_INLINE void write_gamma(const Lanes (*X)[kPairs], int count, float* gamma) {
  constexpr int kChunks = ref::kGammaSize / kLanes;  // 32
  for (int chunk = 0; chunk < kChunks; ++chunk) {
    Lanes entries[kLanes];
    for (int j = 0; j < kLanes; ++j) {
      const int index = chunk * kLanes + j, lam = index / (kD * kD), mu = index / kD % kD, nu = index % kD;
      entries[j] = X[lam][kPairOf.index[mu][nu]];
    }
    transpose_lanes(entries);
    for (int l = 0; l < count; ++l)
      std::memcpy(gamma + int64_t(l) * ref::kGammaSize + chunk * kLanes, &entries[l], sizeof(Lanes));
  }
}

/// Γ [count][d³] for the count <= kLanes points x [count][d] (the lanes past count repeat the last
/// point and are not written).
PB_CHRISTOFFEL_ALWAYS_INLINE void christoffel_block(const PreparedWeights& w, const float* x, int count,
                                                    float* gamma, BlockScratch& s) {
  for (int l = 0; l < kLanes; ++l) {
    const int point = l < count ? l : count - 1;
    for (int c = 0; c < kD; ++c) s.x[c][l] = x[point * kD + c];
  }
  metric_and_derivatives(w, s);
  first_kind_lanes(s);
  solve_lanes<kPairs>(s.A, s.S);
  write_gamma(s.S, count, gamma);
}

/// Block `block` of the points x [points][d], written to its rows of gamma [points][d³]: what one
/// work item of the Kokkos kernel runs.
PB_CHRISTOFFEL_ALWAYS_INLINE void christoffel_block_of(const PreparedWeights& w, const float* x, float* gamma,
                                                       int64_t points, int64_t block, BlockScratch& s) {
  const int64_t first = first_point(block);
  christoffel_block(w, x + first * kD, block_count(points, block), gamma + first * ref::kGammaSize, s);
}

}  // namespace pb::geometry_kernels::christoffel_simd

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
