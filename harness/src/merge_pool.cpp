// `merge --pool`: repeated runs of the same cases as one run (merge.hpp).

#include <algorithm>
#include <cmath>
#include <map>

#include "compare.hpp"
#include "merge.hpp"
#include "phasebench/runner.hpp"
#include "row_timing.hpp"

namespace pb::merge {
namespace {

using Samples = std::map<std::string, std::vector<double>>;  // by row key, runs one after another

// The timing columns from the pooled samples. Throughput columns are proportional to 1 / median.
void summarize_pooled(ResultRow& row, const std::vector<double>& samples) {
  const double median_before = row.median_ms;
  set_time_columns(row, samples);
  const double faster_by = median_before / row.median_ms;
  for (double* throughput : {&row.gb_per_s, &row.gflop_per_s, &row.roofline_pct}) *throughput *= faster_by;
}

// The rows `run` divides by, with the same rules: among timed rows of the same workload and size,
// the nearest lower phase and the lowest phase of the same backend and device, and the reference.
struct SpeedupBases {
  const ResultRow* previous = nullptr;
  const ResultRow* first = nullptr;
  const ResultRow* reference = nullptr;
};

SpeedupBases speedup_bases(const std::vector<ResultRow>& rows, const Samples& samples, const ResultRow& row) {
  SpeedupBases bases;
  for (const ResultRow& other : rows) {
    if (!samples.count(compare::row_key(other)) || other.workload != row.workload || other.suite != row.suite ||
        other.size != row.size)
      continue;
    if (other.backend == "reference" && !bases.reference) bases.reference = &other;
    if (other.backend != row.backend || other.device != row.device || other.phase_index > row.phase_index) continue;
    if (!bases.first || other.phase_index < bases.first->phase_index) bases.first = &other;
    if (other.phase_index < row.phase_index && (!bases.previous || other.phase_index > bases.previous->phase_index))
      bases.previous = &other;
  }
  return bases;
}

void recompute_speedups(std::vector<ResultRow>& rows, const Samples& samples) {
  for (ResultRow& row : rows) {
    const auto mine = samples.find(compare::row_key(row));
    if (mine == samples.end()) continue;
    const SpeedupBases bases = speedup_bases(rows, samples, row);
    const auto of = [&](const ResultRow* base) { return samples.at(compare::row_key(*base)); };
    if (bases.previous)
      set_speedup(row.speedup_vs_prev, row.speedup_vs_prev_ci_low, row.speedup_vs_prev_ci_high, of(bases.previous),
                  mine->second);
    if (bases.first)
      set_speedup(row.speedup_vs_phase0, row.speedup_vs_phase0_ci_low, row.speedup_vs_phase0_ci_high,
                  of(bases.first), mine->second);
    if (bases.reference)
      set_speedup(row.speedup_vs_reference, row.speedup_vs_reference_ci_low, row.speedup_vs_reference_ci_high,
                  of(bases.reference), mine->second);
  }
}

}  // namespace

MergedRows pool_rows(const std::vector<compare::RunData>& runs, const std::string& run_id) {
  MergedRows pooled;
  std::map<std::string, size_t> index;  // row key -> position in pooled.rows
  Samples samples, cpu_samples;
  for (const compare::RunData& run : runs) {
    for (const ResultRow& row : run.rows) {
      const std::string key = compare::row_key(row);
      const auto [it, inserted] = index.emplace(key, pooled.rows.size());
      if (inserted) pooled.rows.push_back(row);
      ResultRow& kept = pooled.rows[it->second];
      if (is_failure(row.status) && !is_failure(kept.status)) {  // a failure anywhere fails the pool
        kept.status = row.status;
        kept.reason = row.reason;
      }
      if (const auto found = run.samples.find(key); found != run.samples.end()) {
        samples[key].insert(samples[key].end(), found->second.begin(), found->second.end());
        const std::vector<double>& cpu = run.cpu_samples.at(key);
        cpu_samples[key].insert(cpu_samples[key].end(), cpu.begin(), cpu.end());
      }
    }
  }
  for (auto it = samples.begin(); it != samples.end();) {  // failed rows keep no samples
    const ResultRow& row = pooled.rows[index.at(it->first)];
    it = row.status == "OK" ? std::next(it) : samples.erase(it);
  }
  for (ResultRow& row : pooled.rows) {
    row.run_id = run_id;  // one run now: `compare --mode ratio` pairs its repetitions
    if (const auto found = samples.find(compare::row_key(row)); found != samples.end())
      summarize_pooled(row, found->second);
  }
  recompute_speedups(pooled.rows, samples);
  for (const ResultRow& row : pooled.rows)
    if (const auto found = samples.find(compare::row_key(row)); found != samples.end())
      append_samples(pooled, row, found->second, cpu_samples.at(found->first));
  return pooled;
}

}  // namespace pb::merge
