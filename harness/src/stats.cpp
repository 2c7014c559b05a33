#include "phasebench/stats.hpp"

#include <algorithm>
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

Summary summarize(const std::vector<double>& samples) {
  require_samples(samples);
  Summary summary;
  summary.median = median(samples);
  summary.min = *std::min_element(samples.begin(), samples.end());
  summary.max = *std::max_element(samples.begin(), samples.end());
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
  SeededGenerator generator(kBootstrapSeed, "speedup");
  std::vector<double> ratios(kBootstrapResamples), scratch;
  for (double& value : ratios) {
    const double base = resampled_median(baseline, generator, scratch);
    value = base / resampled_median(candidate, generator, scratch);
  }
  ratio.ci = percentile_interval(std::move(ratios));
  return ratio;
}

}  // namespace pb::stats
