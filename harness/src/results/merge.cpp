// `merge`: shards of one run joined into one run directory (merge.hpp).

#include "results/merge.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include "phasebench/backend.hpp"
#include "phasebench/errors.hpp"
#include "phasebench/files.hpp"
#include "results/results_model.hpp"

namespace pb::merge {
namespace {
namespace fs = std::filesystem;
using results::RunData;

struct ShardId {
  int index = 0;  // 1-based; 0: the run was not a shard
  int count = 0;
};

ShardId shard_of(const RunData& run) {
  if (!run.machine.is_object() || !run.machine.contains("shard")) return {};
  try {
    return {run.machine["shard"].at("index").get<int>(), run.machine["shard"].at("count").get<int>()};
  } catch (const nlohmann::json::exception&) {
    throw InputError(run.label + ": machine.json's \"shard\" is not {\"index\": i, \"count\": n}");
  }
}

// Returns whether the runs come from several machines (allowed only with --allow-mixed).
bool check_machines(const std::vector<RunData>& runs, bool allow_mixed, std::vector<std::string>& notes) {
  std::set<std::string> fingerprints;
  std::string listing;
  for (const RunData& run : runs) {
    const std::string fingerprint = run.fingerprint().empty() ? "unknown" : run.fingerprint();
    fingerprints.insert(fingerprint);
    listing += "\n  " + fingerprint + "  " + run.label;
  }
  if (fingerprints.size() <= 1) return false;
  if (!allow_mixed)
    throw InputError("the runs come from different machines (or one lacks machine.json):" + listing +
                     "\ntheir absolute times do not belong in one run; pass --allow-mixed to merge anyway");
  notes.push_back("warning: merged runs of " + std::to_string(fingerprints.size()) +
                  " machines; the merged fingerprint is \"mixed\"");
  return true;
}

// Returns "i/n" of each shard of the inputs' count that no input is (the cases they hold are absent).
std::vector<std::string> check_shards(const std::vector<RunData>& runs, std::vector<std::string>& notes) {
  std::map<int, std::string> seen;
  int count = 0;
  for (const RunData& run : runs) {
    const ShardId shard = shard_of(run);
    if (shard.index == 0) continue;
    if (count && shard.count != count)
      throw InputError(run.label + " is shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) +
                       " but another input was cut into " + std::to_string(count) + " shards");
    count = shard.count;
    if (const auto [it, inserted] = seen.emplace(shard.index, run.label); !inserted)
      throw InputError("shard " + std::to_string(shard.index) + "/" + std::to_string(count) + " given twice: " +
                       it->second + " and " + run.label);
  }
  std::vector<std::string> missing;
  for (int index = 1; index <= count; ++index)
    if (!seen.count(index)) {
      missing.push_back(std::to_string(index) + "/" + std::to_string(count));
      notes.push_back("warning: shard " + missing.back() +
                      " is not among the inputs: its cases are missing, and the merged run is marked incomplete");
    }
  return missing;
}

std::string listing(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += "\n  " + line;
  return text;
}

// The inputs' catalogs as one. Catalogs that disagree about a workload both have mean the runs were
// checked and claimed against different definitions under one name: refused unless --allow-mixed,
// which keeps the first input's definition.
catalog::Catalog merged_catalog(const std::vector<RunData>& runs, bool allow_mixed, std::vector<std::string>& notes) {
  catalog::Catalog merged;
  int without = 0;
  for (const RunData& run : runs) {
    if (!run.catalog.saved) {
      ++without;
      continue;
    }
    if (const auto differ = catalog::differences(merged, run.catalog); !differ.empty()) {
      if (!allow_mixed)
        throw InputError("the catalog.json of " + run.label + " differs from the inputs before it:" + listing(differ) +
                         "\nthe runs were measured against different phases, claims or tolerances; pass "
                         "--allow-mixed to merge anyway (the first input's definitions are kept)");
      notes.push_back("warning: the inputs' catalogs differ (" + differ.front() + ", ...); kept the first input's");
    }
    merged = catalog::united(merged, run.catalog);
  }
  if (without && merged.saved)
    notes.push_back("note: " + std::to_string(without) + " of the inputs have no catalog.json (measured before "
                    "catalogs were saved): claims of workloads only they measured are unknown");
  return merged;
}

void add_samples(MergedRows& merged, const RunData& run, const ResultRow& row) {
  const std::string key = results::row_key(row);
  const auto found = run.samples.find(key);
  if (found != run.samples.end())
    append_samples(merged, row, found->second, run.cpu_samples.at(key), run.cpu_probe_samples.at(key));
}

// Rows keep their own run_id, so `compare --mode ratio` knows which rows were timed together.
MergedRows join_rows(const std::vector<RunData>& runs) {
  MergedRows merged;
  std::map<std::string, std::string> owner;  // row key -> the input it came from
  for (const RunData& run : runs) {
    for (const ResultRow& row : run.rows) {
      const std::string key = results::row_key(row);
      if (const auto [it, inserted] = owner.emplace(key, run.label); !inserted) {
        if (row.backend == kReferenceBackend) continue;  // every shard times the reference: keep one
        throw InputError(results::row_name(row) + " is in both " + it->second + " and " + run.label +
                         ": merge joins shards of one run, where each case runs in one shard");
      }
      merged.rows.push_back(row);
      add_samples(merged, run, row);
    }
  }
  const auto order = [](const ResultRow& r) {
    return std::tie(r.suite, r.workload, r.size, r.backend, r.device, r.phase_index);
  };
  std::stable_sort(merged.rows.begin(), merged.rows.end(),
                   [&](const ResultRow& a, const ResultRow& b) { return order(a) < order(b); });
  return merged;
}

// Missing shards, and inputs marked incomplete (merged with --allow-incomplete), make the merged run
// incomplete: its reason names them, "missing_shards" lists the shards to run, and its resume
// command resumes each incomplete input (then merge again).
void mark_completeness(nlohmann::json& machine, const std::vector<RunData>& runs,
                       const std::vector<std::string>& missing_shards, std::vector<std::string>& notes) {
  machine.erase("incomplete");
  std::string reasons, resume;
  if (!missing_shards.empty()) {
    reasons = (missing_shards.size() == 1 ? "shard " : "shards ") + missing_shards.front();
    for (size_t i = 1; i < missing_shards.size(); ++i) reasons += ", " + missing_shards[i];
    reasons += missing_shards.size() == 1 ? " is missing" : " are missing";
  }
  std::string incomplete_inputs;
  for (const RunData& run : runs) {
    const auto why = run.incomplete();
    if (!why) continue;
    notes.push_back("warning: " + run.label + " is an incomplete run (" + *why +
                    "); the merged run is marked incomplete");
    const ShardId shard = shard_of(run);
    const std::string which =
        shard.index ? "shard " + std::to_string(shard.index) + "/" + std::to_string(shard.count) + ", " : "";
    incomplete_inputs += (incomplete_inputs.empty() ? "" : ", ") + run.label + " (" + which + *why + ")";
    const nlohmann::json& mark = run.machine.value("incomplete", nlohmann::json());
    if (mark.is_object() && mark.contains("resume") && mark["resume"].is_string())
      resume += (resume.empty() ? "" : " && ") + mark["resume"].get<std::string>();
  }
  if (!incomplete_inputs.empty())
    reasons += (reasons.empty() ? "" : "; ") + std::string("merged from incomplete inputs: ") + incomplete_inputs;
  machine["complete"] = reasons.empty();
  if (reasons.empty()) return;
  std::string remedy = incomplete_inputs.empty() ? "" : "resume them";
  if (!missing_shards.empty())
    remedy = std::string(missing_shards.size() == 1 ? "run the missing shard" : "run the missing shards") +
             " with the same options" + (remedy.empty() ? "" : ", resume the incomplete inputs");
  machine["incomplete"] = {{"reason", reasons + "; " + remedy + " and merge again"}};
  if (!missing_shards.empty()) machine["incomplete"]["missing_shards"] = missing_shards;
  if (!resume.empty()) machine["incomplete"]["resume"] = resume;
}

nlohmann::json merged_machine(const std::vector<RunData>& runs, bool pooled, bool mixed, const std::string& run_id,
                              const std::vector<std::string>& missing_shards, std::vector<std::string>& notes) {
  nlohmann::json machine = runs.front().machine.is_object() ? runs.front().machine : nlohmann::json::object();
  machine.erase("shard");
  if (pooled && machine.contains("timing") && machine["timing"].is_object()) {
    int processes = 0;  // a pooled row's repetitions come from every input's worker processes
    for (const RunData& run : runs) processes += std::max(1, run.processes());
    machine["timing"]["processes"] = processes;
  }
  mark_completeness(machine, runs, missing_shards, notes);
  machine["run_id"] = run_id;
  if (mixed) machine["fingerprint"] = "mixed";
  machine["merged_from"] = nlohmann::json::array();
  for (const RunData& run : runs) {
    const ShardId shard = shard_of(run);
    machine["merged_from"].push_back({{"run", run.label},
                                      {"run_id", run.machine.value("run_id", "")},
                                      {"fingerprint", run.fingerprint()},
                                      {"shard", shard.index ? std::to_string(shard.index) + "/" +
                                                                  std::to_string(shard.count) : ""}});
  }
  return machine;
}

// Google Benchmark's JSON of every input: the first context, every input's benchmarks.
std::string merged_benchmark_json(const std::vector<RunData>& runs) {
  nlohmann::json merged = {{"benchmarks", nlohmann::json::array()}};
  for (const RunData& run : runs) {
    const fs::path path = fs::path(run.results_path).parent_path() / "benchmark.json";
    if (!fs::exists(path)) continue;
    std::ifstream in(path);
    const nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
    if (json.is_discarded() || !json.is_object()) throw InputError(path.string() + " is not valid JSON");
    if (!merged.contains("context") && json.contains("context")) merged["context"] = json["context"];
    for (const auto& benchmark : json.value("benchmarks", nlohmann::json::array()))
      merged["benchmarks"].push_back(benchmark);
  }
  return merged.dump(2) + "\n";
}

}  // namespace

void append_samples(MergedRows& merged, const ResultRow& row, const std::vector<double>& samples,
                    const std::vector<double>& cpu_samples, const std::vector<double>& cpu_probes) {
  const auto at = [](const std::vector<double>& values, size_t rep) {
    return rep < values.size() ? values[rep] : kMissing;
  };
  for (size_t rep = 0; rep < samples.size(); ++rep) {
    SampleRow sample{row.workload,          row.size,     row.backend, row.device,          row.phase,
                     static_cast<int>(rep), samples[rep], row.suite,   at(cpu_samples, rep)};
    sample.cpu_probe_us = at(cpu_probes, rep);
    merged.samples.push_back(std::move(sample));
  }
}

std::vector<std::string> merge_runs(const MergeOptions& options) {
  if (fs::exists(options.out_dir))
    throw InputError("--out " + options.out_dir + " already exists; phasebench never overwrites results");
  std::vector<RunData> runs;
  for (const std::string& path : options.runs) {
    runs.push_back(results::load_run(path));
    if (!options.allow_incomplete) results::require_complete(runs.back(), "merge");
  }
  std::stable_sort(runs.begin(), runs.end(),
                   [](const RunData& a, const RunData& b) { return shard_of(a).index < shard_of(b).index; });
  std::vector<std::string> notes;
  const bool mixed = check_machines(runs, options.allow_mixed, notes);
  const std::vector<std::string> missing_shards = options.pool ? std::vector<std::string>() : check_shards(runs, notes);
  const catalog::Catalog catalog = merged_catalog(runs, options.allow_mixed, notes);
  const std::string run_id = make_run_id();
  MergedRows merged = options.pool ? pool_rows(runs, run_id, catalog) : join_rows(runs);
  if (!options.pool) results::derive_columns(merged.rows, {nullptr, &catalog, std::nullopt});  // the claims
  nlohmann::json machine = merged_machine(runs, options.pool, mixed, run_id, missing_shards, notes);
  notes.push_back(std::string(options.pool ? "pooled " : "merged ") + std::to_string(runs.size()) + " runs into " +
                  options.out_dir + ": " + std::to_string(merged.rows.size()) + " rows, " +
                  std::to_string(merged.samples.size()) + " samples");
  results::write_run_directory(options.out_dir, {std::move(merged.rows), std::move(merged.samples),
                                                 std::move(machine), catalog, merged_benchmark_json(runs), {}});
  return notes;
}

}  // namespace pb::merge
