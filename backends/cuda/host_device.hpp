#pragma once
// PB_HOST_DEVICE marks a function that runs in a CUDA kernel and on the host: nvcc compiles it for
// both, a plain C++ compiler sees an ordinary inline function. Kernel bodies are written this way
// so that a host test runs the very code a kernel runs (README.md, "Backends on this project's
// machines": what is and is not tested without a GPU). The reference's per-element functions that
// device code shares use it too (reference/spinlock/cnn_rollout.hpp's policy update).

#include "phasebench/host_device.hpp"  // PB_HOST_DEVICE

#include <cstdint>

namespace pb::cuda_backend {

/// A kernel body that fills an array with one value (poison_outputs: NaN), one index per thread.
struct Fill {
  float* data;
  float value;
  PB_HOST_DEVICE void operator()(int64_t i) const { data[i] = value; }
};

}  // namespace pb::cuda_backend
