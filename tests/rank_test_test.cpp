// The regression gate's statistics: the one-sided Mann-Whitney U test against brute-force
// enumeration and textbook values, and the Holm correction against a hand-worked example.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "phasebench/stats.hpp"

namespace pb::stats {
namespace {

// Pairs (l, h) with h > l, a tie counting one half: the U statistic of `higher`.
double u_statistic(const std::vector<double>& lower, const std::vector<double>& higher) {
  double u = 0;
  for (double h : higher)
    for (double l : lower) u += h > l ? 1.0 : h == l ? 0.5 : 0.0;
  return u;
}

// P(U >= observed) by trying every way of splitting the pooled values into the two groups.
double enumerated_p(const std::vector<double>& lower, const std::vector<double>& higher) {
  std::vector<double> pooled = lower;
  pooled.insert(pooled.end(), higher.begin(), higher.end());
  const double observed = u_statistic(lower, higher);
  std::vector<bool> in_higher(pooled.size(), false);
  std::fill(in_higher.end() - static_cast<long>(higher.size()), in_higher.end(), true);
  int total = 0, at_least = 0;
  do {
    std::vector<double> l, h;
    for (size_t i = 0; i < pooled.size(); ++i) (in_higher[i] ? h : l).push_back(pooled[i]);
    ++total;
    at_least += u_statistic(l, h) >= observed - 1e-9;
  } while (std::next_permutation(in_higher.begin(), in_higher.end()));
  return static_cast<double>(at_least) / total;
}

TEST(RankTest, ExactMatchesEnumeration) {
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases{
      {{1, 2, 3}, {4, 5, 6}},
      {{4, 5, 6}, {1, 2, 3}},
      {{1.0, 3.1, 2.2, 5.5}, {2.9, 4.4, 6.1, 3.5, 0.7}},
      {{10, 12, 11, 15, 9}, {13, 14, 16, 8}},
      {{0.5}, {0.1, 0.2, 0.9}},
  };
  for (const auto& [lower, higher] : cases)
    EXPECT_NEAR(mann_whitney_p_greater(lower, higher), enumerated_p(lower, higher), 1e-12);
}

TEST(RankTest, FullySeparatedGroupsGiveTheSmallestPossibleP) {
  // Three against three: 1 of C(6,3) = 20 arrangements puts all of `higher` on top.
  EXPECT_DOUBLE_EQ(mann_whitney_p_greater({1, 2, 3}, {4, 5, 6}), 1.0 / 20);
  EXPECT_DOUBLE_EQ(mann_whitney_p_greater({4, 5, 6}, {1, 2, 3}), 1.0);
}

TEST(RankTest, TieCorrectedApproximationIsCloseToThePermutationTail) {
  // Ties force the normal approximation; the permutation distribution is the truth.
  const std::vector<double> lower{1, 2, 2, 3, 4, 4, 5, 7}, higher{3, 4, 5, 5, 6, 7, 7, 8};
  const double enumerated = enumerated_p(lower, higher);
  EXPECT_LT(enumerated, 0.05);
  EXPECT_NEAR(mann_whitney_p_greater(lower, higher), enumerated, 0.01);
}

TEST(RankTest, LargeSetsUseTheApproximation) {
  std::vector<double> lower, higher;  // 30 against 30, beyond the exact limit, shifted
  for (int i = 0; i < 30; ++i) {
    lower.push_back(i / 30.0);
    higher.push_back(i / 30.0 + 0.31);  // never equal to a `lower` value: no ties
  }
  // U is 30*30 minus the pairs where lower wins; the normal tail of z = (U - 450 - 0.5) / sd.
  const double u = u_statistic(lower, higher), sd = std::sqrt(30.0 * 30 * 61 / 12);
  EXPECT_NEAR(mann_whitney_p_greater(lower, higher), 0.5 * std::erfc((u - 450 - 0.5) / sd / std::sqrt(2.0)), 1e-12);
  EXPECT_LT(mann_whitney_p_greater(lower, higher), 1e-3);
}

TEST(RankTest, TiesAreCorrected) {
  EXPECT_DOUBLE_EQ(mann_whitney_p_greater({2, 2, 2}, {2, 2, 2}), 1.0);  // no evidence at all
  const double p = mann_whitney_p_greater({1, 1, 2, 2, 3, 3}, {3, 3, 4, 4, 5, 5});
  EXPECT_GT(p, 0.0);
  EXPECT_LT(p, 0.02);
}

TEST(Holm, AdjustsInStepDownOrder) {
  // Sorted p: 0.01 (x4 = 0.04), 0.02 (x3 = 0.06), 0.03 (x2 = 0.06, kept monotone), 0.5 (x1).
  const std::vector<double> adjusted = holm_adjust({0.03, 0.5, 0.01, 0.02});
  EXPECT_DOUBLE_EQ(adjusted[2], 0.04);
  EXPECT_DOUBLE_EQ(adjusted[3], 0.06);
  EXPECT_DOUBLE_EQ(adjusted[0], 0.06);
  EXPECT_DOUBLE_EQ(adjusted[1], 0.5);
}

TEST(Holm, NeverExceedsOne) {
  for (double p : holm_adjust({0.4, 0.6, 0.9})) EXPECT_LE(p, 1.0);
  EXPECT_TRUE(holm_adjust({}).empty());
}

}  // namespace
}  // namespace pb::stats
