#include "history/history_steps.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pb::history {
namespace {

// A normal's sigma over the upper quartile of its absolute values (0.6745 would be the median's).
constexpr double kUpperQuartileToSigma = 1 / 1.1503;

// cost[i][j - i - 1]: sum of |v - median| over values[i, j): the L1 cost of one level there.
std::vector<std::vector<double>> level_costs(const std::vector<double>& values) {
  const size_t n = values.size();
  std::vector<std::vector<double>> cost(n);
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> sorted;
    for (size_t j = i; j < n; ++j) {
      sorted.insert(std::upper_bound(sorted.begin(), sorted.end(), values[j]), values[j]);
      const double median = stats::median(sorted);
      double sum = 0;
      for (const double v : sorted) sum += std::fabs(v - median);
      cost[i].push_back(sum);
    }
  }
  return cost;
}

std::vector<double> slice(const std::vector<double>& values, size_t begin, size_t end) {
  return {values.begin() + static_cast<std::ptrdiff_t>(begin), values.begin() + static_cast<std::ptrdiff_t>(end)};
}

Step step_between(const std::vector<double>& values, size_t begin, size_t index, size_t end) {
  const std::vector<double> before = slice(values, begin, index), after = slice(values, index, end);
  Step step;
  step.index = index;
  step.level_before = stats::median(before);
  step.level_after = stats::median(after);
  step.relative_size = step.level_after / step.level_before - 1;
  // stats::speedup is median(before) / median(after) with its bootstrap interval: invert it.
  const stats::Ratio ratio = stats::speedup(before, after);
  step.interval = {1 / ratio.ci.high - 1, 1 / ratio.ci.low - 1};
  return step;
}

}  // namespace

std::vector<double> recorded_times(const std::vector<double>& repetitions) {
  std::vector<double> recorded;
  for (const double ms : repetitions)
    if (std::isfinite(ms)) recorded.push_back(ms);
  return recorded;
}

double run_point(const std::vector<double>& repetitions) {
  const std::vector<double> recorded = recorded_times(repetitions);
  return recorded.empty() ? std::numeric_limits<double>::quiet_NaN()
                          : stats::median(stats::fastest(recorded, kFastestPercent));
}

double noise_scale(const std::vector<double>& log_values) {
  std::vector<double> differences;
  for (size_t i = 1; i < log_values.size(); ++i) differences.push_back(std::fabs(log_values[i] - log_values[i - 1]));
  if (differences.empty()) return 1e-3;
  // A difference of two independent points has sigma * sqrt(2). The upper quartile rather than the
  // median: timers that tick coarsely make many neighbours equal, and the median difference is then
  // 0 while the series is anything but quiet.
  return std::max(1e-3, kUpperQuartileToSigma * stats::quantile(differences, 0.75) / std::sqrt(2.0));
}

std::vector<size_t> potts_levels(const std::vector<double>& values, double gamma) {
  const size_t n = values.size();
  if (n == 0) return {};
  const auto cost = level_costs(values);
  // best[j]: the least cost of values[0, j); start[j]: where its last level begins.
  std::vector<double> best(n + 1, std::numeric_limits<double>::infinity());
  std::vector<size_t> start(n + 1, 0);
  best[0] = 0;
  for (size_t j = 1; j <= n; ++j)
    for (size_t i = 0; i < j; ++i) {
      const double candidate = best[i] + cost[i][j - i - 1] + gamma;
      if (candidate < best[j]) best[j] = candidate, start[j] = i;
    }
  std::vector<size_t> starts;
  for (size_t j = n; j > 0; j = start[j]) starts.push_back(start[j]);
  std::reverse(starts.begin(), starts.end());
  return starts;
}

std::vector<Step> detect_steps(const std::vector<double>& values, const StepOptions& options) {
  if (values.size() < 3) return {};
  std::vector<double> logs;
  for (const double v : values) logs.push_back(std::log(v));
  const double gamma = options.penalty_scale * noise_scale(logs) * std::log(static_cast<double>(values.size()));
  std::vector<size_t> bounds = potts_levels(logs, gamma);
  bounds.push_back(values.size());
  std::vector<Step> steps;
  for (size_t level = 1; level + 1 < bounds.size(); ++level) {
    Step step = step_between(values, bounds[level - 1], bounds[level], bounds[level + 1]);
    if (std::fabs(step.relative_size) >= options.min_relative_size) steps.push_back(step);
  }
  return steps;
}

}  // namespace pb::history
