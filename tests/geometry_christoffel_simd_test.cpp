// geometry/christoffel, Kokkos' vectorized_points (phase 6, optimized/geometry/christoffel_simd_bodies.hpp)
// on the host, block by block as the Kokkos kernel runs it: the element-wise functions against
// fp64 (GELU, tanh, softplus, the one-factor exponential against the two-factor one), the packed
// symmetric indexing, the 16 x 16 transpose, the per-lane pivoting solve against the reference's
// solve_in_place with lanes that pivot differently, a whole block against the fp64 oracle at every
// point count from 1 to 16 (the small size has 6 points: one partial block, hence the rest here),
// and the phase through verify on the small size's seeds.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "optimized/geometry/christoffel_simd_bodies.hpp"
#include "phasebench/check.hpp"
#include "process.hpp"
#include "reference/geometry/christoffel.hpp"

// The header's functions take and return 64-byte vectors; they are always inlined, so the ABI GCC
// warns about at their call sites (such a vector passed without AVX-512) never applies.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pb {
namespace {

namespace cs = pb::geometry_kernels::christoffel_simd;
namespace ref = pb::reference::geometry;
using cs::kLanes;
using cs::Lanes;

/// The distance between `value` (as a float) and the next float away from zero.
double float_ulp(double value) {
  const float f = std::fabs(static_cast<float>(value));
  return double(std::nextafter(f, INFINITY)) - double(f);
}

/// f(lanes, result) applied to every value of `inputs`, kLanes at a time (the tail lanes repeat the
/// last value). The result comes back through a reference: a 64-byte vector returned by value from
/// a function that is not inlined is what GCC's ABI warning is about.
template <typename Function>
std::vector<float> lanewise(const std::vector<float>& inputs, Function f) {
  std::vector<float> out(inputs.size());
  for (size_t first = 0; first < inputs.size(); first += kLanes) {
    Lanes lanes{};
    for (int l = 0; l < kLanes; ++l) lanes[l] = inputs[std::min(first + l, inputs.size() - 1)];
    Lanes result;
    f(lanes, result);
    for (int l = 0; l < kLanes && first + l < inputs.size(); ++l) out[first + l] = result[l];
  }
  return out;
}

std::vector<float> grid(double low, double high, double step) {
  std::vector<float> values;
  for (double v = low; v <= high; v += step) values.push_back(static_cast<float>(v));
  return values;
}

// GELU by the normal tail: within 1 ulp + 4e-8 of the fp64 formula ½ v (1 + erf(v/√2)) on [-12, 12]
// (the excess is the tail's few ulp for negative v, absolute errors far below the 6e-8 resolution
// of the O(1) sums a GELU feeds), and closer than the fp32 formula with libm's erff, whose 1 + erf
// cancels for negative v. The errors each build reaches: docs/geometry.md.
TEST(GeometryChristoffelVectorized, GeluWithinAnUlpAndAFractionOfTheFp64Formula) {
  const std::vector<float> v = grid(-12, 12, 1.7e-4);
  const std::vector<float> mine = lanewise(v, [](const Lanes& in, Lanes& out) { out = cs::gelu_lanes(in); });
  double worst_excess = 0, worst_libm_excess = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    // erfc: 1 + erf in fp64 cancels for negative v as 1 + erf in fp32 does, only later.
    const double exact = 0.5 * double(v[i]) * std::erfc(-double(v[i]) / std::sqrt(2.0));
    const float libm = 0.5f * v[i] * (1.0f + std::erf(v[i] * 0.70710678118654752440f));
    worst_excess = std::max(worst_excess, std::fabs(mine[i] - exact) - float_ulp(exact));
    worst_libm_excess = std::max(worst_libm_excess, std::fabs(libm - exact) - float_ulp(exact));
  }
  EXPECT_LE(worst_excess, 4e-8);
  EXPECT_LT(worst_excess, worst_libm_excess);
  EXPECT_EQ(lanewise({0.0f}, [](const Lanes& in, Lanes& out) { out = cs::gelu_lanes(in); })[0], 0.0f);
}

// tanh by Lambert's continued fraction: within 1.6e-7 absolute for |y| <= 1 and 3.5e-7 beyond
// (docs/geometry.md), also near ±1, where it may pass 1 by an ulp or two (harmless in
// h = 0.1 tanh, added to entries of size ~1); odd.
TEST(GeometryChristoffelVectorized, TanhWithinItsBoundsAndOdd) {
  const std::vector<float> y = grid(-14, 14, 1.3e-4);
  const std::vector<float> mine = lanewise(y, [](const Lanes& in, Lanes& out) { out = cs::tanh_lanes(in); });
  std::vector<float> negated(y.size());
  for (size_t i = 0; i < y.size(); ++i) negated[i] = -y[i];
  const std::vector<float> of_negated =
      lanewise(negated, [](const Lanes& in, Lanes& out) { out = cs::tanh_lanes(in); });
  double worst_near = 0, worst_far = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    double& worst = std::fabs(y[i]) <= 1 ? worst_near : worst_far;
    worst = std::max(worst, std::fabs(mine[i] - std::tanh(double(y[i]))));
    ASSERT_EQ(of_negated[i], -mine[i]) << "y " << y[i];
  }
  EXPECT_LE(worst_near, 1.6e-7);
  EXPECT_LE(worst_far, 3.5e-7);
  EXPECT_GT(worst_far, 0.0);  // the grid reaches where the fraction is least accurate
}

// softplus: within 2.2 ulp of log(1 + e^z) in fp64 (docs/geometry.md), z itself above 20
// as the reference's threshold (there the two differ by e^-20 relative, below fp32's resolution).
// R is squared into G: a log1p 3 ulp off showed in Γ as 25% more error than the fp32 reference's.
TEST(GeometryChristoffelVectorized, SoftplusWithinTwoUlps) {
  const std::vector<float> z = grid(-40, 40, 1.1e-4);
  const std::vector<float> mine = lanewise(z, [](const Lanes& in, Lanes& out) { out = cs::softplus_lanes(in); });
  double worst_ulps = 0;
  for (size_t i = 0; i < z.size(); ++i) {
    if (z[i] > ref::kSoftplusThreshold) {
      ASSERT_EQ(mine[i], z[i]);
      continue;
    }
    const double exact = std::log1p(std::exp(double(z[i])));
    worst_ulps = std::max(worst_ulps, std::fabs(mine[i] - exact) / float_ulp(exact));
  }
  EXPECT_LE(worst_ulps, 2.2);
  // log(1 + t) itself on [0, 1], where its two cases (u above or below √2) meet: within 1.7 ulp.
  const std::vector<float> t = grid(0, 1, 3e-6);
  const std::vector<float> log1p = lanewise(t, [](const Lanes& in, Lanes& out) { out = cs::log1p_unit_lanes(in); });
  double worst_log_ulps = 0;
  for (size_t i = 1; i < t.size(); ++i) {
    const double exact = std::log1p(double(t[i]));
    worst_log_ulps = std::max(worst_log_ulps, std::fabs(log1p[i] - exact) / float_ulp(exact));
  }
  EXPECT_LE(worst_log_ulps, 1.7);
  EXPECT_EQ(log1p[0], 0.0f);
}

// The one-factor exponential GELU's tail uses gives exp_nonpositive's floats on its domain
// [-87, 0] (every 61st float, and every float of [-87, -86], where results near the smallest
// normal float).
TEST(GeometryChristoffelVectorized, OneFactorExponentialIsTheTwoFactorOneOnItsDomain) {
  const auto bits_of = [](float x) {
    uint32_t bits;
    std::memcpy(&bits, &x, sizeof x);
    return bits;
  };
  int64_t differ = 0, compared = 0;
  float first_differing = 0;
  const auto compare = [&](uint32_t bits) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    const float one = optimized::simd::exp_normal_of<float, int32_t>(x);
    const float two = optimized::simd::exp_nonpositive(x);
    if (bits_of(one) != bits_of(two) && differ++ == 0) first_differing = x;
    ++compared;
  };
  for (uint32_t bits = bits_of(-0.0f); bits <= bits_of(-87.0f); bits += 61) compare(bits);
  for (uint32_t bits = bits_of(-86.0f); bits <= bits_of(-87.0f); ++bits) compare(bits);
  EXPECT_EQ(differ, 0) << "first at x = " << first_differing << " (" << compared << " compared)";
  EXPECT_GT(compared, 10000000);
}

// pair_index and its table: the 36 entries a <= b numbered 0..35 row by row, (b, a) the same entry.
TEST(GeometryChristoffelVectorized, PackedSymmetricIndexCoversTheUpperEntriesOnce) {
  std::set<int> seen;
  int expected = 0;
  for (int a = 0; a < cs::kD; ++a)
    for (int b = 0; b < cs::kD; ++b) {
      EXPECT_EQ(cs::kPairOf.index[a][b], cs::pair_index(a, b));
      EXPECT_EQ(cs::pair_index(a, b), cs::pair_index(b, a));
      if (a <= b) {
        EXPECT_EQ(cs::pair_index(a, b), expected++) << a << "," << b;
        seen.insert(cs::pair_index(a, b));
      }
    }
  EXPECT_EQ(seen.size(), size_t(cs::kPairs));
  EXPECT_EQ(*seen.rbegin(), cs::kPairs - 1);
}

// The blocks the Kokkos kernel runs (one per work item): every point in exactly one block, in order,
// full blocks of 16 and a partial last one. verify's sizes have 6 points (one partial block) and
// multiples of 16 (no partial block), so the counts between are checked here.
TEST(GeometryChristoffelVectorized, BlocksCoverEveryPointOnce) {
  for (const int64_t points : {1, 6, 15, 16, 17, 18, 31, 32, 33, 2048, 2049, 16383}) {
    int64_t next = 0;
    for (int64_t block = 0; block < cs::blocks(points); ++block) {
      ASSERT_EQ(cs::first_point(block), next) << points << " points, block " << block;
      const int count = cs::block_count(points, block);
      ASSERT_GE(count, 1);
      ASSERT_LE(count, kLanes);
      if (block + 1 < cs::blocks(points)) ASSERT_EQ(count, kLanes) << points << " points, block " << block;
      next += count;
    }
    EXPECT_EQ(next, points);
  }
}

TEST(GeometryChristoffelVectorized, TransposeSwapsRowsAndLanes) {
  Lanes rows[kLanes];
  for (int i = 0; i < kLanes; ++i)
    for (int j = 0; j < kLanes; ++j) rows[i][j] = float(i * 100 + j);
  cs::transpose_lanes(rows);
  for (int i = 0; i < kLanes; ++i)
    for (int j = 0; j < kLanes; ++j) ASSERT_EQ(rows[i][j], float(j * 100 + i)) << i << "," << j;
}

/// Lane l's [n, n] matrix and [n, m] right-hand sides as the reference's row-major arrays.
struct LaneSystem {
  std::vector<double> A, B;
};

// The solve in every lane against the reference's solve_in_place (in fp64, on the same floats):
// lanes whose matrices are dominated by their diagonal (no swaps, as G), lanes with a zero or
// small leading entry (a swap at the first step), a permuted diagonal (a swap at several steps),
// each lane's pivot rows its own; and a block where no lane swaps (the skipped blends).
TEST(GeometryChristoffelVectorized, SolvePivotsEachLaneAsTheReference) {
  constexpr int n = cs::kD, m = 5;
  for (const bool any_pivoting : {true, false}) {
    std::mt19937 engine(any_pivoting ? 7 : 8);
    std::uniform_real_distribution<float> uniform(-1, 1);
    Lanes A[n][n], B[n][m];
    std::vector<LaneSystem> systems(kLanes);
    for (int l = 0; l < kLanes; ++l) {
      const int kind = any_pivoting ? l % 4 : 0;
      for (int r = 0; r < n; ++r)
        for (int c = 0; c < n; ++c) {
          float value = uniform(engine);
          if (kind == 0 && r == c) value += 8;                  // dominant diagonal: no swaps
          if (kind == 1 && r == 0 && c == 0) value = 0;          // a swap at the first step
          if (kind == 2 && c == (r + 3) % n) value += 8;         // the dominant entries permuted
          if (kind == 3 && r == c) value *= 1e-3f;               // small pivots everywhere
          A[r][c][l] = value;
          systems[l].A.push_back(value);
        }
      for (int r = 0; r < n; ++r)
        for (int c = 0; c < m; ++c) {
          B[r][c][l] = uniform(engine);
          systems[l].B.push_back(B[r][c][l]);
        }
    }
    cs::solve_lanes<m>(A, B);
    for (int l = 0; l < kLanes; ++l) {
      ref::solve_in_place(systems[l].A.data(), systems[l].B.data(), n, m);
      std::vector<double> produced;
      for (int r = 0; r < n; ++r)
        for (int c = 0; c < m; ++c) produced.push_back(B[r][c][l]);
      EXPECT_LE(relative_l2_error(produced, systems[l].B), 1e-4) << "lane " << l << (any_pivoting ? "" : " (no swaps)");
    }
  }
}

/// The metric network with weights drawn as the workload draws them (Linear layers U(±1/√fan_in),
/// L = I + 0.1 N(0,1)), in fp32 and the same values in fp64: R.w1, R.b1, R.w2, R.b2, H.w1, H.b1,
/// H.w2, H.b2, L.
struct Network {
  explicit Network(uint32_t seed) {
    std::mt19937 engine(seed);
    const auto layer = [&](int in, int out) {
      std::uniform_real_distribution<float> uniform(-1 / std::sqrt(float(in)), 1 / std::sqrt(float(in)));
      std::vector<float> w(in * out), b(out);
      for (float& value : w) value = uniform(engine);
      for (float& value : b) value = uniform(engine);
      floats.push_back(w), floats.push_back(b);
    };
    layer(ref::kDim, ref::kDim);
    layer(ref::kDim, 1);
    layer(ref::kDim, ref::kHidden);
    layer(ref::kHidden, ref::kMetricSize);
    std::normal_distribution<float> normal(0, 0.1f);
    std::vector<float> L(ref::kMetricSize);
    for (int i = 0; i < ref::kMetricSize; ++i) L[i] = normal(engine) + (i / ref::kDim == i % ref::kDim ? 1 : 0);
    floats.push_back(L);
    for (const auto& values : floats) doubles.emplace_back(values.begin(), values.end());
  }
  template <typename T>
  static ref::MetricWeights<T> view(const std::vector<std::vector<T>>& p) {
    return {{p[0].data(), p[1].data(), p[2].data(), p[3].data()},
            p[4].data(), p[5].data(), p[6].data(), p[7].data(), p[8].data()};
  }
  std::vector<std::vector<float>> floats;
  std::vector<std::vector<double>> doubles;
};

// The block functions, each in a function of its own: GCC 12 fails (internal compiler error in
// connect_traces) on a test body that inlines two of them.
__attribute__((noinline)) void run_block(const cs::PreparedWeights& w, const float* x, int count, float* gamma) {
  cs::BlockScratch scratch;
  cs::christoffel_block(w, x, count, gamma, scratch);
}
__attribute__((noinline)) void run_block_of(const cs::PreparedWeights& w, const float* x, float* gamma, int64_t points,
                                            int64_t block) {
  cs::BlockScratch scratch;
  cs::christoffel_block_of(w, x, gamma, points, block, scratch);
}

// A block of `count` points (1 to 16) against the fp64 oracle: Γ within the fp32 reference's own
// error over the same points times 1.5 (fp32 central differences leave 2-3 digits; the block's
// other order of summation lands near the reference's), every (μ, ν) and (ν, μ) equal, and nothing
// written past the count.
TEST(GeometryChristoffelVectorized, BlockFollowsTheOracleAtEveryPointCount) {
  const Network network(11);
  const ref::MetricWeights<float> weights = Network::view(network.floats);
  const ref::MetricWeights<double> weights64 = Network::view(network.doubles);
  const cs::PreparedWeights prepared = cs::prepare(weights);
  std::mt19937 engine(12);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> x(kLanes * ref::kDim);
  for (float& value : x) value = uniform(engine);
  for (int count = 1; count <= kLanes; ++count) {
    std::vector<float> gamma((count + 1) * ref::kGammaSize, 12345.0f);
    run_block(prepared, x.data(), count, gamma.data());
    std::vector<double> produced, oracle, serial;
    for (int p = 0; p < count; ++p) {
      double want[ref::kGammaSize];
      float fp32[ref::kGammaSize];
      const std::vector<double> point(x.begin() + p * ref::kDim, x.begin() + (p + 1) * ref::kDim);
      ref::christoffel_point<double>(weights64, point.data(), want);
      ref::christoffel_point<float>(weights, x.data() + p * ref::kDim, fp32);
      const float* got = gamma.data() + p * ref::kGammaSize;
      produced.insert(produced.end(), got, got + ref::kGammaSize);
      oracle.insert(oracle.end(), want, want + ref::kGammaSize);
      serial.insert(serial.end(), fp32, fp32 + ref::kGammaSize);
      for (int lam = 0; lam < ref::kDim; ++lam)
        for (int mu = 0; mu < ref::kDim; ++mu)
          for (int nu = 0; nu < ref::kDim; ++nu)
            ASSERT_EQ(got[(lam * ref::kDim + mu) * ref::kDim + nu], got[(lam * ref::kDim + nu) * ref::kDim + mu]);
    }
    const double error = relative_l2_error(produced, oracle), serial_error = relative_l2_error(serial, oracle);
    EXPECT_LE(error, 1.5 * serial_error) << count << " points (fp32 reference: " << serial_error << ")";
    EXPECT_GT(serial_error, 0.0);
    for (int i = count * ref::kGammaSize; i < (count + 1) * ref::kGammaSize; ++i)
      ASSERT_EQ(gamma[i], 12345.0f) << "written past " << count << " points";
  }
}

// The points in blocks as the Kokkos kernel's work items take them (christoffel_block_of, blocks in
// any order): 37 points, two full blocks and a partial one, give each point's Γ as a block of that
// point alone does; verify's small size is one block.
TEST(GeometryChristoffelVectorized, EveryBlockWritesItsOwnPoints) {
  const Network network(13);
  const cs::PreparedWeights prepared = cs::prepare(Network::view(network.floats));
  constexpr int64_t points = 37;
  std::mt19937 engine(14);
  std::uniform_real_distribution<float> uniform(-1, 1);
  std::vector<float> x(points * ref::kDim);
  for (float& value : x) value = uniform(engine);
  std::vector<float> gamma((points + 1) * ref::kGammaSize, 12345.0f);
  ASSERT_EQ(cs::blocks(points), 3);
  for (const int64_t block : {2, 0, 1}) run_block_of(prepared, x.data(), gamma.data(), points, block);
  for (int64_t p = 0; p < points; ++p) {
    float alone[ref::kGammaSize];
    run_block(prepared, x.data() + p * ref::kDim, 1, alone);
    for (int i = 0; i < ref::kGammaSize; ++i)
      ASSERT_EQ(gamma[p * ref::kGammaSize + i], alone[i]) << "point " << p << ", entry " << i;
  }
  for (int i = 0; i < ref::kGammaSize; ++i) ASSERT_EQ(gamma[points * ref::kGammaSize + i], 12345.0f);
}

TEST(GeometryChristoffelVectorized, VerifyPassesOnTheSmallSizesSeeds) {
  if (!testing::backend_built("kokkos")) GTEST_SKIP() << "the kokkos backend is not built";
  const auto verified =
      testing::run_phasebench("verify --size small --seeds 3 --filter 'geometry/christoffel/kokkos/vectorized_points'");
  ASSERT_EQ(verified.exit_code, 0) << verified.output;
  if (verified.output.find("runs kernels on a device") != std::string::npos) GTEST_SKIP() << verified.output;
  EXPECT_NE(verified.output.find("verify: 3 passed, 0 failed"), std::string::npos) << verified.output;
}

}  // namespace
}  // namespace pb
