#pragma once
// The LibTorch backend's helpers for variants: devices, moving HostArrays in and out, and the one
// host read that phases after the baseline use.
//
// Counting (torch_backend.cpp): while the harness counts, a global RecordFunction callback counts
// every top-level ATen op dispatched from the counting thread as one op, and every
// aten::_local_scalar_dense (what .item() dispatches) as one host sync; the CPU and CUDA
// allocators report the bytes of every tensor allocated. read_to_host() counts its own sync.

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

}  // namespace pb::torch_backend
