#pragma once
// Statistics over repetition samples: median, spread, bootstrap intervals.
//
// Intervals are percentile bootstraps with a fixed resampling seed, so the same samples always give
// the same interval. A speedup's interval resamples both sample sets (not two medians alone).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace pb::stats {

struct Interval {
  double low = std::numeric_limits<double>::quiet_NaN();  // NaN: no interval (too few samples)
  double high = std::numeric_limits<double>::quiet_NaN();
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
/// Fewer samples than this give no interval (NaN bounds): a bootstrap of one or two values only
/// repeats them, and [x, x] would claim a certainty that one repetition does not give.
constexpr size_t kFewestSamplesForInterval = 3;
constexpr double kConfidence = 0.95;

double median(std::vector<double> samples);
/// The q-quantile (0..1) with linear interpolation between order statistics.
double quantile(std::vector<double> samples, double q);
Summary summarize(const std::vector<double>& samples);
/// The fastest `percent` of the samples (at least 3; all of them when percent >= 100), fastest
/// first: on a machine shared with other work, the repetitions nothing disturbed. Which share of a
/// run is disturbed changes from run to run, and moves a median far more than a slowdown worth
/// catching (the gate compares these: docs/regression-gate.md; the history stores their median).
std::vector<double> fastest(std::vector<double> samples, double percent);
/// Speedup of `candidate` over `baseline` (time samples of each).
Ratio speedup(const std::vector<double>& baseline, const std::vector<double>& candidate);

// ---- straight-line fits (growth exponents) ------------------------------------------------------

/// y = intercept + slope * x by least squares, with the slope's 95% interval from Student's t on
/// its standard error (n - 2 degrees of freedom). Two points give the line through them and no
/// interval (NaN bounds); fewer than two, or all x equal, give no fit (NaN slope).
struct LineFit {
  double slope = std::numeric_limits<double>::quiet_NaN();
  double intercept = std::numeric_limits<double>::quiet_NaN();
  double slope_standard_error = std::numeric_limits<double>::quiet_NaN();
  Interval slope_ci;
  size_t points = 0;
};
LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y);

/// The two-sided 95% quantile of Student's t with `degrees_of_freedom` (>= 1): 12.706 for 1,
/// approaching 1.96. Tabled to 30, then the Cornish-Fisher series in 1 / degrees_of_freedom.
double student_t_95(int degrees_of_freedom);

// ---- rank tests (regression gate) ----------------------------------------------------------------

/// One-sided Mann-Whitney U test: the p-value of "`higher` tends to be larger than `lower`".
/// Exact (the U distribution by counting) when there are no ties and both sets are small;
/// otherwise the normal approximation with tie and continuity correction. Needs no assumption
/// about the shape of the timing distribution, and one outlier moves it little.
double mann_whitney_p_greater(const std::vector<double>& lower, const std::vector<double>& higher);

/// The one-sided tail of a standard normal beyond z, and the z beyond which it holds `p`.
double normal_tail(double z);
double normal_quantile_above(double p);

/// Holm-Bonferroni adjusted p-values (same order as `p_values`): rejecting every hypothesis whose
/// adjusted p is <= alpha keeps the chance of any false rejection among them <= alpha.
std::vector<double> holm_adjust(const std::vector<double>& p_values);

}  // namespace pb::stats
