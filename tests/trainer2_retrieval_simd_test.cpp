// trainer2/retrieval, Kokkos' vectorized_retrieval (phase 14, optimized/trainer2/retrieval_simd_bodies.hpp)
// on the host, row by row as the Kokkos kernel runs it: the blocked mixing gives the per-candidate
// loop's floats bit for bit at every candidate count around the block (K = 0 to 20: no block, whole
// blocks, every remainder) and several widths; the maximum finds the largest logit in any lane or
// the remainder; a row's weights and act follow the fp64 reference within the suite's budgets;
// the softmax is the exponentials' share of their k-ordered sum, also where e^logit underflows; and
// the phase passes verify on the small size's seeds (K = 16: whole blocks only, hence the rest here).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "optimized/trainer2/retrieval_simd_bodies.hpp"
#include "phasebench/check.hpp"
#include "process.hpp"
#include "reference/trainer2/trainer2.hpp"

namespace pb {
namespace {

namespace rs = pb::trainer2_kernels::retrieval_simd;
namespace ref = pb::reference::trainer2;

std::vector<float> normal_floats(int64_t count, uint32_t seed, float stddev = 1) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal(0, stddev);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& value : values) value = normal(engine);
  return values;
}

/// act = Σ_k weights[k] states[k], one candidate at a time (retrieval_fused's mix_states).
std::vector<float> mixed_one_candidate_at_a_time(const std::vector<float>& states, const std::vector<float>& weights,
                                                 int64_t K, int64_t d) {
  std::vector<float> act(static_cast<size_t>(d), 0.f);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < d; ++j) act[j] += weights[k] * states[k * d + j];
  return act;
}

TEST(Trainer2RetrievalSimd, TheBlockedMixingHasThePerCandidateLoopsFloats) {
  for (int64_t d : {1, 5, 16, 37, 256}) {
    for (int64_t K = 0; K <= 2 * rs::kMixBlock + 4; ++K) {
      const std::vector<float> states = normal_floats(K * d, static_cast<uint32_t>(100 * d + K));
      std::vector<float> weights = normal_floats(K, static_cast<uint32_t>(7 + K), 0.3f);
      std::vector<float> act(static_cast<size_t>(d) + 1, -1.f);  // one float past the row: untouched
      rs::mix_states(states.data(), weights.data(), K, d, act.data());
      const std::vector<float> want = mixed_one_candidate_at_a_time(states, weights, K, d);
      for (int64_t j = 0; j < d; ++j) {
        ASSERT_EQ(std::memcmp(&act[j], &want[j], sizeof(float)), 0)
            << "K " << K << " d " << d << " column " << j << ": " << act[j] << " vs " << want[j];
      }
      EXPECT_EQ(act[d], -1.f) << "K " << K << " d " << d << ": wrote past the row";
    }
  }
}

TEST(Trainer2RetrievalSimd, TheSoftmaxIsEachExponentialsShareOfTheirSum) {
  std::vector<float> logits = {-3.5f, -0.25f, -12.f, -0.25f, -7.f, -1.f, -40.f, -2.f, -0.5f, -9.f, -6.f};
  const int64_t K = static_cast<int64_t>(logits.size());
  std::vector<float> weights = logits;
  rs::softmax_of_logits(weights.data(), K, -0.25f);
  double total = 0;
  for (float logit : logits) total += std::exp(double(logit) + 0.25);
  double sum = 0;
  for (int64_t k = 0; k < K; ++k) {
    const double want = std::exp(double(logits[k]) + 0.25) / total;
    EXPECT_NEAR(weights[k], want, 4e-7 * want) << "k " << k;
    sum += weights[k];
  }
  EXPECT_NEAR(sum, 1.0, 1e-6);
  EXPECT_EQ(weights[1], weights[3]);  // equal logits, equal weights

  float single = -5.f;
  rs::softmax_of_logits(&single, 1, -5.f);
  EXPECT_EQ(single, 1.f);
}

// Why the maximum is subtracted: logits of far-away candidates (β R spd ~ 120) have exponentials
// below the smallest float; shifted by their maximum they stay in range, and the weights are right.
TEST(Trainer2RetrievalSimd, TheSoftmaxOfLogitsFarBelowZeroStaysInRange) {
  const std::vector<float> logits = {-121.5f, -120.f, -135.f, -122.f, -126.f};
  std::vector<float> weights = logits;
  rs::softmax_of_logits(weights.data(), static_cast<int64_t>(logits.size()), -120.f);
  double total = 0;
  for (float logit : logits) total += std::exp(double(logit) + 120);
  for (size_t k = 0; k < logits.size(); ++k) {
    const double want = std::exp(double(logits[k]) + 120) / total;
    EXPECT_NEAR(weights[k], want, 4e-7 * want) << "k " << k;
  }
}

TEST(Trainer2RetrievalSimd, TheMaximumIsTheLargestValueWhereverItLies) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(rs::maximum(nullptr, 0), -inf);
  for (int64_t K = 1; K <= 40; ++K) {
    for (int64_t at = 0; at < K; ++at) {  // the largest in every lane and in the remainder
      std::vector<float> x = normal_floats(K, static_cast<uint32_t>(K), 0.5f);
      for (float& value : x) value = -10.f - std::abs(value);
      x[at] = -0.75f;
      ASSERT_EQ(rs::maximum(x.data(), K), -0.75f) << "K " << K << " at " << at;
    }
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> with_nan = {-3.f, nan, -1.f, nan, -2.f, -5.f, -4.f, -6.f, -7.f, -8.f,
                                       -9.f, -9.f, -9.f, -9.f, -9.f, -9.f, nan,  -9.f, -0.5f};
  EXPECT_EQ(rs::maximum(with_nan.data(), static_cast<int64_t>(with_nan.size())), -0.5f);  // a NaN never wins
}

/// One batch row against the fp64 reference (ref::retrieval with B = 1), at candidate counts with
/// and without a remainder, within the suite's budgets (suites/trainer2/retrieval.cpp: act 2e-5,
/// weights 1e-5, relative L2).
TEST(Trainer2RetrievalSimd, ARowsWeightsAndActFollowTheReference) {
  const int64_t n = ref::kCoordinateDim;
  for (int64_t K : {1, 7, 16, 43, 2176}) {
    for (int64_t d : {12, 256}) {
      const auto seed = static_cast<uint32_t>(K * 10 + d);
      const std::vector<float> coords = normal_floats(K * n, seed), states = normal_floats(K * d, seed + 1);
      const std::vector<float> query = normal_floats(n, seed + 2, 0.3f);
      const std::vector<float> metric = {0.6f, 1.4f, 0.9f, 1.1f, 0.5f, 1.5f, 1.f, 0.8f};
      const float curvature = 0.45f;
      std::vector<float> weights(static_cast<size_t>(K)), act(static_cast<size_t>(d));
      rs::retrieval_row(coords.data(), states.data(), K, d, query.data(), metric.data(), curvature, weights.data(),
                        act.data());

      const std::vector<double> coords64(coords.begin(), coords.end()), states64(states.begin(), states.end());
      const std::vector<double> query64(query.begin(), query.end()), metric64(metric.begin(), metric.end());
      const double curvature64 = curvature;
      std::vector<double> want_weights(static_cast<size_t>(K)), want_act(static_cast<size_t>(d));
      ref::retrieval<double>(1, K, d, query64.data(), coords64.data(), states64.data(), metric64.data(), &curvature64,
                             want_act.data(), want_weights.data());
      EXPECT_LE(relative_l2_error(std::vector<double>(weights.begin(), weights.end()), want_weights), 1e-5)
          << "K " << K << " d " << d;
      EXPECT_LE(relative_l2_error(std::vector<double>(act.begin(), act.end()), want_act), 2e-5)
          << "K " << K << " d " << d;
    }
  }
}

TEST(Trainer2RetrievalVectorized, VerifyPassesOnTheSmallSizesSeeds) {
  if (!testing::backend_built("kokkos")) GTEST_SKIP() << "the kokkos backend is not built";
  const auto verified = testing::run_phasebench(
      "verify --size small --seeds 3 --filter 'trainer2/retrieval/kokkos/vectorized_retrieval'");
  ASSERT_EQ(verified.exit_code, 0) << verified.output;
  if (verified.output.find("runs kernels on a device") != std::string::npos) GTEST_SKIP() << verified.output;
  EXPECT_NE(verified.output.find("verify: 3 passed, 0 failed"), std::string::npos) << verified.output;
}

}  // namespace
}  // namespace pb
