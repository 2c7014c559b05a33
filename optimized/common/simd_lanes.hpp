#pragma once
// The vectorized phases' lanes: a vector of kLanes floats (GCC's vector extension: one AVX-512
// register, two AVX2 ones, four SSE2 ones) that holds one value per point, cell or flow of a
// block, and what these phases do lane by lane: element-wise functions as branch-free expressions
// that vectorize, selects, a 16 x 16 transpose, and the blocks of kLanes that cover a range. Used
// by geometry's christoffel (christoffel_simd_bodies.hpp), adaptive's dynamics_step and
// energy_flow's aggregate; tests/geometry_christoffel_simd_test.cpp measures the functions
// against libm.

#include <cstdint>

#include "optimized/common/integer_math.hpp"  // ceil_div
#include "optimized/common/simd_math.hpp"     // exp_nonpositive_of, exp_normal_of

#if defined(__GNUC__)
#define PB_SIMD_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define PB_SIMD_ALWAYS_INLINE inline
#endif

// The functions below return vectors by value; they are always inlined into one ISA clone, so the
// ABI GCC warns about (a 64-byte vector returned without AVX-512) never applies.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pb::optimized::simd {

constexpr int kLanes = 16;  // values per vector
using Lanes = float __attribute__((vector_size(kLanes * sizeof(float))));       // one value per lane
using LaneInts = int32_t __attribute__((vector_size(kLanes * sizeof(int32_t))));  // masks, integers

// ---- element-wise functions that vectorize ----------------------------------------------------
// libm's erff, tanhf, expf and log1pf are one call per value (GCC vectorizes them only with
// -ffast-math), so these are written as expressions: polynomials, exp_nonpositive, selects.

PB_SIMD_ALWAYS_INLINE Lanes abs_lanes(const Lanes& x) { return (Lanes)((LaneInts)x & 0x7fffffff); }

PB_SIMD_ALWAYS_INLINE Lanes exp_nonpositive_lanes(const Lanes& x) {
  return exp_nonpositive_of<Lanes, LaneInts>(x);
}

/// e^x for -87 <= x <= 0 (a normal result: one scale factor where exp_nonpositive_lanes takes two).
PB_SIMD_ALWAYS_INLINE Lanes exp_normal_lanes(const Lanes& x) {
  return exp_normal_of<Lanes, LaneInts>(x);
}

/// GELU(v) = v Φ(v), Φ the standard normal CDF: ref::gelu's ½ v (1 + erf(v / √2)), written through
/// the normal tail ½ erfc(x) = ½ e^{-x²} erfcx(x), x = |v| / √2, so that no branch of erf is needed:
/// Φ(v) is the tail for v < 0 and 1 - tail otherwise (the tail <= ½: no cancellation, where 1 + erf
/// cancels for negative v). erfcx(x) = e^{x²} erfc(x) is smooth and slowly varying; a polynomial of
/// degree 8 in u = (2 - 2x) / (2 + x) (u = 3t - 2, t = 2 / (2 + x)) stays within 1.4e-9 of it times
/// e^{-x²} on 0 <= x <= 4: the Chebyshev interpolant in t on [1/3, 1], double precision, rounded to
/// float. Beyond x = 8 the tail is below 1e-28 and x is clamped there (exp_nonpositive's domain).
/// Within 1 ulp + 3.3e-8 of the fp64 formula on [-12, 12], closer than the fp32 formula with erff
/// (1 ulp + 8.3e-8): measured by the test.
PB_SIMD_ALWAYS_INLINE Lanes gelu_lanes(const Lanes& v) {
  const Lanes x0 = abs_lanes(v) * 0.70710678118654752440f;
  const Lanes x = x0 < 8.0f ? x0 : 8.0f;
  const Lanes u = (2.0f - 2.0f * x) / (2.0f + x);
  Lanes q = u * -8.368687563474629e-06f + 3.317087822897314e-05f;
  q = q * u + 9.92472938590912e-05f;
  q = q * u - 0.0008601265419906972f;
  q = q * u - 0.0016017067786932633f;
  q = q * u + 0.022509182783345752f;
  q = q * u + 0.14242697830208706f;
  q = q * u + 0.4098180471677803f;
  q = q * u + 0.427583576155807f;
  const Lanes tail = 0.5f * exp_normal_lanes(-(x * x)) * q;
  return v * (v < 0 ? tail : 1.0f - tail);
}

/// tanh(y) = y N(y²) / D(y²), the 13th convergent of Lambert's continued fraction tanh y = y / (1 +
/// y² / (3 + y² / (5 + ...))), y clamped to ±9 (tanh 9 = 1 - 3e-8, 1 in fp32). Every coefficient is
/// positive, so neither polynomial cancels. Within 1.6e-7 absolute for |y| <= 1 and 3.5e-7 beyond
/// (libm's tanhf: 1.0e-7; it may pass ±1 by an ulp near the clamp), which is what h = 0.1 tanh(.),
/// added to entries of size ~1, needs; the test measures it. 15 multiply-adds and a division, where
/// e^{-2|y|} by exp_nonpositive took ~20 operations more.
PB_SIMD_ALWAYS_INLINE Lanes tanh_lanes(const Lanes& y) {
  const Lanes clamped = y < -9.0f ? -9.0f : (y > 9.0f ? 9.0f : y);
  const Lanes t = clamped * clamped;
  Lanes numerator = t * 4.918999383468789e-13f + 8.696790909972818e-10f;
  numerator = numerator * t + 4.0896659254147175e-07f;
  numerator = numerator * t + 7.361398665746492e-05f;
  numerator = numerator * t + 0.005432098765432099f;
  numerator = numerator * t + 0.14814814814814814f;
  numerator = numerator * t + 1.0f;
  Lanes denominator = t * 4.684761317589322e-15f + 2.55787967940377e-11f;
  denominator = denominator * t + 2.1524557502182723e-08f;
  denominator = denominator * t + 6.134498888122077e-06f;
  denominator = denominator * t + 0.0007085346215780998f;
  denominator = denominator * t + 0.03259259259259259f;
  denominator = denominator * t + 0.48148148148148145f;
  denominator = denominator * t + 1.0f;
  return clamped * numerator / denominator;
}

/// log(1 + t) for 0 <= t <= 1: 1 + t rounds to u = 2^k m with m in [√½, √2), log m = f P(f) with
/// f = m - 1 (exact), P ≈ log(1 + f) / f of degree 9 (the Chebyshev interpolant on [√½ - 1, √2 - 1],
/// within 6e-9 relative), and the rounding of 1 + t restored by (t - (u - 1)) / u. The test measures
/// it within 1.7 ulp of log1p (a form by atanh's series, (m - 1) / (m + 1), was 3.2 ulp off: R is
/// squared into G, and that error showed in Γ as 25% more than the fp32 reference's).
PB_SIMD_ALWAYS_INLINE Lanes log1p_unit_lanes(const Lanes& t) {
  const Lanes u = 1.0f + t;
  const LaneInts halve = u > 1.41421356f;
  const Lanes f = (halve ? 0.5f * u : u) - 1.0f;
  Lanes p = f * -0.07451185990973146f + 0.12806610315738393f;
  p = p * f - 0.1326603139578843f;
  p = p * f + 0.14199650117239643f;
  p = p * f - 0.16608369412356913f;
  p = p * f + 0.20000939439509846f;
  p = p * f - 0.2500157909919691f;
  p = p * f + 0.33333345349813037f;
  p = p * f - 0.4999998849614274f;
  p = p * f + 0.999999999383256f;
  const Lanes correction = (t - (u - 1.0f)) / u;
  const Lanes log_two = halve ? Lanes{} + 0.693147180559945f : Lanes{};
  return log_two + (f * p + correction);
}

/// softplus(z) = max(z, 0) + log(1 + e^{-|z|}): the reference's log1p(e^z) for z <= 20 and z above
/// (where the two differ by less than e^-20 relative, below fp32's resolution).
PB_SIMD_ALWAYS_INLINE Lanes softplus_lanes(const Lanes& z) {
  const Lanes positive = z > 0 ? z : 0.0f;
  return positive + log1p_unit_lanes(exp_nonpositive_lanes(-abs_lanes(z)));
}

// ---- selects and layout ------------------------------------------------------------------------

/// Whether any lane of a mask (all ones or all zeros per lane) is set.
PB_SIMD_ALWAYS_INLINE bool any_lane(const LaneInts& mask) {
  int32_t bits = 0;
  for (int l = 0; l < kLanes; ++l) bits |= mask[l];
  return bits != 0;
}

/// mask ? yes : no, lane by lane, for a mask of all ones or all zeros in each lane.
PB_SIMD_ALWAYS_INLINE Lanes blend(const LaneInts& mask, const Lanes& yes, const Lanes& no) {
  return (Lanes)(((LaneInts)yes & mask) | ((LaneInts)no & ~mask));
}


/// Transposes the 16 x 16 floats rows[i][j] in place (rows[i][j] becomes rows[j][i]): four rounds
/// that swap the off-diagonal blocks of size 8, 4, 2, 1 between rows i and i + size by two shuffles.
PB_SIMD_ALWAYS_INLINE void transpose_lanes(Lanes* rows) {
  static_assert(kLanes == 16, "the rounds below transpose 16 x 16");
  const auto round = [rows](int size, const LaneInts& low_mask, const LaneInts& high_mask) {
    for (int i = 0; i < kLanes; ++i)
      if ((i & size) == 0) {
        const Lanes low = __builtin_shuffle(rows[i], rows[i + size], low_mask);
        const Lanes high = __builtin_shuffle(rows[i], rows[i + size], high_mask);
        rows[i] = low, rows[i + size] = high;
      }
  };
  // Lane j of the new row i: row i's lane j where bit `size` of j is clear, else row (i + size)'s
  // lane j - size; of the new row i + size: row i's lane j + size, else row (i + size)'s lane j.
  round(8, LaneInts{0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
        LaneInts{8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31});
  round(4, LaneInts{0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
        LaneInts{4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31});
  round(2, LaneInts{0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
        LaneInts{2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31});
  round(1, LaneInts{0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30},
        LaneInts{1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31});
}

// ---- blocks --------------------------------------------------------------------------------------

/// How many blocks of kLanes cover `points` things (the last one partial).
inline int64_t blocks(int64_t points) { return ceil_div(points, kLanes); }

/// The first thing of block `block`.
inline int64_t first_point(int64_t block) { return block * kLanes; }

/// How many of the `points` things block `block` holds: kLanes, or the rest in the last block.
inline int block_count(int64_t points, int64_t block) {
  const int64_t left = points - first_point(block);
  return static_cast<int>(left < kLanes ? left : kLanes);
}

}  // namespace pb::optimized::simd

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
