#include "history/history_trend.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>

#include "phasebench/backend.hpp"
#include "phasebench/errors.hpp"

namespace pb::history {
namespace {

// A row's workload in its run: the serial reference a ratio divides by, stored at one thread
// whatever counts the run's other rows ran at (as results.csv's speedup_vs_reference has it).
std::string workload_key(const TrendRow& row) {
  return row.run_id + "/" + row.suite + "/" + row.workload + "/" + row.size;
}

bool selects_threads(const TrendOptions& options, int threads) {
  return options.threads.empty() ||
         std::find(options.threads.begin(), options.threads.end(), threads) != options.threads.end();
}

double value_of(const TrendRow& row, const TrendOptions& options) {
  return options.cpu_time ? row.cpu_point_ms : row.point_ms;
}

std::regex trend_filter(const std::string& filter) {
  try {
    return std::regex(filter.empty() ? ".*" : filter);
  } catch (const std::regex_error& error) {
    throw InputError("--filter '" + filter + "' is not a valid regular expression: " + error.what());
  }
}

std::string short_commit(const std::string& commit) { return commit.empty() ? "?" : commit.substr(0, 12); }

void place_steps(Series& series, const StepOptions& options) {
  std::vector<double> values;
  for (const SeriesPoint& point : series.points) values.push_back(point.value);
  for (const Step& step : detect_steps(values, options)) {
    const SeriesPoint& before = series.points[step.index - 1];
    const SeriesPoint& after = series.points[step.index];
    series.steps.push_back({step, after.run_id, short_commit(before.git_commit) + ".." + short_commit(after.git_commit)});
  }
}

}  // namespace

std::string Series::name() const {
  return suite + "/" + workload + "/" + size + "/" + backend + "/" + device + "/" + std::to_string(phase_index) + "_" +
         phase + "/threads=" + std::to_string(threads);
}

std::string Series::filter_id() const { return suite + "/" + workload + "/" + backend + "/" + phase; }

std::vector<Series> build_trends(const std::vector<TrendRow>& rows, const TrendOptions& options) {
  const std::regex filter = trend_filter(options.filter);
  std::map<std::string, double> reference_ms;  // by workload_key
  for (const TrendRow& row : rows)
    if (row.backend == kReferenceBackend) reference_ms[workload_key(row)] = value_of(row, options);

  std::map<std::string, Series> by_key;
  for (const TrendRow& row : rows) {
    double value = value_of(row, options);
    if (!std::isfinite(value) || value <= 0 || !selects_threads(options, row.threads)) continue;
    if (options.ratio) {
      const auto reference = reference_ms.find(workload_key(row));
      if (row.backend == kReferenceBackend || reference == reference_ms.end()) continue;
      if (!std::isfinite(reference->second) || reference->second <= 0) continue;
      value /= reference->second;
    }
    Series shape{row.suite,
                 row.workload,
                 row.size,
                 row.backend,
                 row.device,
                 row.phase,
                 row.phase_index,
                 row.threads,
                 options.ratio ? "" : row.fingerprint,
                 {},
                 {}};
    if (!std::regex_search(shape.filter_id(), filter)) continue;
    auto [entry, fresh] = by_key.try_emplace(shape.fingerprint + "|" + shape.name(), std::move(shape));
    entry->second.points.push_back({row.run_id, row.git_commit, row.started_at, row.branch, value});
  }

  std::vector<Series> all;
  for (auto& [key, series] : by_key) {
    if (series.points.size() > options.last)
      series.points.erase(series.points.begin(), series.points.end() - static_cast<std::ptrdiff_t>(options.last));
    place_steps(series, options.steps);
    all.push_back(std::move(series));
  }
  return all;
}

}  // namespace pb::history
