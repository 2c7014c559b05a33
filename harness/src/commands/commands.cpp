#include "commands/commands.hpp"

#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "commands/dump_manifest.hpp"
#include "common/number_text.hpp"
#include "phasebench/errors.hpp"
#include "phasebench/files.hpp"
#include "phasebench/npy.hpp"

namespace pb::commands {
namespace fs = std::filesystem;

// ---- list ----------------------------------------------------------------------------------------

namespace {

std::string claim_text(const PhaseInfo& phase) {
  if (std::isnan(phase.claimed_min)) return "";
  return "claimed " + format_gain_range(phase.claimed_min, phase.claimed_max);
}

std::string needs_text(const PhaseInfo& phase) {
  std::string text;
  for (Capability need : phase.needs) text += (text.empty() ? "needs " : ", ") + std::string(to_string(need));
  for (const std::string& off : phase.switches_off) text += (text.empty() ? "turns off " : "; turns off ") + off;
  return text.empty() ? "" : "  [" + text + "]";
}

// What the case's row will say before it runs: the capability gap, the device's absence, or that it runs.
std::string availability_text(const Case& c) {
  if (c.capability_gap)
    return (c.capability_gap->kind == CannotRun::Kind::Skipped ? "SKIPPED: " : "UNSUPPORTED: ") + c.capability_gap->reason;
  return c.device_unavailable_reason.empty() ? "runs here" : "SKIPPED: " + c.device_unavailable_reason;
}

std::string capabilities_text(const Backend& backend, const std::string& device) {
  std::string text;
  for (Capability capability : backend.capabilities(device))
    text += (text.empty() ? "" : ",") + std::string(to_string(capability));
  return text.empty() ? "" : "  has: " + text;
}

void list_backends(const Selection& selection) {
  std::cout << "backends\n";
  for (const auto& backend : registered_backends()) {
    if (!selection.backends.empty() &&
        std::find(selection.backends.begin(), selection.backends.end(), backend->name()) ==
            selection.backends.end())
      continue;
    const std::string why_not = backend->unavailable_reason();
    std::cout << "  " << std::left << std::setw(10) << backend->name()
              << (why_not.empty() ? "available" : "unavailable: " + why_not) << "\n";
    for (const DeviceInfo& device : backend->devices())
      std::cout << "      device " << std::setw(6) << device.name
                << (device.unavailable_reason.empty() ? "available" : "unavailable: " + device.unavailable_reason)
                << (device.description.empty() ? "" : "  [" + device.description + "]")
                << capabilities_text(*backend, device.name) << "\n";
  }
}

}  // namespace

int list(const Selection& selection, SizeClass size) {
  const std::vector<Case> cases = plan_cases(selection, size);
  std::cout << "workloads\n";
  for (const auto& workload : registered_workloads()) {
    std::vector<const Case*> mine;
    for (const Case& c : cases)
      if (c.workload == workload) mine.push_back(&c);
    if (mine.empty()) continue;
    std::cout << "  " << workload->full_name() << ": " << workload->description() << "\n";
    std::cout << "      shape " << to_string(size) << ": " << workload->shape(size) << "\n";
    for (const PhaseInfo& phase : workload->phases())
      std::cout << "      phase " << phase.index << " " << std::left << std::setw(25) << phase.name
                << (phase.exact ? "exact   " : "approx  ") << std::setw(20) << claim_text(phase)
                << phase.description << needs_text(phase) << "\n";
    for (const Case* c : mine)
      std::cout << "      variant " << std::setw(62) << c->id() + " [" + c->device + "] " << availability_text(*c)
                << "\n";
  }
  list_backends(selection);
  return 0;
}

// ---- dump ----------------------------------------------------------------------------------------

namespace {

nlohmann::json write_arrays(const fs::path& dir, const std::string& role, const ArrayMap& arrays) {
  nlohmann::json entries = nlohmann::json::array();
  fs::create_directories(dir / role);
  for (const auto& [name, array] : arrays) {
    const std::string file = role + "/" + name + ".npy";
    write_file_atomically(dir / file, npy_bytes(array));
    entries.push_back({{"name", name}, {"role", role}, {"file", file}, {"shape", array.shape},
                       {"dtype", element_type_name(array.element_type)}});
  }
  return entries;
}

}  // namespace

int dump(const DumpCommand& command) {
  const auto workload = find_workload(command.workload);
  if (!workload)
    throw InputError("unknown workload '" + command.workload + "' (names are suite/workload; see `phasebench list`)");
  require_valid_size(*workload, command.size);
  StagedDirectory dir(command.out_dir);
  const ArrayMap inputs = workload->make_inputs(command.size, command.seed);
  const ArrayMap reference = workload->reference_fp64(inputs);
  nlohmann::json manifest = {{"workload", workload->full_name()},
                             {"size", to_string(command.size)},
                             {"shape", workload->shape(command.size)},
                             {"seed", command.seed},
                             {"phasebench_version", PHASEBENCH_VERSION},
                             {"arrays", nlohmann::json::array()}};
  for (auto& entry : write_arrays(dir.staging_path(), "inputs", inputs)) manifest["arrays"].push_back(entry);
  for (auto& entry : write_arrays(dir.staging_path(), "reference", reference)) manifest["arrays"].push_back(entry);
  const std::vector<OutputSpec> checks = dump_manifest::checks_for(*workload, command.size);
  manifest["checks"] = dump_manifest::checks_json(checks);
  manifest["tolerances"] = dump_manifest::tolerances_json(checks);
  write_file_atomically(dir.staging_path() / "manifest.json", manifest.dump(2) + "\n");
  dir.commit();
  std::cout << "wrote " << inputs.size() << " inputs and " << reference.size()
            << " reference outputs of " << workload->full_name() << " to " << command.out_dir << "\n";
  return 0;
}

}  // namespace pb::commands
