#pragma once
// geometry/lior_optimizer_step on CUDA: the per-thread bodies of the kernels in
// lior_optimizer_step-cuda.cu. They compile as plain C++ too, so tests/geometry_network_test.cpp
// runs them on the host over the whole index space and compares with
// reference/geometry/lior_optimizer_step.hpp, whose per-tensor and per-value functions they call.

#include <cstdint>

#include "phasebench/host_device.hpp"
#include "reference/geometry/lior_optimizer_step.hpp"

namespace pb::cuda_backend::lior_optimizer_step {

namespace ref = pb::reference::geometry;

/// Tensor j's R_j (as_scale false: what the host reads) or lr kappa R_j^-2, into out[j].
PB_HOST_DEVICE inline void resilience_body(int64_t j, const ref::ResilienceWeights<float>& w, const float* params,
                                           const int64_t* offsets, bool as_scale, float* out) {
  const float R = ref::tensor_resilience(w, params + offsets[j], offsets[j + 1] - offsets[j]);
  out[j] = as_scale ? ref::step_scale(R) : R;
}

/// out[i] = p[i] - scale g[i], with a scale given by the host.
PB_HOST_DEVICE inline void update_body(int64_t i, const float* params, const float* grads, float scale, float* out) {
  out[i] = params[i] - scale * grads[i];
}

/// batched_step: every value of every tensor, its tensor's scale found by bisection.
PB_HOST_DEVICE inline void update_all_body(int64_t i, const float* params, const float* grads, const float* scales,
                                           const int64_t* offsets, int tensors, float* out) {
  update_body(i, params, grads, scales[ref::segment_of(offsets, tensors, i)], out);
}

}  // namespace pb::cuda_backend::lior_optimizer_step
