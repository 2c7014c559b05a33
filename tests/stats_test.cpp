// Statistics against values computed by hand.

#include <gtest/gtest.h>

#include <cmath>

#include "phasebench/stats.hpp"

namespace pb::stats {
namespace {

TEST(Stats, MedianOfOddAndEvenCounts) {
  EXPECT_DOUBLE_EQ(median({5, 1, 3}), 3);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({7}), 7);
}

TEST(Stats, QuantileInterpolatesBetweenOrderStatistics) {
  // Sorted 10, 20, 30, 40, 50: q = 0.25 sits exactly on 20; q = 0.1 is 40% of the way 10 -> 20.
  EXPECT_DOUBLE_EQ(quantile({50, 10, 40, 20, 30}, 0.25), 20);
  EXPECT_DOUBLE_EQ(quantile({50, 10, 40, 20, 30}, 0.1), 14);
  EXPECT_DOUBLE_EQ(quantile({50, 10, 40, 20, 30}, 1.0), 50);
}

TEST(Stats, EmptySamplesAreAnError) { EXPECT_THROW(median({}), std::invalid_argument); }

// The normal tail compare judges a row's z by, and the z a one-row regression needs over 24 rows.
TEST(Stats, NormalTailAndItsQuantile) {
  EXPECT_DOUBLE_EQ(normal_tail(0), 0.5);
  EXPECT_NEAR(normal_tail(1.959964), 0.025, 1e-7);
  EXPECT_NEAR(normal_quantile_above(0.05 / 24), 2.8653, 1e-4);
  EXPECT_NEAR(normal_tail(normal_quantile_above(1e-6)), 1e-6, 1e-12);
}

TEST(Stats, SummaryHasMinMaxAndAnIntervalAroundTheMedian) {
  const Summary s = summarize({1.0, 1.1, 0.9, 1.05, 0.95, 1.02, 0.98, 1.01, 0.99, 5.0});
  EXPECT_DOUBLE_EQ(s.min, 0.9);
  EXPECT_DOUBLE_EQ(s.max, 5.0);
  EXPECT_DOUBLE_EQ(s.median, 1.005);
  EXPECT_LE(s.median_ci.low, s.median);
  EXPECT_GE(s.median_ci.high, s.median);
  EXPECT_LT(s.median_ci.high, 1.2);  // the outlier does not drag the median's interval
}

TEST(Stats, ConstantSamplesHaveAZeroWidthInterval) {
  const Summary s = summarize({2, 2, 2, 2});
  EXPECT_DOUBLE_EQ(s.median_ci.low, 2);
  EXPECT_DOUBLE_EQ(s.median_ci.high, 2);
}

TEST(Stats, IntervalsAreReproducible) {
  const std::vector<double> samples{3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  EXPECT_EQ(summarize(samples).median_ci.low, summarize(samples).median_ci.low);
  EXPECT_EQ(summarize(samples).median_ci.high, summarize(samples).median_ci.high);
}

TEST(Stats, SpeedupOfATwiceAsFastCandidate) {
  const Ratio r = speedup({10, 10, 10, 10}, {5, 5, 5, 5});
  EXPECT_DOUBLE_EQ(r.value, 2);
  EXPECT_DOUBLE_EQ(r.ci.low, 2);
  EXPECT_DOUBLE_EQ(r.ci.high, 2);
}

TEST(Stats, SpeedupIntervalComesFromTheSamples) {
  const Ratio r = speedup({9, 10, 11, 10, 9.5, 10.5}, {4.5, 5, 5.5, 5, 4.8, 5.2});
  EXPECT_NEAR(r.value, 2.0, 1e-12);
  EXPECT_LT(r.ci.low, 2.0);   // noisy samples: a real interval, not a point
  EXPECT_GT(r.ci.high, 2.0);
  EXPECT_GT(r.ci.low, 1.5);
  EXPECT_LT(r.ci.high, 2.5);
}

// A row timed once or twice (a reference on a GPU node, under the time budget) has a median but
// no interval: a bootstrap of one value would be [x, x], a certainty one repetition does not give.
TEST(Stats, FewerThanThreeSamplesGiveNoInterval) {
  for (const std::vector<double>& few : {std::vector<double>{4}, std::vector<double>{4, 6}}) {
    const Summary s = summarize(few);
    EXPECT_DOUBLE_EQ(s.median, few.size() == 1 ? 4 : 5);
    EXPECT_TRUE(std::isnan(s.median_ci.low) && std::isnan(s.median_ci.high));
    const Ratio against_few = speedup(few, {1, 1.1, 0.9, 1});
    EXPECT_GT(against_few.value, 3.9);
    EXPECT_TRUE(std::isnan(against_few.ci.low) && std::isnan(against_few.ci.high));
    EXPECT_TRUE(std::isnan(speedup({1, 1.1, 0.9, 1}, few).ci.low));
  }
  EXPECT_FALSE(std::isnan(summarize({4, 5, 6}).median_ci.low));  // three are enough
}

}  // namespace
}  // namespace pb::stats
