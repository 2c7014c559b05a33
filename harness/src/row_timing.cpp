#include "row_timing.hpp"

#include "phasebench/stats.hpp"

namespace pb {

void set_time_columns(ResultRow& row, const std::vector<double>& samples) {
  const stats::Summary summary = stats::summarize(samples);
  row.reps = static_cast<int>(samples.size());
  row.median_ms = summary.median;
  row.min_ms = summary.min;
  row.max_ms = summary.max;
  row.ci_low_ms = summary.median_ci.low;
  row.ci_high_ms = summary.median_ci.high;
}

void set_speedup(double& value, double& low, double& high, const std::vector<double>& base,
                 const std::vector<double>& samples) {
  const stats::Ratio ratio = stats::speedup(base, samples);
  value = ratio.value;
  low = ratio.ci.low;
  high = ratio.ci.high;
}

}  // namespace pb
