// catalog.json (catalog.hpp): built from the registry by `run`, read back by everything else.

#include "results/catalog.hpp"

#include <cmath>
#include <fstream>

#include "phasebench/errors.hpp"

namespace pb::catalog {
namespace fs = std::filesystem;
using nlohmann::json;
using ordered = nlohmann::ordered_json;  // written in the order a reader expects, not sorted

// ---- lookups -------------------------------------------------------------------------------------

const PhaseInfo* WorkloadEntry::phase(int index) const {
  for (const PhaseInfo& info : phases)
    if (info.index == index) return &info;
  return nullptr;
}

const WorkloadEntry* Catalog::find(const std::string& suite, const std::string& workload) const {
  const auto found = workloads.find(suite + "/" + workload);
  return found == workloads.end() ? nullptr : &found->second;
}

std::string Catalog::unknown_because(const std::string& suite, const std::string& workload) const {
  if (!saved) return kNoCatalogNote;
  if (!find(suite, workload)) return "the run's catalog.json has no entry for " + suite + "/" + workload;
  return "";
}

// ---- building ------------------------------------------------------------------------------------

Catalog build(const std::vector<std::shared_ptr<const Workload>>& workloads, const std::vector<SizeClass>& sizes) {
  Catalog catalog;
  catalog.saved = true;
  for (const auto& workload : workloads) {
    WorkloadEntry entry{workload->full_name(), workload->description(), workload->phases(),
                        workload->cumulative_claim(), {}};
    for (const SizeClass size : sizes) {
      SizeEntry& at_size = entry.sizes[to_string(size)];
      at_size.shape = workload->shape(size);
      at_size.work = workload->work(size);
      for (const PhaseInfo& phase : entry.phases)
        at_size.checks[phase.index] = workload->outputs_for(phase.index, size);
    }
    catalog.workloads[entry.name] = std::move(entry);
  }
  return catalog;
}

// ---- JSON ----------------------------------------------------------------------------------------

namespace {

// JSON has no NaN: an unclaimed range is null.
ordered number_or_null(double value) { return std::isnan(value) ? ordered(nullptr) : ordered(value); }
double number_or_nan(const json& value) { return value.is_null() ? kMissing : value.get<double>(); }

ordered phase_json(const PhaseInfo& phase) {
  ordered needs = ordered::array();
  for (Capability need : phase.needs) needs.push_back(std::string(to_string(need)));
  return {{"index", phase.index},
          {"name", phase.name},
          {"description", phase.description},
          {"exact", phase.exact},
          {"claimed_min", number_or_null(phase.claimed_min)},
          {"claimed_max", number_or_null(phase.claimed_max)},
          {"needs", needs},
          {"switches_off", phase.switches_off},
          {"claim_region", phase.claim_region},
          {"claimed_region_op_cut", number_or_null(phase.claimed_region_op_cut)}};
}

PhaseInfo phase_from(const json& value) {
  PhaseInfo phase;
  phase.index = value.at("index").get<int>();
  phase.name = value.at("name").get<std::string>();
  phase.description = value.value("description", "");
  phase.exact = value.value("exact", true);
  phase.claimed_min = number_or_nan(value.at("claimed_min"));
  phase.claimed_max = number_or_nan(value.at("claimed_max"));
  for (const json& need : value.value("needs", json::array())) {
    const auto capability = parse_capability(need.get<std::string>());
    if (!capability) throw InputError("unknown capability '" + need.get<std::string>() + "' in phase " + phase.name);
    phase.needs.push_back(*capability);
  }
  phase.switches_off = value.value("switches_off", std::vector<std::string>{});
  // Added later: optional, so catalogs of older runs still load.
  phase.claim_region = value.value("claim_region", "");
  if (value.contains("claimed_region_op_cut")) phase.claimed_region_op_cut = number_or_nan(value.at("claimed_region_op_cut"));
  return phase;
}

ordered claim_json(const PhaseInfo& claim) {
  return {{"claimed_min", number_or_null(claim.claimed_min)},
          {"claimed_max", number_or_null(claim.claimed_max)},
          {"words", claim.name},
          {"last_phase", claim.index == 0 ? ordered(nullptr) : ordered(claim.index)}};
}

PhaseInfo claim_from(const json& value) {
  PhaseInfo claim;
  claim.claimed_min = number_or_nan(value.at("claimed_min"));
  claim.claimed_max = number_or_nan(value.at("claimed_max"));
  claim.name = value.value("words", "");
  claim.index = value.at("last_phase").is_null() ? 0 : value.at("last_phase").get<int>();
  return claim;
}

}  // namespace

ordered output_json(const OutputSpec& spec) {
  ordered out = {{"name", spec.name}, {"tolerance", spec.tolerance}, {"reason", spec.tolerance_reason},
              {"per_step", spec.per_step}, {"step_budget", spec.step_budget}};
  if (!spec.reference.empty()) out["reference"] = spec.reference;
  return out;
}

OutputSpec output_from(const json& value) {
  OutputSpec spec(value.at("name").get<std::string>(), value.at("tolerance").get<double>(),
                  value.value("reason", ""));
  spec.reference = value.value("reference", "");
  spec.per_step = value.value("per_step", false);
  spec.step_budget = value.value("step_budget", std::vector<double>{});
  return spec;
}

namespace {

ordered size_json(const SizeEntry& size) {
  ordered checks = ordered::array();
  for (const auto& [phase, outputs] : size.checks) {
    ordered list = ordered::array();
    for (const OutputSpec& spec : outputs) list.push_back(output_json(spec));
    checks.push_back({{"phase", phase}, {"outputs", list}});
  }
  return {{"shape", size.shape},
          {"flops_per_iter", size.work.flops},
          {"bytes_per_iter", size.work.bytes},
          {"checks", checks}};
}

SizeEntry size_from(const json& value) {
  SizeEntry size;
  size.shape = value.value("shape", "");
  size.work = {value.at("flops_per_iter").get<double>(), value.at("bytes_per_iter").get<double>()};
  for (const json& check : value.at("checks")) {
    std::vector<OutputSpec>& outputs = size.checks[check.at("phase").get<int>()];
    for (const json& output : check.at("outputs")) outputs.push_back(output_from(output));
  }
  return size;
}

// Everything but the sizes: what must agree whatever size two runs measured.
ordered definition_json(const WorkloadEntry& entry) {
  ordered phases = ordered::array();
  for (const PhaseInfo& phase : entry.phases) phases.push_back(phase_json(phase));
  return {{"workload", entry.name},
          {"description", entry.description},
          {"phases", phases},
          {"cumulative_claim", claim_json(entry.cumulative_claim)}};
}

ordered workload_json(const WorkloadEntry& entry) {
  ordered out = definition_json(entry);
  out["sizes"] = ordered::object();
  for (const auto& [name, size] : entry.sizes) out["sizes"][name] = size_json(size);
  return out;
}

WorkloadEntry workload_from(const json& value) {
  WorkloadEntry entry;
  entry.name = value.at("workload").get<std::string>();
  entry.description = value.value("description", "");
  for (const json& phase : value.at("phases")) entry.phases.push_back(phase_from(phase));
  entry.cumulative_claim = claim_from(value.at("cumulative_claim"));
  for (const auto& [name, size] : value.at("sizes").items()) entry.sizes[name] = size_from(size);
  return entry;
}

}  // namespace

ordered to_json(const Catalog& catalog) {
  ordered workloads = ordered::array();
  for (const auto& [name, entry] : catalog.workloads) workloads.push_back(workload_json(entry));
  return {{"schema", kCatalogSchemaVersion}, {"workloads", workloads}};
}

Catalog from_json(const json& value, const std::string& source) {
  Catalog catalog;
  catalog.saved = true;
  try {
    if (const int schema = value.at("schema").get<int>(); schema > kCatalogSchemaVersion)
      throw InputError(source + ": catalog schema " + std::to_string(schema) + " is newer than this phasebench reads (" +
                       std::to_string(kCatalogSchemaVersion) + ")");
    for (const json& workload : value.at("workloads")) {
      WorkloadEntry entry = workload_from(workload);
      catalog.workloads[entry.name] = std::move(entry);
    }
  } catch (const json::exception& error) {
    throw InputError(source + " is not a phasebench catalog: " + error.what());
  } catch (const InputError& error) {
    if (std::string(error.what()).rfind(source, 0) == 0) throw;
    throw InputError(source + ": " + error.what());
  }
  return catalog;
}

Catalog read(const fs::path& run_directory) {
  const fs::path path = run_directory / kFileName;
  if (!fs::exists(path)) return {};
  std::ifstream in(path);
  json value;
  try {
    value = json::parse(in);  // its message names the line and column
  } catch (const json::exception& error) {
    throw InputError(path.string() + " is not valid JSON: " + error.what());
  }
  return from_json(value, path.string());
}

// ---- several runs' catalogs ----------------------------------------------------------------------

namespace {

void compare_definitions(const WorkloadEntry& a, const WorkloadEntry& b, std::vector<std::string>& found) {
  const ordered da = definition_json(a), db = definition_json(b);
  if (da["description"] != db["description"]) found.push_back(a.name + ": the description differs");
  if (da["cumulative_claim"] != db["cumulative_claim"]) found.push_back(a.name + ": the whole-ladder claim differs");
  if (da["phases"] == db["phases"]) return;
  for (const PhaseInfo& phase : a.phases) {
    const PhaseInfo* other = b.phase(phase.index);
    if (!other || phase_json(phase) != phase_json(*other))
      found.push_back(a.name + ": phase " + std::to_string(phase.index) + " (" + phase.name + ") differs");
  }
  for (const PhaseInfo& phase : b.phases)
    if (!a.phase(phase.index)) found.push_back(a.name + ": phase " + std::to_string(phase.index) + " is in one catalog only");
}

}  // namespace

std::vector<std::string> differences(const Catalog& a, const Catalog& b) {
  std::vector<std::string> found;
  for (const auto& [name, entry] : a.workloads) {
    const auto other = b.workloads.find(name);
    if (other == b.workloads.end()) continue;
    compare_definitions(entry, other->second, found);
    for (const auto& [size, declared] : entry.sizes)
      if (const auto same = other->second.sizes.find(size);
          same != other->second.sizes.end() && size_json(declared) != size_json(same->second))
        found.push_back(name + " at size " + size + ": outputs, tolerances, budgets or declared work differ");
  }
  return found;
}

Catalog united(const Catalog& first, const Catalog& second) {
  Catalog out = first;
  out.saved = first.saved || second.saved;
  for (const auto& [name, entry] : second.workloads) {
    const auto [mine, inserted] = out.workloads.emplace(name, entry);
    if (!inserted) mine->second.sizes.insert(entry.sizes.begin(), entry.sizes.end());  // keeps first's sizes
  }
  return out;
}

}  // namespace pb::catalog
