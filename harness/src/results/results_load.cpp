// Reading a run back (results_model.hpp): results.csv through the CSV field tables
// (results_csv.cpp), the samples beside it, machine.json and catalog.json.

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "phasebench/backend.hpp"
#include "phasebench/errors.hpp"
#include "results/results_model.hpp"

namespace pb::results {
namespace fs = std::filesystem;

std::string row_key_of(const std::string& suite, const std::string& workload, const std::string& size,
                       const std::string& backend, const std::string& device, const std::string& phase, int threads) {
  return suite + "/" + workload + "/" + size + "/" + backend + "/" + device + "/" + phase + "/" +
         std::to_string(threads);
}

std::string row_key(const ResultRow& row) {
  return row_key_of(row.suite, row.workload, row.size, row.backend, row.device, row.phase, row.threads);
}

std::string row_key(const SampleRow& sample) {
  return row_key_of(sample.suite, sample.workload, sample.size, sample.backend, sample.device, sample.phase,
                    sample.threads);
}

const ResultRow* first_row_at_several_thread_counts(const std::vector<ResultRow>& rows) {
  std::set<std::string> seen;
  for (const ResultRow& row : rows) {
    ResultRow without_threads = row;
    without_threads.threads = 0;
    if (!seen.insert(row_key(without_threads)).second) return &row;
  }
  return nullptr;
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

int RunData::processes() const {
  if (!machine.is_object() || !machine.contains("timing") || !machine["timing"].is_object()) return 0;
  const nlohmann::json& processes = machine["timing"].value("processes", nlohmann::json(1));
  return processes.is_number_integer() ? processes.get<int>() : 0;
}

namespace {

// A GPU device of the run's backends (machine.json "backends") that the ceilings do not name gets
// none: a run from before the GPU probe must not measure its GPU rows against the CPU.
void no_ceilings_for_unnamed_gpus(roofline::Ceilings& ceilings, const nlohmann::json& machine) {
  if (!machine.contains("backends") || !machine["backends"].is_object()) return;
  for (const auto& [backend, entry] : machine["backends"].items()) {
    if (!entry.is_object() || !entry.contains("devices") || !entry["devices"].is_array()) continue;
    for (const nlohmann::json& device : entry["devices"]) {
      if (!device.is_object() || device.value("gpu", false) != true || !device.contains("name")) continue;
      const std::string name = device["name"].is_string() ? device["name"].get<std::string>() : "";
      if (name.empty() || ceilings.devices.count(name) || ceilings.devices_without_ceilings.count(name)) continue;
      ceilings.devices_without_ceilings[name] = "machine.json has no GPU ceilings (a run from before the GPU probe)";
    }
  }
}

}  // namespace

std::optional<roofline::Ceilings> RunData::ceilings(std::string* why_not) const {
  std::string problem;
  if (machine.is_null()) problem = "no machine.json beside the results";
  else if (!machine.is_object() || !machine.contains("roofline"))
    problem = "machine.json has no \"roofline\" (a run from before the roofline probe)";
  else
    try {
      roofline::Ceilings ceilings = roofline::from_json(machine["roofline"]);
      no_ceilings_for_unnamed_gpus(ceilings, machine);
      return ceilings;
    } catch (const InputError& error) {
      problem = error.what();
    }
  if (why_not) *why_not = problem;
  return std::nullopt;
}

std::string RunData::directory() const {
  const fs::path parent = fs::path(results_path).parent_path();
  return parent.empty() ? "." : parent.string();
}

namespace {

// "stopped by SIGTERM; 12 of 40 cases done; resume with: ...", from what `mark` holds.
std::string incomplete_text(const nlohmann::json& mark) {
  const auto text_of = [&](const char* key) {
    return mark.is_object() && mark.contains(key) && mark[key].is_string() ? mark[key].get<std::string>() : "";
  };
  const auto has_count = [&](const char* key) {
    return mark.is_object() && mark.contains(key) && mark[key].is_number_integer();
  };
  std::string text = text_of("reason").empty() ? "no reason recorded" : text_of("reason");
  if (has_count("cases_done") && has_count("cases_planned"))
    text += "; " + mark["cases_done"].dump() + " of " + mark["cases_planned"].dump() + " cases done";
  if (!text_of("resume").empty()) text += "; resume with: " + text_of("resume");
  return text;
}

}  // namespace

std::optional<std::string> RunData::incomplete() const {
  if (!machine.is_object()) return std::nullopt;
  const bool said_incomplete = machine.contains("incomplete") && !machine["incomplete"].is_null();
  const bool said_not_complete = machine.contains("complete") && machine["complete"] != true;
  if (!said_incomplete && !said_not_complete) return std::nullopt;
  return incomplete_text(machine.value("incomplete", nlohmann::json()));
}

void require_complete(const RunData& run, const std::string& command) {
  const std::optional<std::string> why = run.incomplete();
  if (!why) return;
  throw InputError(run.directory() + " is an incomplete run (" + *why + "); " + command +
                   " refuses incomplete runs, since the cases they never reached would read as missing rows: "
                   "resume it, or pass --allow-incomplete to use it as it is");
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

// Older samples.csv files have no suite or threads column: such a sample belongs to the one row
// that matches everything else.
std::string sample_key(const SampleRow& sample, const std::map<std::string, std::string>& by_partial_key) {
  if (!sample.suite.empty() && sample.threads > 0) return row_key(sample);
  const auto found = by_partial_key.find(row_key(sample));
  return found == by_partial_key.end() ? row_key(sample) : found->second;
}

// Samples and rows must describe the same cases: a sample of no row, or a timed row whose
// repetitions are not all in samples.csv, means the two files do not belong together.
void check_samples_match_rows(const RunData& run, const std::string& samples_path,
                              const std::map<std::string, size_t>& first_index) {
  std::map<std::string, const ResultRow*> rows;
  for (const ResultRow& row : run.rows) rows[row_key(row)] = &row;
  for (const auto& [key, samples] : run.samples)
    if (!rows.count(key))
      throw InputError(where(samples_path, first_index.at(key)) + ": " + std::to_string(samples.size()) +
                       " samples of " + key + ", which has no row in " + run.results_path +
                       " (files from different runs?)");
  for (size_t i = 0; i < run.rows.size(); ++i) {
    const ResultRow& row = run.rows[i];
    if (row.status != Status::Ok || std::isnan(row.median_ms) || row.reps <= 0) continue;
    const auto found = run.samples.find(row_key(row));
    const size_t count = found == run.samples.end() ? 0 : found->second.size();
    if (count != static_cast<size_t>(row.reps))
      throw InputError(where(run.results_path, i) + ": row " + row_name(row) + " has " + std::to_string(row.reps) +
                       " repetitions but " + samples_path + " holds " + std::to_string(count) + " of them");
  }
}

// A run's rows carry its run id, as machine.json does: results.csv beside another run's
// machine.json would report that machine for rows it never ran. Merged runs keep each row's own
// id (merge.cpp) and list their inputs, so only unmerged runs are held to one id.
void check_run_ids(const RunData& run, const fs::path& machine_path) {
  const nlohmann::json& machine = run.machine;
  if (!machine.is_object() || machine.contains("merged_from") || !machine.contains("run_id") ||
      !machine["run_id"].is_string())
    return;
  const std::string id = machine["run_id"].get<std::string>();
  for (size_t i = 0; i < run.rows.size(); ++i)
    if (!run.rows[i].run_id.empty() && run.rows[i].run_id != id)
      throw InputError(where(run.results_path, i) + ", column run_id: '" + run.rows[i].run_id + "', but " +
                       machine_path.string() + " is run '" + id + "' (files from different runs?)");
}

// machine.json is free-form, but the keys the readers trust must have their types: a fingerprint
// that is a number would read as "no fingerprint", and a run_id that is not a string would skip
// the run-id check, each silently. (A malformed "complete"/"incomplete" mark reads as incomplete,
// a malformed "shard" is refused by merge and a malformed "roofline" is reported as missing, each
// where it is used.)
void check_machine_types(const nlohmann::json& machine, const fs::path& path) {
  if (!machine.is_object())
    throw InputError(path.string() + ": expected a JSON object, found " + std::string(machine.type_name()));
  for (const char* key : {"fingerprint", "run_id"})
    if (machine.contains(key) && !machine[key].is_string())
      throw InputError(path.string() + ": \"" + key + "\" is " + std::string(machine[key].type_name()) +
                       ", expected a string");
}

nlohmann::json read_machine(const fs::path& path) {
  if (!fs::exists(path)) return nullptr;
  std::ifstream in(path);
  nlohmann::json machine;
  try {
    machine = nlohmann::json::parse(in);  // its message names the line and column
  } catch (const nlohmann::json::exception& error) {
    throw InputError(path.string() + " is not valid JSON: " + error.what());
  }
  check_machine_types(machine, path);
  return machine;
}

// A row of a workload the catalog describes must be one of its phases, under the same name: a
// row the catalog does not know would be compared and claimed against another phase's entry.
// (The reverse, a catalog phase with no row, is a case this run did not select or could not run:
// compare and report list it as missing.)
void check_rows_in_catalog(const RunData& run, const fs::path& catalog_path) {
  for (size_t i = 0; i < run.rows.size(); ++i) {
    const ResultRow& row = run.rows[i];
    const catalog::WorkloadEntry* entry = run.catalog.find(row.suite, row.workload);
    if (row.backend == kReferenceBackend || !entry) continue;
    const PhaseInfo* phase = entry->phase(row.phase_index);
    if (!phase)
      throw InputError(where(run.results_path, i) + ": row " + row_name(row) + " is phase " +
                       std::to_string(row.phase_index) + ", which " + catalog_path.string() + " does not list for " +
                       entry->name + " (files from different runs?)");
    if (phase->name != row.phase)
      throw InputError(where(run.results_path, i) + ", column phase: '" + row.phase + "', but " +
                       catalog_path.string() + " names phase " + std::to_string(row.phase_index) + " of " +
                       entry->name + " '" + phase->name + "' (files from different runs?)");
  }
}

}  // namespace

IndexedSamples index_samples(const std::vector<SampleRow>& samples, const std::vector<ResultRow>& rows,
                             const std::string& source) {
  // The keys of older samples, without suite or threads, of the rows they name alone.
  std::map<std::string, std::string> by_partial_key;
  std::set<std::string> ambiguous;
  const auto add_partial_key = [&](const ResultRow& partial, const ResultRow& row) {
    if (!by_partial_key.emplace(row_key(partial), row_key(row)).second) ambiguous.insert(row_key(partial));
  };
  for (const ResultRow& row : rows) {
    ResultRow partial = row;
    partial.threads = 0;
    add_partial_key(partial, row);
    partial.suite.clear();
    add_partial_key(partial, row);
  }
  for (const std::string& key : ambiguous) by_partial_key.erase(key);
  struct Repetition {
    int rep;
    double ms, cpu_ms, others_cores, rep_ms, cpu_probe_us;
    bool operator<(const Repetition& other) const { return rep < other.rep; }
  };
  std::map<std::string, std::vector<Repetition>> by_rep;
  IndexedSamples indexed;
  for (size_t i = 0; i < samples.size(); ++i) {
    const SampleRow& sample = samples[i];
    const std::string key = sample_key(sample, by_partial_key);
    indexed.row_keys.push_back(key);
    auto& reps = by_rep[key];
    indexed.first_index.emplace(key, i);
    if (std::any_of(reps.begin(), reps.end(), [&](const Repetition& r) { return r.rep == sample.rep; }))
      throw InputError(where(source, i) + ": repetition " + std::to_string(sample.rep) + " of " + row_key(sample) +
                       " appears twice");
    reps.push_back({sample.rep, sample.ms, sample.cpu_ms, sample.others_cores, sample.rep_ms, sample.cpu_probe_us});
  }
  for (auto& [key, reps] : by_rep) {
    std::sort(reps.begin(), reps.end());
    for (const Repetition& rep : reps) {
      indexed.wall[key].push_back(rep.ms);
      indexed.cpu[key].push_back(rep.cpu_ms);
      indexed.others_cores[key].push_back(rep.others_cores);
      indexed.rep_ms[key].push_back(rep.rep_ms);
      indexed.cpu_probe[key].push_back(rep.cpu_probe_us);
    }
  }
  return indexed;
}

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
  IndexedSamples indexed = index_samples(run.sample_rows, run.rows, samples.string());
  run.samples = std::move(indexed.wall);
  run.cpu_samples = std::move(indexed.cpu);
  run.cpu_probe_samples = std::move(indexed.cpu_probe);
  run.sample_row_keys = std::move(indexed.row_keys);
  check_samples_match_rows(run, samples.string(), indexed.first_index);
  run.machine = read_machine(dir / "machine.json");
  check_run_ids(run, dir / "machine.json");
  run.catalog = catalog::read(dir);
  check_rows_in_catalog(run, dir / catalog::kFileName);
  // The recorded timing columns are the run's record; its claims are the catalog's.
  derive_columns(run.rows, {nullptr, &run.catalog, std::nullopt});
  return run;
}

}  // namespace pb::results
