// The phase model: capability names, PhasePlan, and the derivation of a plan from a catalog.

#include <algorithm>
#include <array>
#include <stdexcept>
#include <utility>

#include "phasebench/backend.hpp"
#include "phasebench/runner.hpp"
#include "phasebench/workload.hpp"

namespace pb {
namespace {

struct CapabilityText {
  Capability capability;
  std::string_view name;
  std::string_view description;
};

// The only place a capability is named or explained: reasons, `list` and catalog.json use these.
constexpr std::array<CapabilityText, 4> kCapabilityTexts{{
    {Capability::CachingAllocator, "caching_allocator",
     "a caching device allocator whose cache the code can empty"},
    {Capability::GraphCapture, "graph_capture", "capturing the device launches once and replaying them as one graph"},
    {Capability::Bf16, "bf16", "bf16 storage and arithmetic with fp32 accumulation"},
    {Capability::Autograd, "autograd", "a recorded autograd graph (requires_grad, backward, detach)"},
}};

const CapabilityText& text_of(Capability capability) {
  for (const CapabilityText& text : kCapabilityTexts)
    if (text.capability == capability) return text;
  throw std::logic_error("a Capability without a name in phases.cpp");
}

std::string joined_needs(const std::vector<Capability>& needs) {
  std::string text;
  for (size_t i = 0; i < needs.size(); ++i)
    text += std::string(i == 0 ? "" : i + 1 == needs.size() ? " and " : ", ") + std::string(describe(needs[i]));
  return text;
}

}  // namespace

std::string_view to_string(Capability capability) { return text_of(capability).name; }
std::string_view describe(Capability capability) { return text_of(capability).description; }

std::optional<Capability> parse_capability(std::string_view name) {
  for (const CapabilityText& text : kCapabilityTexts)
    if (text.name == name) return text.capability;
  return std::nullopt;
}

bool PhasePlan::has(std::string_view optimization) const {
  if (std::find(catalog_.begin(), catalog_.end(), optimization) == catalog_.end())
    throw std::logic_error("has(\"" + std::string(optimization) + "\"): no phase of that name in the workload's catalog");
  return active_.count(std::string(optimization)) > 0;
}

std::vector<Capability> missing_needs(const PhaseInfo& phase, const Capabilities& available) {
  std::vector<Capability> missing;
  for (Capability need : phase.needs)
    if (!available.count(need)) missing.push_back(need);
  return missing;
}

PhasePlan derive_phase_plan(const std::vector<PhaseInfo>& catalog, int phase, const Capabilities& available) {
  std::vector<std::string> names;
  std::set<std::string> active;
  for (const PhaseInfo& info : catalog) names.push_back(info.name);
  for (const PhaseInfo& info : catalog)
    if (info.index <= phase && missing_needs(info, available).empty()) active.insert(info.name);
  for (const PhaseInfo& info : catalog)
    if (active.count(info.name))
      for (const std::string& off : info.switches_off) active.erase(off);
  return PhasePlan(std::move(names), std::move(active));
}

std::optional<CannotRun> capability_gap(const PhaseInfo& phase, const Backend& backend, const std::string& device) {
  const std::vector<Capability> missing = missing_needs(phase, backend.capabilities(device));
  if (missing.empty()) return std::nullopt;
  std::vector<std::string> devices_with_it;
  for (const DeviceInfo& other : backend.devices())
    if (missing_needs(phase, backend.capabilities(other.name)).empty()) devices_with_it.push_back(other.name);
  std::string reason = "phase " + std::to_string(phase.index) + " " + phase.name + " needs " + joined_needs(missing) +
                       ", which " + backend.name() + " does not have ";
  if (devices_with_it.empty()) return CannotRun{CannotRun::Kind::Unsupported, reason + "on any device"};
  std::string elsewhere;
  for (const std::string& name : devices_with_it) elsewhere += (elsewhere.empty() ? "" : ", ") + name;
  return CannotRun{CannotRun::Kind::Skipped, reason + "on " + device + " (it has it on " + elsewhere + ")"};
}

std::vector<int> phase_indices(const VariantLadder& ladder, const Workload& workload) {
  std::vector<int> indices;
  const std::vector<PhaseInfo> catalog = workload.phases();
  for (const std::string& name : ladder.phases) {
    const auto info = std::find_if(catalog.begin(), catalog.end(), [&](const PhaseInfo& p) { return p.name == name; });
    if (info == catalog.end())
      throw std::logic_error(ladder.source_file + " registers phase '" + name + "', which the catalog of " +
                             workload.full_name() + " does not have");
    indices.push_back(info->index);
  }
  std::sort(indices.begin(), indices.end());
  return indices;
}

}  // namespace pb
