#pragma once
// A backend: one runtime (LibTorch, Kokkos, oneDNN, CUDA, plain C++). One folder under backends/
// and one line in backends/CMakeLists.txt; the backend registers itself.

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "phasebench/device_ceilings.hpp"
#include "phasebench/phases.hpp"

namespace pb {

/// The name of the backend that times the serial reference<float>, the base of every speedup.
inline constexpr const char* kReferenceBackend = "reference";
/// Its single rung (phase 0 of every ladder it has): reference<float>, the naive loops in fp32.
inline constexpr const char* kSerialRung = "serial_fp32";

struct DeviceInfo {
  std::string name;  // "cpu", "cuda"
  bool is_gpu = false;
  std::string unavailable_reason;  // empty when the device can run variants in this process
  std::string description;         // model name, driver, ... for the metadata
};

struct RuntimeOptions {
  int threads = 1;  // threads for the runtime's CPU pool (torch, OpenMP, oneDNN)
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;
  /// Empty when the runtime is usable in this process, else why not (cheap, no side effects).
  virtual std::string unavailable_reason() const { return {}; }
  /// Every device the backend knows, usable or not (unusable ones carry their reason).
  virtual std::vector<DeviceInfo> devices() const = 0;
  /// Once per process, before any variant of this backend is constructed.
  virtual void init(const RuntimeOptions&) {}
  /// Once per process, after the last variant of this backend is destroyed.
  virtual void finalize() {}
  /// Blocks until all work queued on `device` has finished. The timers call it on both ends.
  virtual void synchronize(const std::string& device) { (void)device; }
  /// What the backend has on `device` for the phases that need something (phasebench/phases.hpp).
  /// A phase needing what is not declared here gets a generated SKIPPED/UNSUPPORTED row.
  virtual Capabilities capabilities(const std::string& device) const {
    (void)device;
    return {};
  }
  /// The threads its variants actually use when `requested` were asked for (the threads column).
  virtual int effective_threads(int requested) const { return requested; }
  /// Whether its CPU thread count can change between the cases of one process. Where it can, a run
  /// of several counts (--threads 1,2) interleaves them in one worker; a pool fixed when the
  /// runtime starts (Kokkos' OpenMP pool) takes a worker per count.
  virtual bool threads_change_in_process() const { return true; }
  /// Sets the thread count of a pool of its own for the steps of a case about to run (its setup,
  /// checks and each repetition), after init() and only where threads_change_in_process(); the
  /// engine sets OpenMP's count itself. init() gets the most threads any of its cases in the
  /// process asks for.
  virtual void use_threads(int threads) { (void)threads; }
  /// Versions and configuration for machine.json (library version, threads, ISA, ...).
  virtual nlohmann::json metadata() const = 0;
  /// Attach/detach the runtime hooks that feed pb::counters (op dispatch, allocations).
  /// Called around the counted (untimed) iteration only, so timing never pays for them.
  virtual void start_counting() {}
  virtual void stop_counting() {}
  /// For a GPU device: which physical device it is and which probe measures its roofline ceilings
  /// (cheap, no side effects; the harness caches ceilings under this). `why_not` set when this
  /// backend measures none for `device` (the default) or cannot (no device: the runtime's reason).
  virtual DeviceIdentity device_ceilings_identity(const std::string& device) const {
    DeviceIdentity none;
    none.why_not = "the " + name() + " backend has no probe for device \"" + device + "\"";
    return none;
  }
  /// Measures `device`'s own ceilings now (seconds; blocks). Only called when
  /// device_ceilings_identity() said it can; never throws: a failure is `why_not`.
  virtual DeviceProbe measure_device_ceilings(const std::string& device) {
    return {std::nullopt, device_ceilings_identity(device).why_not};
  }
};

struct BackendRegistration {
  explicit BackendRegistration(std::shared_ptr<Backend> backend);
};

std::vector<std::shared_ptr<Backend>> registered_backends();  // sorted by name
std::shared_ptr<Backend> find_backend(const std::string& name);

}  // namespace pb
