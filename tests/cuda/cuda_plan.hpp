#pragma once
// The plans the harness derives for the CUDA ladders, for the host tests of tests/cuda: a test
// names a phase by its catalog name and gets the PhasePlan a case of that phase on device "cuda"
// would carry, so the ladders run on the host exactly as configured on a GPU.

#include <stdexcept>
#include <string>

#include "phasebench/backend.hpp"
#include "phasebench/phases.hpp"
#include "phasebench/workload.hpp"

namespace pb::cuda_backend::testing {

inline const Workload& registered_workload(const std::string& name) {
  const auto found = find_workload(name);
  if (!found) throw std::runtime_error("workload " + name + " is not registered");
  return *found;  // the registry keeps it alive
}

/// What the cuda backend declares for device "cuda": its own declaration when it is built, else
/// the same set written out (the tests also build without nvcc).
inline Capabilities cuda_capabilities() {
  if (const auto backend = find_backend("cuda")) return backend->capabilities("cuda");
  return {Capability::GraphCapture, Capability::Bf16};
}

/// The catalog index of the phase named `phase` (what Workload::outputs_for takes).
inline int phase_index(const Workload& workload, const std::string& phase) {
  for (const PhaseInfo& info : workload.phases())
    if (info.name == phase) return info.index;
  throw std::logic_error(workload.full_name() + " has no phase " + phase);
}

/// The plan of `phase` of `workload` on device "cuda".
inline PhasePlan cuda_plan(const Workload& workload, const std::string& phase) {
  return derive_phase_plan(workload.phases(), phase_index(workload, phase), cuda_capabilities());
}

}  // namespace pb::cuda_backend::testing
