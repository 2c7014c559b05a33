#pragma once
// geometry/hamiltonian on CUDA: the per-thread bodies of the kernels in hamiltonian-cuda.cu. Each function
// is what one GPU thread does for its index; the .cu file only wraps them in __global__ kernels
// and picks launch shapes. They compile
// as plain C++ too, so tests/geometry_field_test.cpp runs them on the host over the whole index
// space and compares with the fp64 oracle. The math itself is the reference's PB_HOST_DEVICE
// code (reference/geometry/*.hpp), instantiated for float. COMPILED HERE, NEVER RUN ON A GPU.

#include <cstdint>

#include "backends/cuda/host_device.hpp"
#include "reference/geometry/hamiltonian.hpp"

namespace pb::cuda_backend::hamiltonian {

namespace ref = pb::reference::geometry;

// ==== hamiltonian: real view [nx, ny, channels], value index i = site * channels + c ==============

struct Lattice {
  int64_t nx, ny, channels;
};

PB_HOST_DEVICE inline float laplacian_at(const float* f, Lattice l, int64_t i) {
  const int64_t site = i / l.channels;
  return ref::periodic_laplacian(f, l.nx, l.ny, l.channels, site / l.ny, site % l.ny, i % l.channels);
}

/// Baseline: thread k of the launch for one complex channel (2 sites' worth of threads per site:
/// re and im of that channel).
PB_HOST_DEVICE inline void channel_stencil(int64_t k, int64_t complex_channel, const float* f, Lattice l, float* lap) {
  const int64_t i = (k / 2) * l.channels + 2 * complex_channel + k % 2;
  lap[i] = laplacian_at(f, l, i);
}

/// depthwise_stencil: one thread per value of every channel.
PB_HOST_DEVICE inline void stencil(int64_t i, const float* f, Lattice l, float* lap) { lap[i] = laplacian_at(f, l, i); }

// The elementwise tail without compiled, one kernel each (as three ATen ops).
PB_HOST_DEVICE inline void kinetic(int64_t i, const float* lap, float* out) { out[i] = float(-ref::kKinetic) * lap[i]; }
PB_HOST_DEVICE inline void potential(int64_t i, const float* f, const float* v, float* out) { out[i] = v[i / 2] * f[i]; }
PB_HOST_DEVICE inline void sum(int64_t i, const float* a, const float* b, float* out) { out[i] = a[i] + b[i]; }

/// compiled: H in one pass.
PB_HOST_DEVICE inline void fused_hamiltonian(int64_t i, const float* f, const float* v, Lattice l, float* h) {
  h[i] = ref::hamiltonian_value(laplacian_at(f, l, i), v[i / 2], f[i]);
}

}  // namespace pb::cuda_backend::hamiltonian
