// geometry/complex_metric's entry_vectors phase (phase 3, optimized/geometry/complex_metric_bodies.hpp)
// on the host, block by block as the Kokkos kernel runs it, at item counts verify's sizes never
// have: several blocks, a partial last block, a block of one item. verify checks the variant's
// numbers at the workload's sizes; this, every entry of every item of these, and the weights'
// layout against the ladder's folded pair matrices.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "optimized/geometry/complex_metric_bodies.hpp"

namespace pb {
namespace {

namespace gk = pb::geometry_kernels;
namespace ev = pb::geometry_kernels::entry_vectors;
namespace ref = pb::reference::geometry::complex_metric;

std::vector<float> normal_values(int64_t count, float stddev, uint32_t seed) {
  std::mt19937 engine(seed);
  std::normal_distribution<float> normal(0, stddev);
  std::vector<float> values(static_cast<size_t>(count));
  for (float& value : values) value = normal(engine);
  return values;
}

std::vector<float> entry_weights(const std::vector<float>& gamma) {
  std::vector<float> weights(ev::kWeightCount);
  for (int64_t index = 0; index < ev::kWeightCount; ++index) weights[index] = ev::folded_weight(gamma.data(), index);
  return weights;
}

// The weights are 1/2 gamma_m gamma_n folded over i <= j, laid out by pair: [pair][m * d + n].
TEST(GeometryComplexMetricEntries, TheWeightsAreTheHalfProductsFoldedAndLaidOutByPair) {
  const std::vector<float> gamma = normal_values(gk::kD * gk::kMatrixSize, 0.5f, 7);
  const std::vector<float> weights = entry_weights(gamma);
  const auto half_product = [&](int m, int n, int i, int j) {
    double sum = 0;
    for (int k = 0; k < gk::kS; ++k)
      sum += double(gamma[(m * gk::kS + i) * gk::kS + k]) * gamma[(n * gk::kS + k) * gk::kS + j];
    return sum / 2;
  };
  for (int pair = 0; pair < gk::kPairCount; ++pair) {
    int i = 0, j = 0;
    gk::pair_of(pair, i, j);
    for (int m = 0; m < gk::kD; ++m)
      for (int n = 0; n < gk::kD; ++n) {
        const double expected = i == j ? half_product(m, n, i, i) : half_product(m, n, i, j) + half_product(m, n, j, i);
        ASSERT_NEAR(weights[pair * gk::kPlane + m * gk::kD + n], expected, 1e-6)
            << "pair (" << i << ", " << j << "), entry (" << m << ", " << n << ")";
      }
  }
}

TEST(GeometryComplexMetricEntries, EveryBlockComputesEveryEntryOfTheReference) {
  const std::vector<float> gamma = normal_values(gk::kD * gk::kMatrixSize, 0.5f, 11);
  const std::vector<float> weights = entry_weights(gamma);
  const std::vector<double> gamma64(gamma.begin(), gamma.end());
  // One item; a block's worth short of full; exactly one block; three blocks, the last partial.
  for (const int64_t items : {int64_t{1}, int64_t{37}, ev::kBlockItems, 2 * ev::kBlockItems + 21}) {
    SCOPED_TRACE("items " + std::to_string(items));
    const std::vector<float> psi = normal_values(items * gk::kS, 1.0f, static_cast<uint32_t>(items));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> phi(items * gk::kPlane, nan), theta(items * gk::kPlane, nan);
    EXPECT_EQ(ev::blocks(items), (items + ev::kBlockItems - 1) / ev::kBlockItems);
    for (int64_t block = 0; block < ev::blocks(items); ++block)
      ev::block(weights.data(), psi.data(), phi.data(), theta.data(), items, block);

    const std::vector<double> psi64(psi.begin(), psi.end());
    std::vector<double> phi_ref(phi.size()), theta_ref(theta.size());
    ref::evaluate<double>(gamma64.data(), psi64.data(), items, phi_ref.data(), theta_ref.data());
    for (int64_t item = 0; item < items; ++item) {
      // An item's scale: its largest value; fp32 rounding of a 10-term sum stays far below 1e-5 of it.
      double scale = 0;
      for (int e = 0; e < gk::kPlane; ++e)
        scale = std::max({scale, std::abs(phi_ref[item * gk::kPlane + e]), std::abs(theta_ref[item * gk::kPlane + e])});
      for (int e = 0; e < gk::kPlane; ++e) {
        const int64_t at = item * gk::kPlane + e;
        ASSERT_NEAR(phi[at], phi_ref[at], 1e-5 * scale) << "Phi, item " << item << " entry " << e;  // NaN fails
        ASSERT_NEAR(theta[at], theta_ref[at], 1e-5 * scale) << "Theta, item " << item << " entry " << e;
      }
    }
  }
}

// A block writes its own items' entries and no other (the kernel runs blocks on several threads).
TEST(GeometryComplexMetricEntries, ABlockWritesOnlyItsItems) {
  const int64_t items = 2 * ev::kBlockItems + 21;
  const std::vector<float> weights = entry_weights(normal_values(gk::kD * gk::kMatrixSize, 0.5f, 3));
  const std::vector<float> psi = normal_values(items * gk::kS, 1.0f, 5);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> phi(items * gk::kPlane, nan), theta(items * gk::kPlane, nan);
  ev::block(weights.data(), psi.data(), phi.data(), theta.data(), items, 1);
  for (int64_t at = 0; at < items * gk::kPlane; ++at) {
    const int64_t item = at / gk::kPlane;
    const bool mine = item >= ev::kBlockItems && item < 2 * ev::kBlockItems;
    ASSERT_EQ(std::isnan(phi[at]), !mine) << "item " << item;
    ASSERT_EQ(std::isnan(theta[at]), !mine) << "item " << item;
  }
}

}  // namespace
}  // namespace pb
