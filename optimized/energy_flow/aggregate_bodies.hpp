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
#include <cstring>

#include "optimized/common/integer_math.hpp"
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

/// The precision of the softmax weights: fp32, or bf16 as the original's default configuration
/// computes them since a commit after seed 004 (collection_use_mixed_precision).
enum class WeightPrecision { Fp32, Bf16 };

/// v rounded to the nearest bfloat16 (ties to even), widened back to float: what v.to(bfloat16)
/// keeps of it. No NaN or infinity reaches it here (omega <= 60, weights in [0, 1]).
PB_HOST_DEVICE inline float bf16_rounded(float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  bits = (bits + 0x7fffu + ((bits >> 16) & 1u)) & 0xffff0000u;
  memcpy(&v, &bits, sizeof v);
  return v;
}

/// omega in the weights' precision: torch.softmax of a bf16 tensor reads bf16 values.
PB_HOST_DEVICE inline float omega_in(WeightPrecision precision, int64_t i, const FlowPointers& flows) {
  const float omega = omega_body(i, flows);
  return precision == WeightPrecision::Bf16 ? bf16_rounded(omega) : omega;
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
/// their energies, in member order; 0 for an empty cell. With Bf16 weights, as torch.softmax
/// computes a bf16 tensor: omega read as bf16, max, exp and sum in fp32, each weight rounded to bf16;
/// the weighted sum of the fp32 energies stays fp32.
PB_HOST_DEVICE inline float segment_softmax_body(const int64_t* members, int64_t count, const FlowPointers& flows,
                                                 WeightPrecision precision = WeightPrecision::Fp32) {
  if (count == 0) return 0.f;
  float largest = omega_in(precision, members[0], flows);
  for (int64_t k = 1; k < count; ++k) {
    const float omega = omega_in(precision, members[k], flows);
    largest = omega > largest ? omega : largest;
  }
  float total = 0.f;
  for (int64_t k = 0; k < count; ++k) total += expf(omega_in(precision, members[k], flows) - largest);
  const float denominator = total + static_cast<float>(ref::kSoftmaxSumEpsilon);
  float out = 0.f;
  for (int64_t k = 0; k < count; ++k) {
    const float weight = expf(omega_in(precision, members[k], flows) - largest) / denominator;
    out += (precision == WeightPrecision::Bf16 ? bf16_rounded(weight) : weight) * flows.energy[members[k]];
  }
  return out;
}

/// owned_cells: the cells split into blocks of `size` contiguous cells, block o owned by thread o
/// (the last may be shorter, and where owners > cells / size some own none). A flow's owner is
/// found by a multiplication, not a 64-bit division (tens of cycles per flow): cell / size in
/// double can only fall short of an integer quotient, by less than one, and is corrected.
struct CellBlocks {
  int64_t cells = 0, owners = 0, size = 0;
  double per_cell = 0;  // 1 / size
  PB_HOST_DEVICE int64_t owner_of(int64_t cell) const {
    const int64_t owner = static_cast<int64_t>(static_cast<double>(cell) * per_cell);
    return owner + ((owner + 1) * size <= cell ? 1 : 0);
  }
  PB_HOST_DEVICE int64_t first(int64_t owner) const { return owner * size < cells ? owner * size : cells; }
};
inline CellBlocks cell_blocks(int64_t cells, int64_t owners) {
  const int64_t size = ceil_div(cells, owners);
  return {cells, owners, size, 1.0 / static_cast<double>(size)};
}

/// A completed flow as its owner needs it: its cell, omega and energy, 12 contiguous bytes.
struct OwnedFlow {
  int32_t cell;
  float omega, energy;
};

/// One owner's block: cells [first, last) from its flows, in flow order: each cell's max, then
/// exp(omega - max), their sum and the weighted sum of the energies, divided once by sum + 1e-12
/// (0 for a cell no flow reached). largest, total and weighted are scratch indexed by cell (the
/// block's part only is touched). The arithmetic of segment_softmax_body but for its one division.
PB_HOST_DEVICE inline void owned_block_body(const OwnedFlow* flows, int64_t count, int64_t first, int64_t last,
                                            float* largest, float* total, float* weighted, float* out) {
  for (int64_t c = first; c < last; ++c) {
    largest[c] = -INFINITY;
    total[c] = 0.f;
    weighted[c] = 0.f;
  }
  for (int64_t k = 0; k < count; ++k) {
    const OwnedFlow flow = flows[k];
    largest[flow.cell] = flow.omega > largest[flow.cell] ? flow.omega : largest[flow.cell];
  }
  for (int64_t k = 0; k < count; ++k) {
    const OwnedFlow flow = flows[k];
    const float e = expf(flow.omega - largest[flow.cell]);
    total[flow.cell] += e;
    weighted[flow.cell] += e * flow.energy;
  }
  for (int64_t c = first; c < last; ++c)
    out[c] = total[c] > 0.f ? weighted[c] / (total[c] + static_cast<float>(ref::kSoftmaxSumEpsilon)) : 0.f;
}

}  // namespace pb::optimized::energy_flow
