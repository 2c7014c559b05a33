// `merge --pool`: repeated runs of the same cases as one run (merge.hpp).

#include <map>

#include "results/merge.hpp"
#include "results/results_model.hpp"

namespace pb::merge {

MergedRows pool_rows(const std::vector<results::RunData>& runs, const std::string& run_id,
                     const catalog::Catalog& catalog) {
  MergedRows pooled;
  std::map<std::string, size_t> index;  // row key -> position in pooled.rows
  results::SampleIndex samples, cpu_samples, cpu_probes;  // the runs' repetitions one after another
  std::map<std::string, std::string> disturbed;  // row key -> the last input run that was disturbed
  for (const results::RunData& run : runs) {
    for (const ResultRow& row : run.rows) {
      const std::string key = results::row_key(row);
      const auto [it, inserted] = index.emplace(key, pooled.rows.size());
      if (inserted) pooled.rows.push_back(row);
      ResultRow& kept = pooled.rows[it->second];
      if (is_failure(row.status) && !is_failure(kept.status)) {  // a failure anywhere fails the pool
        kept.status = row.status;
        kept.reason = row.reason;
      }
      if (!row.disturbed.empty()) disturbed[key] = run.label + ": " + row.disturbed;  // so is a disturbance
      if (const auto found = run.samples.find(key); found != run.samples.end()) {
        samples[key].insert(samples[key].end(), found->second.begin(), found->second.end());
        const std::vector<double>& cpu = run.cpu_samples.at(key);
        cpu_samples[key].insert(cpu_samples[key].end(), cpu.begin(), cpu.end());
        const std::vector<double>& probes = run.cpu_probe_samples.at(key);
        cpu_probes[key].insert(cpu_probes[key].end(), probes.begin(), probes.end());
      }
    }
  }
  for (auto it = samples.begin(); it != samples.end();) {  // failed rows keep no samples
    const ResultRow& row = pooled.rows[index.at(it->first)];
    it = row.status == Status::Ok ? std::next(it) : samples.erase(it);
  }
  for (ResultRow& row : pooled.rows) row.run_id = run_id;  // one run now: `compare --mode ratio` pairs its repetitions
  results::derive_columns(pooled.rows, {&samples, &catalog, runs.front().ceilings()});
  // The pool's repetitions come from several processes, whose levels may differ by more than one
  // run's noise: a pooled row is disturbed where an input's row was, not by its pooled spread.
  for (ResultRow& row : pooled.rows) {
    const auto found = disturbed.find(results::row_key(row));
    row.disturbed = found == disturbed.end() ? "" : found->second;
  }
  for (const ResultRow& row : pooled.rows)
    if (const auto found = samples.find(results::row_key(row)); found != samples.end())
      append_samples(pooled, row, found->second, cpu_samples.at(found->first), cpu_probes.at(found->first));
  return pooled;
}

}  // namespace pb::merge
