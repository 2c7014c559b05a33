#pragma once
// The LibTorch backend's helpers for variants: devices, moving HostArrays in and out, and the one
// host read that phases after the baseline use.
//
// Counting (torch_backend.cpp): while the harness counts, a global RecordFunction callback counts
// every top-level ATen op dispatched from the counting thread as one op, and every
// aten::_local_scalar_dense (what .item() dispatches) as one host sync; the CPU and CUDA
// allocators report the bytes of every tensor allocated. read_to_host() counts its own sync.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <ATen/ATen.h>
#include <torch/types.h>

#include "phasebench/arrays.hpp"
#include "phasebench/variant.hpp"

namespace pb::torch_backend {

/// The torch device for a phasebench device name ("cpu", "cuda"); std::invalid_argument otherwise.
torch::Device device_for(const std::string& device);

/// Why torch variants cannot run on `device` in this process; empty when they can.
std::string device_unavailable_reason(const std::string& device);

/// What a torch variant's support() returns for `device`: Skipped with the reason when the device
/// is known but not usable here, Unsupported when the name is not a torch device.
std::optional<CannotRun> cannot_run_on(const std::string& device);

/// A float32 tensor on `device` holding `array` (untimed: for setup()).
torch::Tensor to_tensor(const HostArray& array, const torch::Device& device);

/// The values of `tensor` as a Float32 HostArray of the same shape (untimed: for outputs()).
HostArray to_host_array(const torch::Tensor& tensor);

/// The host copy of `tensor` (contiguous, on the CPU), counted as ONE host sync. On a GPU this is
/// a real device-to-host copy that waits for the device; on the CPU it is the same storage. Read
/// the result through data_ptr(), never .item(), which the op callback would count again.
torch::Tensor read_to_host(const torch::Tensor& tensor);

// ---- CUDA-only machinery (compiled only against a CUDA LibTorch; see torch_backend.cpp) ---------

/// Whether this build can capture CUDA graphs (a LibTorch with CUDA): only then does the backend
/// declare graph_capture on cuda, so only then may a ladder register a phase that needs it.
bool captures_cuda_graphs();

/// The original trainer's allocator cleanup after each window: torch.cuda.empty_cache() every 10
/// windows; `adaptive` (adaptive_cleanup): every 50 windows and only when the device's memory
/// is more than 90% used. Emptying the cache waits for the device: one counted host sync. A no-op
/// on devices without a caching allocator.
class AllocatorCleanup {
 public:
  AllocatorCleanup() = default;
  AllocatorCleanup(const std::string& device, bool adaptive);
  void after_window();

 private:
  bool enabled_ = false, adaptive_ = false;
  int64_t windows_ = 0;
};

/// A CUDA graph (at::cuda::CUDAGraph) of the device work a body enqueues. The caller warms the
/// body up eagerly first (lazy initialization, JIT profiling and allocator growth must not happen
/// inside the capture) and keeps every tensor the body reads or writes alive and in place.
class CudaGraph {
 public:
  CudaGraph();
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  /// Captures `body` on a side stream. Empty on success; otherwise why capture failed (the device
  /// stays usable and the caller runs the body eagerly instead).
  std::string capture(const std::function<void()>& body);
  /// Enqueues the captured work on the current stream (does not wait for it).
  void replay();
  bool captured() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pb::torch_backend
