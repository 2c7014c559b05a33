// adaptive/dynamics_step, Kokkos' vectorized_cells (phase 6, optimized/adaptive/dynamics_step_simd_bodies.hpp)
// on the host, block by block as the Kokkos kernel runs it: the sigmoid and the variance against
// fp64, the packed weight layout, a whole block against the fp64 oracle at every cell count from 1
// to 16 for both forms of the input (u = x when I = H, u = W[:, :I] x otherwise; the small size has
// 10 cells: one partial block, hence the rest here), blocks run out of order writing only their own
// cells, the refusal of a hidden state a block cannot hold, and the phase through verify.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "optimized/adaptive/dynamics_step_simd_bodies.hpp"
#include "phasebench/check.hpp"
#include "process.hpp"
#include "reference/adaptive/dynamics_step.hpp"

// The header's functions take and return 64-byte vectors; they are always inlined, so the ABI GCC
// warns about at their call sites (such a vector passed without AVX-512) never applies.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pb {
namespace {

namespace ds = pb::adaptive_kernels::dynamics_simd;
namespace ref = pb::reference::adaptive;
using ds::kLanes;
using ds::Lanes;

// A model and its inputs in fp32 and fp64, drawn like the catalog's (suites/adaptive/dynamics_step.cpp):
// energies in bands that reach both clamps and the anxiety switch at 5, every phase (sleep too).
struct Problem {
  ref::Dimensions dims;
  ref::Parameters<float> parameters;
  ref::Parameters<double> parameters64;
  std::vector<float> x, h0, e0, a0;
  std::vector<int64_t> phase;

  Problem(ref::Dimensions d, unsigned seed) : dims(d) {
    std::mt19937 engine(seed);
    const auto uniform = [&](double low, double high) {
      return static_cast<float>(std::uniform_real_distribution<double>(low, high)(engine));
    };
    const int64_t C = d.cells(), H = d.hidden;
    const double linear = 1 / std::sqrt(double(H));
    for (int64_t i = 0; i < H * H; ++i) parameters.weight.push_back(uniform(-linear, linear));
    for (int64_t i = 0; i < H; ++i) {
      parameters.bias.push_back(uniform(-linear, linear));
      parameters.energy_weight.push_back(uniform(-1, 1));
    }
    for (int q = 0; q < ref::kPhases; ++q) parameters.phase_scale.push_back(uniform(0.5, 1.5));
    parameters.activity_weight = {uniform(-0.7, 0.7), uniform(-0.7, 0.7)};
    parameters.energy_bias = uniform(-0.5, 0.5), parameters.activity_bias = uniform(-0.7, 0.7);
    const double bands[5][2] = {{0, 2}, {2, 8}, {8, 46}, {8, 46}, {48, 50}};
    for (int64_t c = 0; c < C; ++c) {
      e0.push_back(uniform(bands[c % 5][0], bands[c % 5][1]));
      a0.push_back(uniform(0, 1));
      phase.push_back((c + seed) % ref::kPhases);
    }
    for (int64_t i = 0; i < C * d.input; ++i) x.push_back(uniform(-1, 1));
    for (int64_t i = 0; i < C * H; ++i) h0.push_back(uniform(-0.9, 0.9));
    const auto widen = [](const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); };
    parameters64 = {widen(parameters.weight),        widen(parameters.bias),
                    widen(parameters.phase_scale),   widen(parameters.energy_weight),
                    widen(parameters.activity_weight), parameters.energy_bias,
                    parameters.activity_bias};
  }

  /// The first `count` cells after every step, by the reference in Scalar.
  template <typename Scalar>
  ref::State<Scalar> reference(int64_t count) const {
    ref::Dimensions d = dims;
    d.batch = 1, d.nodes = count;
    const auto first = [](const std::vector<float>& v, int64_t n) { return std::vector<Scalar>(v.begin(), v.begin() + n); };
    ref::State<Scalar> state{first(h0, count * d.hidden), first(e0, count), first(a0, count)};
    const std::vector<int64_t> phases(phase.begin(), phase.begin() + count);
    if constexpr (std::is_same_v<Scalar, double>) {
      ref::dynamics(parameters64, d, first(x, count * d.input), phases, state);
    } else {
      ref::dynamics(parameters, d, first(x, count * d.input), phases, state);
    }
    return state;
  }

  ds::BlockInputs inputs() const { return {x.data(), h0.data(), e0.data(), a0.data(), phase.data()}; }
};

// The block functions, each in a function of its own (as in geometry_christoffel_simd_test: GCC 12
// fails on a test body that inlines two blocks).
__attribute__((noinline)) void run_block(const ds::Model& model, const ds::BlockInputs& in, int count, float* h,
                                         float* e, float* a) {
  ds::BlockScratch scratch;
  ds::dynamics_block(model, in, count, h, e, a, scratch);
}
__attribute__((noinline)) void run_block_of(const ds::Model& model, const ds::BlockInputs& in, float* h, float* e,
                                            float* a, int64_t block) {
  ds::BlockScratch scratch;
  ds::dynamics_block_of(model, in, h, e, a, block, scratch);
}

__attribute__((noinline)) void sigmoid_of(const Lanes& z, Lanes& out) { out = ds::sigmoid_lanes(z); }
__attribute__((noinline)) void variance_of(const Lanes* h, int64_t H, Lanes& out) { out = ds::variance_lanes(h, H); }

// Within 3 ulp of 1 / (1 + e^-z) in fp64 for |z| <= 87, on both branches (z >= 0 and below):
// exp_normal's ulp, the division's and the product's half ulps; past the clamp, 1
// above 87 and within 2e-38 of the true value below -87.
TEST(AdaptiveDynamicsVectorized, SigmoidWithinThreeUlpsOnBothBranches) {
  double worst_ulps = 0;
  for (double z = -120; z <= 120; z += 0.01) {
    Lanes in{}, out;
    for (int l = 0; l < kLanes; ++l) in[l] = static_cast<float>(z + l * 1e-3);
    sigmoid_of(in, out);
    for (int l = 0; l < kLanes; ++l) {
      const double want = 1 / (1 + std::exp(-double(in[l])));
      if (in[l] < -87.0f) {
        ASSERT_LE(std::fabs(out[l] - want), 2e-38) << in[l];
        continue;
      }
      const double ulp = double(std::nextafter(static_cast<float>(want), 2.0f)) - double(static_cast<float>(want));
      worst_ulps = std::max(worst_ulps, std::fabs(out[l] - want) / ulp);
    }
  }
  EXPECT_LE(worst_ulps, 3.0);
}

// The unbiased variance over H units within 4 ulp-sized steps of the fp64 one, for an H that is a
// multiple of the partial sums' count and for ones that leave a tail (6 is the small size's).
TEST(AdaptiveDynamicsVectorized, VarianceIsTheUnbiasedOne) {
  std::mt19937 engine(3);
  std::uniform_real_distribution<float> uniform(-1, 1);
  for (const int64_t H : {2, 6, 7, 64}) {
    std::vector<Lanes> h(H);
    for (Lanes& unit : h)
      for (int l = 0; l < kLanes; ++l) unit[l] = uniform(engine) * (1 + l);
    Lanes got;
    variance_of(h.data(), H, got);
    for (int l = 0; l < kLanes; ++l) {
      double mean = 0, squares = 0;
      for (int64_t k = 0; k < H; ++k) mean += h[k][l];
      mean /= double(H);
      for (int64_t k = 0; k < H; ++k) squares += (h[k][l] - mean) * (h[k][l] - mean);
      const double want = squares / double(H - 1);
      EXPECT_NEAR(got[l], want, 4e-7 * want) << "H = " << H << ", lane " << l;
    }
  }
}

// packed[j H + k G + g] = W[j + g, k] for the groups of kRowGroup rows and the single rows of H's
// tail: every weight once, at the place the drive reads it.
TEST(AdaptiveDynamicsVectorized, PackedWeightHoldsEveryWeightWhereTheDriveReadsIt) {
  for (const int64_t H : {6, 16, 19, 64}) {
    std::vector<float> W(H * H);
    for (int64_t i = 0; i < H * H; ++i) W[i] = float(i);
    const std::vector<float> packed = ds::pack_weight(W, H);
    ASSERT_EQ(packed.size(), W.size());
    EXPECT_EQ(std::set<float>(packed.begin(), packed.end()).size(), W.size()) << "H = " << H;
    int64_t rows = 0;
    for (int64_t j = 0; j < H; j += ds::row_group(H, j)) {
      const int64_t G = ds::row_group(H, j);
      EXPECT_EQ(G, j + ds::kRowGroup <= H ? ds::kRowGroup : 1) << "H = " << H << ", row " << j;
      for (int64_t g = 0; g < G; ++g, ++rows)
        for (int64_t k = 0; k < H; ++k)
          ASSERT_EQ(packed[j * H + k * G + g], W[(j + g) * H + k]) << "H = " << H << ", row " << j + g << ", k " << k;
    }
    EXPECT_EQ(rows, H);
  }
}

// The transposes move a row in chunks of 16 and the rest: every float of a row once, never past its
// end (a chunk too wide reads the next row, or past the array after the last; the block's results
// would not show it, since the units past the width are never used).
TEST(AdaptiveDynamicsVectorized, TransposeChunksCoverARowAndStopAtItsEnd) {
  for (const int64_t width : {1, 4, 6, 15, 16, 17, 20, 31, 32, 33, 64}) {
    int64_t covered = 0;
    for (int64_t first = 0; first < width; first += kLanes) {
      const int64_t chunk = ds::chunk_width(width, first);
      EXPECT_EQ(chunk, std::min<int64_t>(kLanes, width - first)) << "width " << width << ", from " << first;
      covered += chunk;
    }
    EXPECT_EQ(covered, width);
  }
}

// A block of `count` cells (1 to 16) after every step against the fp64 oracle: h, e and a within
// the fp32 reference's own error over the same cells times 1.5, plus 5e-7, four float ulps
// relative (2^-23 = 1.2e-7 each): over one to three cells the error is that of a few values, and
// the reference's may round a value or two closer by chance (docs/adaptive.md). A wrong term is
// orders larger.
// Nothing is written past the count.
// Both forms of the input: I = H (u = x, the default and large sizes) and I != H (u = W[:, :I] x,
// the small size), and widths of 16 and more that are not multiples of 16 (the transposes' tails).
TEST(AdaptiveDynamicsVectorized, BlockFollowsTheOracleAtEveryCellCount) {
  for (const ref::Dimensions dims :
       {ref::Dimensions{1, kLanes, 64, 64, 8}, ref::Dimensions{1, kLanes, 6, 4, 8}, ref::Dimensions{1, kLanes, 20, 17, 8}}) {
    SCOPED_TRACE("H = " + std::to_string(dims.hidden) + ", I = " + std::to_string(dims.input));
    const Problem problem(dims, 5);
    const std::vector<float> packed = ds::pack_weight(problem.parameters.weight, dims.hidden);
    const ds::Model model{&problem.parameters, packed.data(), dims};
    const float sentinel = 12345.0f;
    for (int count = 1; count <= kLanes; ++count) {
      std::vector<float> h((count + 1) * dims.hidden, sentinel), e(count + 1, sentinel), a(count + 1, sentinel);
      run_block(model, problem.inputs(), count, h.data(), e.data(), a.data());
      const ref::State<double> oracle = problem.reference<double>(count);
      const ref::State<float> serial = problem.reference<float>(count);
      const auto check = [&](const char* name, std::vector<float> got, const std::vector<double>& want,
                             const std::vector<float>& fp32) {
        got.resize(want.size());
        const double error = relative_l2_error(std::vector<double>(got.begin(), got.end()), want);
        const double serial_error = relative_l2_error(std::vector<double>(fp32.begin(), fp32.end()), want);
        EXPECT_LE(error, 1.5 * serial_error + 5e-7) << name << ", " << count << " cells (fp32 reference " << serial_error << ")";
      };
      check("h", h, oracle.hidden, serial.hidden);
      check("e", e, oracle.energy, serial.energy);
      check("a", a, oracle.activity, serial.activity);
      for (int64_t i = count * dims.hidden; i < (count + 1) * dims.hidden; ++i) ASSERT_EQ(h[i], sentinel);
      ASSERT_EQ(e[count], sentinel);
      ASSERT_EQ(a[count], sentinel);
    }
  }
}

// The cells in blocks as the Kokkos kernel's work items take them (dynamics_block_of, blocks in any
// order): 37 cells, two full blocks and a partial one, give each cell what a block of that cell
// alone does, bit for bit (the lanes never mix); verify's small size is one block.
TEST(AdaptiveDynamicsVectorized, EveryBlockWritesItsOwnCells) {
  const ref::Dimensions dims{1, 37, 64, 64, 8};
  const Problem problem(dims, 7);
  const std::vector<float> packed = ds::pack_weight(problem.parameters.weight, dims.hidden);
  const ds::Model model{&problem.parameters, packed.data(), dims};
  const int64_t C = dims.cells(), H = dims.hidden;
  std::vector<float> h((C + 1) * H, 12345.0f), e(C + 1, 12345.0f), a(C + 1, 12345.0f);
  ASSERT_EQ(ds::lanes::blocks(C), 3);
  for (const int64_t block : {2, 0, 1}) run_block_of(model, problem.inputs(), h.data(), e.data(), a.data(), block);
  for (int64_t c = 0; c < C; ++c) {
    const ds::BlockInputs alone_in{problem.x.data() + c * dims.input, problem.h0.data() + c * H,
                                   problem.e0.data() + c, problem.a0.data() + c, problem.phase.data() + c};
    std::vector<float> alone_h(H);
    float alone_e, alone_a;
    run_block(model, alone_in, 1, alone_h.data(), &alone_e, &alone_a);
    for (int64_t k = 0; k < H; ++k) ASSERT_EQ(h[c * H + k], alone_h[k]) << "cell " << c << ", unit " << k;
    ASSERT_EQ(e[c], alone_e) << "cell " << c;
    ASSERT_EQ(a[c], alone_a) << "cell " << c;
  }
  EXPECT_EQ(e[C], 12345.0f);
  EXPECT_EQ(a[C], 12345.0f);
  for (int64_t k = 0; k < H; ++k) EXPECT_EQ(h[C * H + k], 12345.0f);
}

TEST(AdaptiveDynamicsVectorized, AHiddenStateABlockCannotHoldIsRefused) {
  EXPECT_NO_THROW(ds::require_block_fits(2, 1));
  EXPECT_NO_THROW(ds::require_block_fits(ds::kMaxHidden, ds::kMaxHidden));
  EXPECT_THROW(ds::require_block_fits(ds::kMaxHidden + 1, 4), std::invalid_argument);
  EXPECT_THROW(ds::require_block_fits(1, 1), std::invalid_argument);
  EXPECT_THROW(ds::require_block_fits(6, 7), std::invalid_argument);
  EXPECT_THROW(ds::require_block_fits(6, 0), std::invalid_argument);
}

TEST(AdaptiveDynamicsVectorized, VerifyPassesOnTheSmallSizesSeeds) {
  if (!testing::backend_built("kokkos")) GTEST_SKIP() << "the kokkos backend is not built";
  const auto verified =
      testing::run_phasebench("verify --size small --seeds 3 --filter 'adaptive/dynamics_step/kokkos/vectorized_cells'");
  ASSERT_EQ(verified.exit_code, 0) << verified.output;
  if (verified.output.find("runs kernels on a device") != std::string::npos) GTEST_SKIP() << verified.output;
  EXPECT_NE(verified.output.find("verify: 3 passed, 0 failed"), std::string::npos) << verified.output;
}

}  // namespace
}  // namespace pb
