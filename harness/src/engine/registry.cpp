// The three registries (workloads, variant ladders, backends), filled by static registration
// objects in the files that define them. Function-local statics avoid the static-initialization
// order problem between translation units.

#include <algorithm>
#include <stdexcept>

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"
#include "phasebench/workload.hpp"

namespace pb {
namespace {

std::vector<std::shared_ptr<const Workload>>& workload_registry() {
  static std::vector<std::shared_ptr<const Workload>> registry;
  return registry;
}

std::vector<VariantLadder>& ladder_registry() {
  static std::vector<VariantLadder> registry;
  return registry;
}

std::vector<std::shared_ptr<Backend>>& backend_registry() {
  static std::vector<std::shared_ptr<Backend>> registry;
  return registry;
}

}  // namespace

WorkloadRegistration::WorkloadRegistration(std::shared_ptr<const Workload> workload) {
  workload_registry().push_back(std::move(workload));
}

std::vector<std::shared_ptr<const Workload>> registered_workloads() {
  auto workloads = workload_registry();
  std::sort(workloads.begin(), workloads.end(),
            [](const auto& a, const auto& b) { return a->full_name() < b->full_name(); });
  return workloads;
}

std::shared_ptr<const Workload> find_workload(std::string_view full_name) {
  for (const auto& workload : workload_registry())
    if (workload->full_name() == full_name) return workload;
  return nullptr;
}

VariantRegistration::VariantRegistration(std::string workload, std::string backend,
                                         std::vector<std::string> phases, VariantFactory make,
                                         const char* source_file) {
  ladder_registry().push_back(
      {std::move(workload), std::move(backend), std::move(phases), std::move(make), source_file});
}

std::vector<VariantLadder> registered_ladders() {
  auto ladders = ladder_registry();
  std::sort(ladders.begin(), ladders.end(), [](const auto& a, const auto& b) {
    return std::tie(a.workload, a.backend) < std::tie(b.workload, b.backend);
  });
  return ladders;
}

BackendRegistration::BackendRegistration(std::shared_ptr<Backend> backend) {
  backend_registry().push_back(std::move(backend));
}

std::vector<std::shared_ptr<Backend>> registered_backends() {
  auto backends = backend_registry();
  std::sort(backends.begin(), backends.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
  return backends;
}

std::shared_ptr<Backend> find_backend(const std::string& name) {
  for (const auto& backend : backend_registry())
    if (backend->name() == name) return backend;
  return nullptr;
}

// ---- workload helpers ---------------------------------------------------------------------------

std::optional<PhaseInfo> Workload::find_phase(int index) const {
  for (PhaseInfo& phase : phases())
    if (phase.index == index) return phase;
  return std::nullopt;
}

}  // namespace pb
