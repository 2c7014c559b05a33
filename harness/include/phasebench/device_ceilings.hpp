#pragma once
// A GPU's own roofline ceilings: what the rows that ran on it are measured against, never the host
// CPU's. A backend that can measure a device's ceilings says so through Backend's two hooks
// (backend.hpp): device_ceilings_identity() names the physical device and the probe cheaply, so
// the harness can look the ceilings up in its cache, and measure_device_ceilings() runs the probe.
// The harness caches the result per (physical device, probe method), records it in machine.json
// ("roofline" -> "devices") and picks it for each GPU row (harness/src/roofline/roofline.hpp).

#include <optional>
#include <string>

#include "phasebench/results.hpp"  // kMissing

namespace pb {

/// Which physical device a backend's device is, and which probe would measure it.
struct DeviceIdentity {
  std::string gpu;           // the model, "NVIDIA H200"
  std::string identity;      // the physical device: "GPU-<uuid>", or the PCI bus id without a UUID
  std::string probe_method;  // the probe and its version, "cuda_triad_fma_cublas_bf16_v1"
  std::string why_not;       // non-empty: no ceilings can be measured (no device: the runtime's text)
};

struct DeviceCeilings {
  DeviceIdentity device;
  double bandwidth_gb_per_s = kMissing;  // device memory: arrays far larger than the L2
  double l2_bytes = kMissing;            // the L2's capacity; l2_gb_per_s measured over half of it
  double l2_gb_per_s = kMissing;         // kMissing when not measured
  double fp32_peak_gflop_per_s = kMissing;  // FMA chains on the CUDA cores
  double bf16_peak_gflop_per_s = kMissing;  // a bf16 GEMM (fp32 accumulation) on the tensor cores
  std::string bandwidth_method, fp32_method, bf16_method;  // how, in words (sizes, shapes)
  std::string measured_at;                                 // UTC, ISO 8601
  double probe_seconds = kMissing;
  std::string source;  // "measured" or "cache <path>" (how this process got it; not cached)
};

/// A probe's answer: ceilings, or why there are none (the runtime's own error text).
struct DeviceProbe {
  std::optional<DeviceCeilings> ceilings;
  std::string why_not;
};

}  // namespace pb
