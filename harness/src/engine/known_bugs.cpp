#include "phasebench/known_bugs.hpp"

#include <map>
#include <utility>

namespace pb {
namespace {

using Key = std::pair<std::string, std::string>;  // (workload, phase)

std::map<Key, std::string>& registry() {
  static std::map<Key, std::string> bugs;
  return bugs;
}

}  // namespace

KnownBugRegistration::KnownBugRegistration(std::string workload, std::string phase, std::string description)
    : workload_(std::move(workload)), phase_(std::move(phase)) {
  registry()[{workload_, phase_}] = std::move(description);
}

KnownBugRegistration::~KnownBugRegistration() { registry().erase({workload_, phase_}); }

std::string known_bug(std::string_view workload, std::string_view phase) {
  const auto found = registry().find({std::string(workload), std::string(phase)});
  return found == registry().end() ? std::string() : found->second;
}

PhasePlan without_known_bugs(const Workload& workload, int phase, const PhasePlan& derived) {
  std::vector<std::string> names;
  std::set<std::string> active;
  bool is_bug = false;
  for (const PhaseInfo& info : workload.phases()) {
    names.push_back(info.name);
    const bool bug = !known_bug(workload.full_name(), info.name).empty();
    if (bug && info.index == phase) is_bug = true;
    if (!bug && derived.active().count(info.name)) active.insert(info.name);
  }
  if (is_bug) active = {workload.find_phase(phase)->name};
  return PhasePlan(std::move(names), std::move(active));
}

}  // namespace pb
