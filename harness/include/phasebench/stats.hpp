#pragma once
// Statistics over repetition samples: median, spread, bootstrap intervals.
//
// Intervals are percentile bootstraps with a fixed resampling seed, so the same samples always give
// the same interval. A speedup's interval resamples both sample sets (not two medians alone).

#include <cstdint>
#include <vector>

namespace pb::stats {

struct Interval {
  double low = 0;
  double high = 0;
};

struct Summary {
  double median = 0;
  double min = 0;
  double max = 0;
  Interval median_ci;  // 95% bootstrap interval of the median
};

struct Ratio {
  double value = 0;  // median(baseline) / median(candidate): > 1 means the candidate is faster
  Interval ci;       // 95% bootstrap interval of that ratio
};

constexpr int kBootstrapResamples = 2000;
constexpr double kConfidence = 0.95;

double median(std::vector<double> samples);
/// The q-quantile (0..1) with linear interpolation between order statistics.
double quantile(std::vector<double> samples, double q);
Summary summarize(const std::vector<double>& samples);
/// Speedup of `candidate` over `baseline` (time samples of each).
Ratio speedup(const std::vector<double>& baseline, const std::vector<double>& candidate);

}  // namespace pb::stats
