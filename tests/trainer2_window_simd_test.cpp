// trainer2's vectorized_window (phase 13, optimized/trainer2/window_simd_bodies.hpp) on the host,
// block by block as the Kokkos kernel runs it, against the reference's Störmer–Verlet steps in
// fp64, at channel counts verify's sizes do not all have: one ragged block (18, the small size),
// a full block and a ragged one (50), two full blocks (64); and a window of no steps. verify
// checks the variant at the workload's sizes; this, every block and every step's Σ |F_t|.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "optimized/trainer2/window_simd_bodies.hpp"
#include "phasebench/check.hpp"
#include "reference/trainer2/trainer2.hpp"

namespace pb {
namespace {

namespace ws = pb::trainer2_kernels::window_simd;
namespace ref = pb::reference::trainer2;

double relative_l2(const std::vector<float>& got, const std::vector<double>& want) {
  return relative_l2_error(std::vector<double>(got.begin(), got.end()), want);
}

struct Window {
  ws::Grid grid;
  int64_t steps;
  std::vector<float> F0, F_eq;
};

Window random_window(const ws::Grid& grid, int64_t steps) {
  std::mt19937 engine(static_cast<uint32_t>(grid.channels * 100 + steps));
  std::normal_distribution<float> normal(0, 0.3f);
  Window window{grid, steps, {}, {}};
  for (int64_t i = 0; i < grid.sites() * grid.channels; ++i) window.F0.push_back(normal(engine));
  for (int64_t i = 0; i < grid.sites() * grid.channels; ++i) window.F_eq.push_back(normal(engine));
  return window;
}

/// The reference in fp64: F and P after the window, and Σ |F_t| over each block's complex values.
struct Expected {
  std::vector<double> F, P, block_modulus;  // block_modulus [steps, blocks]
};

Expected reference_window(const Window& window) {
  const ws::Grid& grid = window.grid;
  ref::WindowDims dims{};
  dims.nx = grid.nx, dims.ny = grid.ny, dims.channels = grid.channels, dims.steps = window.steps;
  Expected out{{window.F0.begin(), window.F0.end()}, std::vector<double>(window.F0.size(), 0.0), {}};
  const std::vector<double> F_eq(window.F_eq.begin(), window.F_eq.end());
  const int64_t blocks = ws::blocks(grid);
  for (int64_t t = 0; t < window.steps; ++t) {
    for (int64_t block = 0; block < blocks; ++block) {
      double sum = 0;
      for (int64_t site = 0; site < grid.sites(); ++site)
        for (int64_t c = block * ws::kBlock; c < std::min(grid.channels, (block + 1) * ws::kBlock); c += 2)
          sum += ref::complex_modulus(&out.F[site * grid.channels + c]);
      out.block_modulus.push_back(sum);
    }
    ref::field_step(dims, out.F, out.P, F_eq);
  }
  return out;
}

struct Result {
  std::vector<float> F, P, partial;
  std::vector<float> scratch;  // every block's share, NaN where no block wrote
};

/// The blocks of the window in the order given, on one scratch of blocks(grid) shares.
Result run_blocks(const Window& window, const std::vector<int64_t>& order) {
  const ws::Grid& grid = window.grid;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const size_t size = window.F0.size();
  Result result{std::vector<float>(size, nan), std::vector<float>(size, nan),
                std::vector<float>(window.steps * ws::blocks(grid), nan),
                std::vector<float>(ws::blocks(grid) * ws::scratch_floats(grid), nan)};
  for (const int64_t block : order)
    ws::run_block(grid, window.steps, window.F0.data(), window.F_eq.data(), result.F.data(), result.P.data(),
                  result.partial.data(), block, result.scratch.data());
  return result;
}

std::vector<int64_t> all_blocks(const ws::Grid& grid) {
  std::vector<int64_t> order;
  for (int64_t block = ws::blocks(grid) - 1; block >= 0; --block) order.push_back(block);  // any order
  return order;
}

TEST(Trainer2WindowSimd, EveryBlockFollowsTheReferenceStepsAndSumsItsModuli) {
  // 18 channels: the small size (one ragged block); 50: a full block and a ragged one; 64: two full.
  for (const int64_t channels : {int64_t{18}, int64_t{50}, int64_t{64}})
    // Steps run in pairs: one step (a single step only), five (two pairs and a single), six (pairs).
    for (const int64_t steps : {int64_t{1}, int64_t{5}, int64_t{6}}) {
      SCOPED_TRACE("channels " + std::to_string(channels) + ", steps " + std::to_string(steps));
      const Window window = random_window({5, 4, channels}, steps);
      const Expected want = reference_window(window);
      const Result got = run_blocks(window, all_blocks(window.grid));
      // fp32 steps against fp64 ones over at most 6 steps of a 5 x 4 grid (docs/trainer2.md); 4e-7
      // leaves room for FMA contraction and other compilers,
      // and is what a neighbour read from the wrong buffer (a row past the grid, F_t overwritten
      // by F_{t+1}) exceeds.
      EXPECT_LT(relative_l2(got.F, want.F), 4e-7);
      EXPECT_LT(relative_l2(got.P, want.P), 4e-7);
      ASSERT_EQ(got.partial.size(), want.block_modulus.size());
      for (size_t i = 0; i < want.block_modulus.size(); ++i)
        EXPECT_NEAR(got.partial[i], want.block_modulus[i], 1e-5 * want.block_modulus[i]) << "step x block " << i;
    }
}

TEST(Trainer2WindowSimd, ABlockWritesOnlyItsOwnChannels) {
  const Window window = random_window({3, 6, 50}, 4);
  const Result got = run_blocks(window, {1});  // the ragged block only: channels 32..49
  for (int64_t site = 0; site < window.grid.sites(); ++site)
    for (int64_t c = 0; c < window.grid.channels; ++c) {
      const size_t i = site * window.grid.channels + c;
      EXPECT_EQ(std::isnan(got.F[i]), c < ws::kBlock) << "site " << site << " channel " << c;
      EXPECT_EQ(std::isnan(got.P[i]), c < ws::kBlock) << "site " << site << " channel " << c;
    }
  for (int64_t t = 0; t < window.steps; ++t) {
    EXPECT_TRUE(std::isnan(got.partial[t * 2 + 0])) << "step " << t;
    EXPECT_FALSE(std::isnan(got.partial[t * 2 + 1])) << "step " << t;
  }
}

TEST(Trainer2WindowSimd, ABlockUsesItsOwnShareOfTheScratchAndItsPaddingStaysZero) {
  // 50 channels: block 1 holds channels 32..49 and 14 padding components per site.
  for (const int64_t steps : {int64_t{1}, int64_t{4}}) {
    SCOPED_TRACE("steps " + std::to_string(steps));
    const Window window = random_window({3, 6, 50}, steps);
    const Result got = run_blocks(window, {1});
    const int64_t share = ws::scratch_floats(window.grid), sites = window.grid.sites();
    for (int64_t i = 0; i < static_cast<int64_t>(got.scratch.size()); ++i)
      if (i < share || i >= 2 * share) ASSERT_TRUE(std::isnan(got.scratch[i])) << "scratch float " << i;
    // Block 1's buffers: F twice, P, F_eq [sites, kBlock], then the zero row and the ring.
    const float* own = got.scratch.data() + share;
    for (int64_t buffer = 0; buffer < 4; ++buffer)
      for (int64_t s = 0; s < sites; ++s)
        for (int64_t c = 50 - ws::kBlock; c < ws::kBlock; ++c)
          EXPECT_EQ(own[(buffer * sites + s) * ws::kBlock + c], 0.0f)
              << "buffer " << buffer << " site " << s << " padding component " << c;
  }
}

TEST(Trainer2WindowSimd, AWindowOfNoStepsLeavesTheFieldAtRest) {
  // The reference's window of no steps runs no field_step: F = F0, P = 0 (no half kick either).
  const Window window = random_window({4, 4, 32}, 0);
  const Result got = run_blocks(window, {0});
  EXPECT_EQ(got.F, window.F0);
  EXPECT_EQ(got.P, std::vector<float>(window.F0.size(), 0.0f));
}

struct Retrieval {
  int64_t B, T, C, d;
  std::vector<float> O, bank_coord, bank_state, q, g, R;
  ws::Candidates candidates() const { return {O.data(), bank_coord.data(), bank_state.data(), T, C, d}; }
};

Retrieval random_retrieval(int64_t B, int64_t T, int64_t C, int64_t d) {
  const int64_t n = ref::kCoordinateDim;
  std::mt19937 engine(static_cast<uint32_t>(B * 1000 + d));
  std::normal_distribution<float> normal(0, 1);
  std::uniform_real_distribution<float> uniform(0.5f, 1.5f);
  Retrieval r{B, T, C, d, {}, {}, {}, {}, {}, {}};
  const auto fill = [&](std::vector<float>& v, int64_t count, auto& distribution) {
    for (int64_t i = 0; i < count; ++i) v.push_back(distribution(engine));
  };
  fill(r.O, B * T * d, normal);
  fill(r.bank_coord, C * n, normal);
  fill(r.bank_state, C * d, normal);
  fill(r.q, B * n, normal);
  fill(r.g, n, uniform);
  fill(r.R, B, uniform);
  return r;
}

TEST(Trainer2WindowSimd, TheRetrievalsWeightsAndMixingAreTheReferences) {
  // B = 3: one partial group of rows (the small size); B = 9: two full groups and a partial one.
  for (const int64_t B : {int64_t{3}, int64_t{9}}) {
    SCOPED_TRACE("batch " + std::to_string(B));
    const int64_t d = 12 + 20 * B, T = 5, C = 40, K = T + C, n = ref::kCoordinateDim;
    const Retrieval in = random_retrieval(B, T, C, d);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> weights(B * K, nan), act(B * d, nan);
    for (int64_t b = B - 1; b >= 0; --b)
      ws::retrieval_weights(in.candidates(), b, in.q.data() + b * n, in.g.data(), in.R[b], weights.data() + b * K);
    for (int64_t group = ws::mix_groups(B) - 1; group >= 0; --group)
      ws::retrieval_mix(in.candidates(), B, weights.data(), group, act.data());
    // The reference on the materialized candidates concat_K(O[b], bank), in fp64.
    std::vector<double> cand_coord, cand_state;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < K; ++k) {
        const float* coord = k < T ? &in.O[(b * T + k) * d] : &in.bank_coord[(k - T) * n];
        const float* state = k < T ? &in.O[(b * T + k) * d] : &in.bank_state[(k - T) * d];
        cand_coord.insert(cand_coord.end(), coord, coord + n);
        cand_state.insert(cand_state.end(), state, state + d);
      }
    const std::vector<double> q(in.q.begin(), in.q.end()), g(in.g.begin(), in.g.end()), R(in.R.begin(), in.R.end());
    std::vector<double> want_act(B * d), want_weights(B * K);
    ref::retrieval(B, K, d, q.data(), cand_coord.data(), cand_state.data(), g.data(), R.data(), want_act.data(),
                   want_weights.data());
    // fp32 softmax over 45 terms and sums of 45 products: far inside the workload's act budget (1e-4).
    EXPECT_LT(relative_l2(weights, want_weights), 1e-6);
    EXPECT_LT(relative_l2(act, want_act), 1e-6);
  }
}

TEST(Trainer2WindowSimd, AMixingGroupWritesOnlyItsRows) {
  const int64_t B = 2 * ws::kMixRows + 1, T = 3, C = 7, d = 20, K = T + C, n = ref::kCoordinateDim;
  const Retrieval in = random_retrieval(B, T, C, d);
  std::vector<float> weights(B * K), act(B * d, std::numeric_limits<float>::quiet_NaN());
  for (int64_t b = 0; b < B; ++b)
    ws::retrieval_weights(in.candidates(), b, in.q.data() + b * n, in.g.data(), in.R[b], weights.data() + b * K);
  ws::retrieval_mix(in.candidates(), B, weights.data(), 1, act.data());  // rows kMixRows .. 2 kMixRows - 1
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < d; ++j)
      EXPECT_EQ(std::isnan(act[b * d + j]), b < ws::kMixRows || b >= 2 * ws::kMixRows)
          << "row " << b << " column " << j;
}

}  // namespace
}  // namespace pb
