#include "commands/dump_manifest.hpp"

#include <algorithm>

#include "results/catalog.hpp"
#include "phasebench/errors.hpp"

namespace pb::dump_manifest {

std::vector<OutputSpec> checks_for(const Workload& workload, SizeClass size) {
  return workload.outputs_for(kCheckedPhase, size);
}

nlohmann::ordered_json checks_json(const std::vector<OutputSpec>& checks) {
  nlohmann::ordered_json outputs = nlohmann::ordered_json::array();
  for (const OutputSpec& spec : checks) outputs.push_back(catalog::output_json(spec));
  return {{"phase", kCheckedPhase}, {"outputs", outputs}};
}

nlohmann::json tolerances_json(const std::vector<OutputSpec>& checks) {
  nlohmann::json tolerances = nlohmann::json::object();
  for (const OutputSpec& spec : checks)
    tolerances[spec.name] = {{"rel_l2", spec.tolerance}, {"reason", spec.tolerance_reason}};
  return tolerances;
}

std::vector<OutputSpec> checks_from(const nlohmann::json& manifest) {
  if (!manifest.contains("checks"))
    throw InputError("manifest.json has no \"checks\": the dump was written by an older phasebench; dump it again");
  const nlohmann::json& checks = manifest["checks"];
  std::vector<OutputSpec> specs;
  try {
    if (checks.at("phase").get<int>() != kCheckedPhase)
      throw InputError("manifest.json records the checks of phase " + checks["phase"].dump() + ", not of phase 0");
    for (const nlohmann::json& output : checks.at("outputs")) specs.push_back(catalog::output_from(output));
  } catch (const nlohmann::json::exception& bad) {
    throw InputError(std::string("manifest.json: malformed \"checks\": ") + bad.what());
  }
  if (specs.empty()) throw InputError("manifest.json: \"checks\" names no output");
  return specs;
}

namespace {

// "tolerance 0.001 in the dump, 1e-05 here", or empty when the two checks are the same.
std::string spec_difference(const OutputSpec& dumped, const OutputSpec& here) {
  const nlohmann::ordered_json a = catalog::output_json(dumped), b = catalog::output_json(here);
  if (a == b) return "";
  for (const auto& [key, value] : b.items())
    if (!a.contains(key) || a[key] != value)
      return key + " " + (a.contains(key) ? a[key].dump() : "absent") + " in the dump, " + value.dump() + " here";
  for (const auto& [key, value] : a.items())
    if (!b.contains(key)) return key + " " + value.dump() + " in the dump, absent here";
  return "";
}

const OutputSpec* named(const std::vector<OutputSpec>& specs, const std::string& name) {
  const auto found = std::find_if(specs.begin(), specs.end(), [&](const OutputSpec& spec) { return spec.name == name; });
  return found == specs.end() ? nullptr : &*found;
}

}  // namespace

std::string describe_difference(const std::vector<OutputSpec>& dumped, const std::vector<OutputSpec>& here) {
  for (const OutputSpec& spec : here) {
    const OutputSpec* recorded = named(dumped, spec.name);
    if (!recorded) return "output " + spec.name + " is checked here, and not in the dump";
    if (const std::string difference = spec_difference(*recorded, spec); !difference.empty())
      return "output " + spec.name + ": " + difference;
  }
  for (const OutputSpec& spec : dumped)
    if (!named(here, spec.name)) return "output " + spec.name + " is checked in the dump, and not here";
  return "";
}

}  // namespace pb::dump_manifest
