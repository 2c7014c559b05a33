#include "phasebench/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "phasebench/rng.hpp"

namespace pb::stats {
namespace {

constexpr uint64_t kBootstrapSeed = 20261121;

// A bootstrap resample's median, drawing indices from `generator`.
double resampled_median(const std::vector<double>& samples, SeededGenerator& generator,
                        std::vector<double>& scratch) {
  scratch.resize(samples.size());
  for (double& value : scratch) value = samples[generator.next_bits() % samples.size()];
  return median(scratch);
}

Interval percentile_interval(std::vector<double> statistics) {
  const double tail = (1.0 - kConfidence) / 2;
  return {quantile(statistics, tail), quantile(statistics, 1.0 - tail)};
}

void require_samples(const std::vector<double>& samples) {
  if (samples.empty()) throw std::invalid_argument("statistics of an empty sample set");
}

}  // namespace

double quantile(std::vector<double> samples, double q) {
  require_samples(samples);
  std::sort(samples.begin(), samples.end());
  const double position = q * static_cast<double>(samples.size() - 1);
  const size_t below = static_cast<size_t>(position);
  const size_t above = std::min(below + 1, samples.size() - 1);
  const double fraction = position - static_cast<double>(below);
  return samples[below] + fraction * (samples[above] - samples[below]);
}

double median(std::vector<double> samples) { return quantile(std::move(samples), 0.5); }

std::vector<double> fastest(std::vector<double> samples, double percent) {
  if (percent >= 100) return samples;
  std::sort(samples.begin(), samples.end());
  const auto wanted = static_cast<size_t>(std::ceil(percent / 100 * static_cast<double>(samples.size())));
  samples.resize(std::min(samples.size(), std::max<size_t>(3, wanted)));
  return samples;
}

Summary summarize(const std::vector<double>& samples) {
  require_samples(samples);
  Summary summary;
  summary.median = median(samples);
  summary.min = *std::min_element(samples.begin(), samples.end());
  summary.max = *std::max_element(samples.begin(), samples.end());
  if (samples.size() < kFewestSamplesForInterval) return summary;  // no interval: NaN, never [x, x]
  SeededGenerator generator(kBootstrapSeed, "median");
  std::vector<double> medians(kBootstrapResamples), scratch;
  for (double& value : medians) value = resampled_median(samples, generator, scratch);
  summary.median_ci = percentile_interval(std::move(medians));
  return summary;
}

Ratio speedup(const std::vector<double>& baseline, const std::vector<double>& candidate) {
  require_samples(baseline);
  require_samples(candidate);
  Ratio ratio;
  ratio.value = median(baseline) / median(candidate);
  if (baseline.size() < kFewestSamplesForInterval || candidate.size() < kFewestSamplesForInterval) return ratio;
  SeededGenerator generator(kBootstrapSeed, "speedup");
  std::vector<double> ratios(kBootstrapResamples), scratch;
  for (double& value : ratios) {
    const double base = resampled_median(baseline, generator, scratch);
    value = base / resampled_median(candidate, generator, scratch);
  }
  ratio.ci = percentile_interval(std::move(ratios));
  return ratio;
}

// ---- straight-line fits -------------------------------------------------------------------------

double student_t_95(int degrees_of_freedom) {
  if (degrees_of_freedom < 1) throw std::invalid_argument("Student's t needs at least one degree of freedom");
  static constexpr double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  constexpr int kTabled = static_cast<int>(sizeof(kTable) / sizeof(kTable[0]));
  if (degrees_of_freedom <= kTabled) return kTable[degrees_of_freedom - 1];
  // Abramowitz and Stegun 26.7.5: within 1e-4 of the quantile from 30 degrees of freedom on.
  const double z = 1.959963985, n = degrees_of_freedom;
  const double z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
  return z + (z3 + z) / (4 * n) + (5 * z5 + 16 * z3 + 3 * z) / (96 * n * n) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * n * n * n);
}

LineFit fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size()) throw std::invalid_argument("a line fit needs as many x as y");
  LineFit fit;
  fit.points = x.size();
  if (fit.points < 2) return fit;
  const double count = static_cast<double>(fit.points);
  const double mean_x = std::accumulate(x.begin(), x.end(), 0.0) / count;
  const double mean_y = std::accumulate(y.begin(), y.end(), 0.0) / count;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < fit.points; ++i) {
    sxx += (x[i] - mean_x) * (x[i] - mean_x);
    sxy += (x[i] - mean_x) * (y[i] - mean_y);
  }
  if (!(sxx > 0)) return fit;
  fit.slope = sxy / sxx;
  fit.intercept = mean_y - fit.slope * mean_x;
  if (fit.points < 3) return fit;
  double residuals = 0;
  for (size_t i = 0; i < fit.points; ++i) {
    const double residual = y[i] - fit.intercept - fit.slope * x[i];
    residuals += residual * residual;
  }
  const int degrees_of_freedom = static_cast<int>(fit.points) - 2;
  fit.slope_standard_error = std::sqrt(residuals / degrees_of_freedom / sxx);
  const double half_width = student_t_95(degrees_of_freedom) * fit.slope_standard_error;
  fit.slope_ci = {fit.slope - half_width, fit.slope + half_width};
  return fit;
}

// ---- rank tests ----------------------------------------------------------------------------------

namespace {

// Largest total sample count for the exact U distribution: its counts stay exact in a double.
constexpr size_t kExactRankTestLimit = 40;

struct RankSums {
  double u_higher = 0;    // pairs (l, h) with h > l, ties counting one half
  double tie_term = 0;    // sum of t^3 - t over groups of t tied values
};

RankSums rank_sums(const std::vector<double>& lower, const std::vector<double>& higher) {
  std::vector<std::pair<double, bool>> pooled;  // (value, is from `higher`)
  for (double v : lower) pooled.emplace_back(v, false);
  for (double v : higher) pooled.emplace_back(v, true);
  std::sort(pooled.begin(), pooled.end());
  RankSums sums;
  double rank_sum_higher = 0;
  for (size_t first = 0; first < pooled.size();) {
    size_t last = first;
    while (last + 1 < pooled.size() && pooled[last + 1].first == pooled[first].first) ++last;
    const double tied = static_cast<double>(last - first + 1);
    const double average_rank = (static_cast<double>(first + last) + 2) / 2;  // ranks are 1-based
    for (size_t i = first; i <= last; ++i)
      if (pooled[i].second) rank_sum_higher += average_rank;
    sums.tie_term += tied * tied * tied - tied;
    first = last + 1;
  }
  const double n = static_cast<double>(higher.size());
  sums.u_higher = rank_sum_higher - n * (n + 1) / 2;
  return sums;
}

// P(U >= u) under the null, from the number of arrangements giving each U: the coefficients of
// the Gaussian binomial [m+n choose m]_q, built as prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i).
double exact_upper_tail(size_t m, size_t n, double u) {
  std::vector<double> counts(m * n + m + n + 1, 0.0);
  counts[0] = 1;
  for (size_t i = 1; i <= m; ++i) {
    for (size_t k = counts.size(); k-- > n + i;) counts[k] -= counts[k - n - i];
    for (size_t k = i; k < counts.size(); ++k) counts[k] += counts[k - i];
  }
  const double total = std::accumulate(counts.begin(), counts.begin() + m * n + 1, 0.0);
  double tail = 0;
  for (size_t k = static_cast<size_t>(std::ceil(u)); k <= m * n; ++k) tail += counts[k];
  return tail / total;
}

double normal_upper_tail(size_t m, size_t n, const RankSums& sums) {
  const double n1 = static_cast<double>(m), n2 = static_cast<double>(n), total = n1 + n2;
  const double variance = n1 * n2 / 12 * ((total + 1) - sums.tie_term / (total * (total - 1)));
  if (variance <= 0) return 1.0;  // every value tied: no evidence either way
  return normal_tail((sums.u_higher - n1 * n2 / 2 - 0.5) / std::sqrt(variance));
}

}  // namespace

double normal_tail(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

double normal_quantile_above(double p) {
  double low = -40, high = 40;  // bisection: the tail falls monotonically in z
  for (int i = 0; i < 200; ++i) {
    const double middle = (low + high) / 2;
    (normal_tail(middle) > p ? low : high) = middle;
  }
  return (low + high) / 2;
}

double mann_whitney_p_greater(const std::vector<double>& lower, const std::vector<double>& higher) {
  require_samples(lower);
  require_samples(higher);
  const RankSums sums = rank_sums(lower, higher);
  const bool exact = sums.tie_term == 0 && lower.size() + higher.size() <= kExactRankTestLimit;
  if (exact) return exact_upper_tail(lower.size(), higher.size(), sums.u_higher);
  return std::min(1.0, normal_upper_tail(lower.size(), higher.size(), sums));
}

std::vector<double> holm_adjust(const std::vector<double>& p_values) {
  std::vector<size_t> order(p_values.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return p_values[a] < p_values[b]; });
  std::vector<double> adjusted(p_values.size());
  double running_max = 0;
  for (size_t rank = 0; rank < order.size(); ++rank) {
    const double scaled = static_cast<double>(order.size() - rank) * p_values[order[rank]];
    running_max = std::max(running_max, std::min(1.0, scaled));
    adjusted[order[rank]] = running_max;
  }
  return adjusted;
}

}  // namespace pb::stats
