#pragma once
// energy_flow/aggregate: the per-flow and per-cell work of the deterministic segment softmax, shared
// by the Kokkos and CUDA variants (inside their kernels), written once as PB_HOST_DEVICE functions
// on raw pointers; tests/energy_flow_test.cpp runs them on the host over the whole index space.
//
// The groups are laid out as CSR: the completed flows of output cell c are members[offset[c],
// offset[c+1]), sorted by flow index. Each cell is owned by one thread, which reduces its own
// segment in flow order: no two threads write one value, and the summation order is the same on
// every run and every device (no floating-point atomics).

#include <cmath>
#include <cstdint>

#include "reference/energy_flow/aggregate.hpp"

namespace pb::optimized::energy_flow {

namespace ref = pb::reference::energy_flow;

/// The flows as the kernels see them (device pointers; one entry per flow).
struct FlowPointers {
  const int64_t* batch;
  const int64_t* steps;
  const float* x;
  const float* y;
  const float* z;
  const float* energy;
  const uint8_t* active;
  const uint8_t* projected;
};

/// Flow i's output cell b H W + s, or -1 when it is not completed.
PB_HOST_DEVICE inline int64_t completed_cell_body(int64_t i, const FlowPointers& flows, int width, int height) {
  if (!ref::is_completed(flows.active[i] != 0, flows.projected[i] != 0)) return -1;
  return flows.batch[i] * width * height + ref::surface_cell(flows.x[i], flows.y[i], width, height);
}

PB_HOST_DEVICE inline float omega_body(int64_t i, const FlowPointers& flows) {
  return ref::flow_weight(flows.energy[i], flows.z[i], static_cast<float>(flows.steps[i]));
}

/// Sorts one cell's members ascending (insertion sort: segments hold a few flows).
PB_HOST_DEVICE inline void sort_segment_body(int64_t* members, int64_t count) {
  for (int64_t i = 1; i < count; ++i) {
    const int64_t value = members[i];
    int64_t j = i;
    for (; j > 0 && members[j - 1] > value; --j) members[j] = members[j - 1];
    members[j] = value;
  }
}

/// out[cell]: the softmax of omega over the cell's members (max, exp, sum + 1e-12), weighted sum of
/// their energies, in member order; 0 for an empty cell.
PB_HOST_DEVICE inline float segment_softmax_body(const int64_t* members, int64_t count, const FlowPointers& flows) {
  if (count == 0) return 0.f;
  float largest = omega_body(members[0], flows);
  for (int64_t k = 1; k < count; ++k) {
    const float omega = omega_body(members[k], flows);
    largest = omega > largest ? omega : largest;
  }
  float total = 0.f;
  for (int64_t k = 0; k < count; ++k) total += expf(omega_body(members[k], flows) - largest);
  const float denominator = total + static_cast<float>(ref::kSoftmaxSumEpsilon);
  float out = 0.f;
  for (int64_t k = 0; k < count; ++k)
    out += expf(omega_body(members[k], flows) - largest) / denominator * flows.energy[members[k]];
  return out;
}

}  // namespace pb::optimized::energy_flow
