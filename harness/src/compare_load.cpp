// Reading a run back for `compare`, `merge` and `baseline`: results.csv through the CSV field
// tables (results_csv.cpp), the samples beside it, machine.json.

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "compare.hpp"
#include "phasebench/errors.hpp"

namespace pb::compare {
namespace fs = std::filesystem;

std::string row_key(const ResultRow& row) {
  return row.suite + "/" + row.workload + "/" + row.size + "/" + row.backend + "/" + row.device + "/" +
         row.phase;
}

std::string row_key(const SampleRow& sample) {
  return sample.suite + "/" + sample.workload + "/" + sample.size + "/" + sample.backend + "/" +
         sample.device + "/" + sample.phase;
}

std::string row_name(const ResultRow& row) {
  return row.suite + "/" + row.workload + "/" + row.size + "/" + row.backend + "/" + row.device + "/" +
         std::to_string(row.phase_index) + "_" + row.phase;
}

std::string RunData::fingerprint() const {
  if (machine.is_object() && machine.contains("fingerprint") && machine["fingerprint"].is_string())
    return machine["fingerprint"].get<std::string>();
  return "";
}

namespace {

// The writer puts one record per line after the header, so row i is on line i + 2.
std::string where(const std::string& path, size_t row_index) {
  return path + " line " + std::to_string(row_index + 2);
}

void check_rows(const RunData& run) {
  std::map<std::string, size_t> seen;
  for (size_t i = 0; i < run.rows.size(); ++i) {
    const ResultRow& row = run.rows[i];
    if (row.schema > kResultsSchemaVersion)
      throw InputError(where(run.results_path, i) + ": schema " + std::to_string(row.schema) +
                       " is newer than this phasebench reads (" + std::to_string(kResultsSchemaVersion) +
                       "); compare with a newer phasebench");
    const auto [previous, inserted] = seen.emplace(row_key(row), i);
    if (!inserted)
      throw InputError(where(run.results_path, i) + ": row " + row_name(row) + " already appeared on line " +
                       std::to_string(previous->second + 2) + " (a run has one row per case)");
  }
}

// Older samples.csv files have no suite column: such a sample belongs to the one row that
// matches everything else.
std::string sample_key(const SampleRow& sample, const std::map<std::string, std::string>& by_key_without_suite) {
  if (!sample.suite.empty()) return row_key(sample);
  const auto found = by_key_without_suite.find(row_key(sample));
  return found == by_key_without_suite.end() ? row_key(sample) : found->second;
}

void index_samples(RunData& run, const std::string& samples_path) {
  std::map<std::string, std::string> by_key_without_suite;
  for (const ResultRow& row : run.rows) {
    ResultRow anonymous = row;
    anonymous.suite.clear();
    by_key_without_suite[row_key(anonymous)] = row_key(row);
  }
  struct Repetition {
    int rep;
    double ms, cpu_ms;
    bool operator<(const Repetition& other) const { return rep < other.rep; }
  };
  std::map<std::string, std::vector<Repetition>> by_rep;
  for (size_t i = 0; i < run.sample_rows.size(); ++i) {
    const SampleRow& sample = run.sample_rows[i];
    auto& reps = by_rep[sample_key(sample, by_key_without_suite)];
    if (std::any_of(reps.begin(), reps.end(), [&](const Repetition& r) { return r.rep == sample.rep; }))
      throw InputError(where(samples_path, i) + ": repetition " + std::to_string(sample.rep) + " of " +
                       row_key(sample) + " appears twice");
    reps.push_back({sample.rep, sample.ms, sample.cpu_ms});
  }
  for (auto& [key, reps] : by_rep) {
    std::sort(reps.begin(), reps.end());
    for (const Repetition& rep : reps) {
      run.samples[key].push_back(rep.ms);
      run.cpu_samples[key].push_back(rep.cpu_ms);
    }
  }
}

nlohmann::json read_machine(const fs::path& path) {
  if (!fs::exists(path)) return nullptr;
  std::ifstream in(path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw InputError(path.string() + " is not valid JSON: " + error.what());
  }
}

}  // namespace

RunData load_run(const std::string& path) {
  const fs::path given(path);
  if (!fs::exists(given))
    throw InputError("'" + path + "' does not exist: give a run directory or its results.csv");
  const fs::path results = fs::is_directory(given) ? given / "results.csv" : given;
  if (!fs::exists(results)) throw InputError(path + " holds no results.csv: is it a run directory?");
  const fs::path dir = results.has_parent_path() ? results.parent_path() : fs::path(".");
  RunData run;
  run.label = path;
  run.results_path = results.string();
  run.rows = read_results_csv(run.results_path);
  check_rows(run);
  const fs::path samples = dir / "samples.csv";
  if (!fs::exists(samples))
    throw InputError(samples.string() + " not found: the repetition samples must sit beside " +
                     run.results_path + " (a run directory has both)");
  run.sample_rows = read_samples_csv(samples.string());
  index_samples(run, samples.string());
  run.machine = read_machine(dir / "machine.json");
  return run;
}

}  // namespace pb::compare
