#pragma once
// PB_HOST_DEVICE marks a function that runs in a CUDA kernel and on the host: nvcc compiles it for
// both, a plain C++ compiler sees an ordinary inline function. Kernel bodies are written this way
// so that a host test runs the very code a kernel runs (DESIGN.md, "CUDA without a GPU").

#ifndef PB_HOST_DEVICE
#if defined(__CUDACC__)
#define PB_HOST_DEVICE __host__ __device__
#else
#define PB_HOST_DEVICE
#endif
#endif

#include <cstdint>

namespace pb::cuda_backend {

/// A kernel body that fills an array with one value (poison_outputs: NaN), one index per thread.
struct Fill {
  float* data;
  float value;
  PB_HOST_DEVICE void operator()(int64_t i) const { data[i] = value; }
};

}  // namespace pb::cuda_backend
