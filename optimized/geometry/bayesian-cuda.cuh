#pragma once
// geometry/bayesian on CUDA: the per-thread bodies of the kernels in bayesian-cuda.cu. Each function
// is what one GPU thread does for its index; the .cu file only wraps them in __global__ kernels
// and picks launch shapes. They compile
// as plain C++ too, so tests/geometry_field_test.cpp runs them on the host over the whole index
// space and compares with the fp64 oracle. The math itself is the reference's PB_HOST_DEVICE
// code (reference/geometry/*.hpp), instantiated for float. COMPILED HERE, NEVER RUN ON A GPU.

#include <cstdint>

#include "backends/cuda/host_device.hpp"
#include "reference/geometry/bayesian.hpp"

namespace pb::cuda_backend::bayesian {

namespace ref = pb::reference::geometry;

// ==== bayesian: complex value k at f[2k], f[2k+1] ==================================================

// Z is reduced by one block of kReductionThreads: thread t sums values t, t + threads, ... in
// order, then the block adds the partial sums pairwise (tree_step). No atomics: the order is fixed.
// The partial sums are doubles, as the reference's (reference/geometry/bayesian.hpp says why):
// at the large size each thread adds 16k terms.
constexpr int kReductionThreads = 256;

PB_HOST_DEVICE inline void weight(int64_t k, const float* f, const float* e, float* w) {
  w[k] = ref::evidence_weight(f + 2 * k, e + 2 * k);
}

/// Thread `thread`'s partial Z from stored weights (or, with w null, recomputing them from e).
PB_HOST_DEVICE inline double partial_z(const float* f, const float* e, const float* w, int64_t count, int thread) {
  double partial = 0;
  for (int64_t k = thread; k < count; k += kReductionThreads) {
    const float wk = w ? w[k] : ref::evidence_weight(f + 2 * k, e + 2 * k);
    partial += double(wk * ref::squared_modulus(f[2 * k], f[2 * k + 1]));
  }
  return partial;
}

/// One level of the block's pairwise sum; within a level no slot is both read and written.
PB_HOST_DEVICE inline void tree_step(double* partials, int thread, int half) {
  if (thread < half) partials[thread] += partials[thread + half];
}

/// One real component of the posterior, the branch from z on the device or from the host's z
/// (host_read_branch).
PB_HOST_DEVICE inline void posterior(int64_t i, const float* f, const float* w, float z, float* out) {
  out[i] = ref::posterior_component(w[i / 2], f[i], z, ref::normalizable(z));
}

PB_HOST_DEVICE inline void update(int64_t i, const float* post, const float* f, float* out) {
  out[i] = ref::update_component(post[i], f[i]);
}

/// compiled: both components of value k, weight recomputed, posterior and update written together.
PB_HOST_DEVICE inline void fused_posterior_update(int64_t k, const float* f, const float* e, float z, float* post,
                                                  float* out) {
  const float w = ref::evidence_weight(f + 2 * k, e + 2 * k);
  for (int64_t i = 2 * k; i < 2 * k + 2; ++i) {
    post[i] = ref::posterior_component(w, f[i], z, ref::normalizable(z));
    out[i] = ref::update_component(post[i], f[i]);
  }
}

}  // namespace pb::cuda_backend::bayesian
