#pragma once
// catalog.json: the catalog a run was measured with (docs/file-formats.md). `run` builds it from
// the workloads it measured; every later reader (compare, report, merge, the claims view) takes
// phases, claims, tolerances and declared work from it, never from the live registry, so an old
// run is read with the catalog it had. Internal to the harness.

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "phasebench/results.hpp"
#include "phasebench/workload.hpp"

namespace pb::catalog {

constexpr int kCatalogSchemaVersion = 1;
constexpr const char* kFileName = "catalog.json";
/// Why a run without catalog.json has no claims: the note readers show.
constexpr const char* kNoCatalogNote =
    "the run has no catalog.json (measured before catalogs were saved): its claims are unknown";

/// What a workload declares at one size.
struct SizeEntry {
  std::string shape;
  WorkEstimate work;                               // per iteration: for GB/s and GFLOP/s
  std::map<int, std::vector<OutputSpec>> checks;   // per phase index: outputs, tolerances, budgets
};

struct WorkloadEntry {
  std::string name;  // "suite/workload"
  std::string description;
  std::vector<PhaseInfo> phases;
  PhaseInfo cumulative_claim;  // index: the last phase it covers (0: the whole ladder)
  std::map<std::string, SizeEntry> sizes;  // by size name, the sizes measured

  const PhaseInfo* phase(int index) const;
};

struct Catalog {
  bool saved = false;  // false: no catalog.json (a run from before catalogs were saved)
  std::map<std::string, WorkloadEntry> workloads;  // by "suite/workload"

  const WorkloadEntry* find(const std::string& suite, const std::string& workload) const;
  /// Why the catalog cannot say what `suite/workload` claims; "" when it can.
  std::string unknown_because(const std::string& suite, const std::string& workload) const;
};

/// The catalog of `workloads` as the registry defines them now, at `sizes`: what `run` saves.
Catalog build(const std::vector<std::shared_ptr<const Workload>>& workloads, const std::vector<SizeClass>& sizes);
inline Catalog build(const std::vector<std::shared_ptr<const Workload>>& workloads, SizeClass size) {
  return build(workloads, std::vector<SizeClass>{size});
}

/// Keys in the order docs/file-formats.md gives them.
nlohmann::ordered_json to_json(const Catalog& catalog);
/// Throws InputError naming `source` and what is missing or mistyped.
Catalog from_json(const nlohmann::json& json, const std::string& source);

/// One output's check as catalog.json writes it (`checks[].outputs[]`); a dump's manifest.json
/// records its checks the same way.
nlohmann::ordered_json output_json(const OutputSpec& spec);
/// The check output_json wrote; throws nlohmann::json::exception on a missing or mistyped key.
OutputSpec output_from(const nlohmann::json& value);

/// The run directory's catalog.json; an unsaved catalog when there is none. Throws InputError when
/// the file is there but unreadable.
Catalog read(const std::filesystem::path& run_directory);

/// What two catalogs say differently about the workloads both have ("trainer2/lior_step: phase 3
/// differs"); empty when they agree. Sizes only one of them has are no difference.
std::vector<std::string> differences(const Catalog& a, const Catalog& b);
/// Every workload and size of both; where both have one, `first`'s.
Catalog united(const Catalog& first, const Catalog& second);

}  // namespace pb::catalog
