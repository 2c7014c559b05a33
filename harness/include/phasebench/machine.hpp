#pragma once
// machine.json: what ran the benchmark, in enough detail to compare runs across machines.

#include <string>

#include <nlohmann/json.hpp>

namespace pb {

struct MachineOptions {
  int threads = 1;
};

/// CPU, caches, memory, OS, compiler and flags, git commit, every backend's metadata and devices,
/// and `fingerprint`: a short hash of the hardware (CPU model, cores, memory, GPUs) that tells
/// whether two runs' absolute times are comparable.
nlohmann::json collect_machine_metadata(const MachineOptions& options);

/// The hardware fingerprint alone (also inside collect_machine_metadata()).
std::string hardware_fingerprint();

}  // namespace pb
