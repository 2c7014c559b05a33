#pragma once
// energy_flow/aggregate's vectorized_flows phase: the aggregation as four passes over
// raw pointers, the per-flow work 16 flows at a time (one flow per SIMD lane). The Kokkos variant
// runs each pass as one kernel of one work item per thread and inlines these bodies into its ISA
// clones (aggregate-kokkos.cpp); tests/energy_flow_simd_test.cpp runs them on the host. Math:
// reference/energy_flow/aggregate.hpp.
//
// What held owned_cells back (docs/energy_flow.md, "The limit of aggregate"): the cell of each flow
// was scalar (the reference's round half to even, through floor and a branch), the exp a libm call
// per flow, and partitioning the flows by owner cost as much again as the softmax itself. Here:
//   1. each thread takes a slice of the flows, forms 16 keys and omegas per step (the rounding as
//      selects on integers), stores them, and keeps the max of omega per key in its own copy of
//      the cells: no partition, no atomics (a flow not completed goes to a spare cell);
//   2. the copies' maxima are merged, each thread merging a block of cells;
//   3. each slice again: exp(omega - max) 16 at a time (exp_nonpositive: within 1 ulp of expf),
//      and the sum and weighted sum per key, into the thread's own copy (one 8-byte pair per cell);
//   4. each block of cells: the copies' sums added in thread order, one division per cell.
// The summation order is flow order within a slice and thread order across slices: fixed for a
// given thread count, so every run gives the same bits (and the reference's up to fp32 rounding).

#include <cstdint>
#include <cstring>

#include "optimized/common/integer_math.hpp"
#include "optimized/common/simd_lanes.hpp"           // Lanes, LaneInts, exp_nonpositive_lanes
#include "optimized/energy_flow/aggregate_bodies.hpp"  // FlowPointers, CellBlocks, the epsilon

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"  // vectors by value, always inlined into one ISA clone
#endif

namespace pb::optimized::energy_flow::simd {

namespace lanes = pb::optimized::simd;
using lanes::Lanes;
using lanes::LaneInts;
constexpr int kLanes = lanes::kLanes;  // flows per block

/// What every pass needs to know of the problem and of the thread copies.
struct Layout {
  int width = 0, height = 0;  // W, H
  int64_t plane = 0;          // W H
  int64_t flows = 0;          // F
  int64_t cells = 0;          // B H W; cell `cells` is the spare one of the flows not completed
  int64_t copies = 0;         // thread copies of the cells (one per slice)
  int64_t copy_stride = 0;    // floats between two copies of `largest` (cells + 1, padded to a line)
  int64_t blocks() const { return ceil_div(flows, kLanes); }
};

inline Layout make_layout(int width, int height, int batch, int64_t flows, int64_t copies) {
  Layout layout;
  layout.width = width;
  layout.height = height;
  layout.plane = int64_t{width} * height;
  layout.flows = flows;
  layout.cells = batch * layout.plane;
  layout.copies = copies;
  constexpr int64_t kLineFloats = 64 / sizeof(float);  // no two copies share a cache line
  layout.copy_stride = (layout.cells + 1 + kLineFloats - 1) / kLineFloats * kLineFloats;
  return layout;
}

/// Slice s of `slices`: blocks [first, last) of 16 flows (whole blocks, so no slice starts mid-vector).
struct BlockRange {
  int64_t first, last;
};
inline BlockRange slice_blocks(const Layout& layout, int64_t slice, int64_t slices) {
  return {layout.blocks() * slice / slices, layout.blocks() * (slice + 1) / slices};
}

PB_SIMD_ALWAYS_INLINE Lanes min_lanes(const Lanes& a, const Lanes& b) { return b < a ? b : a; }  // ref::smaller

/// ref::lattice_index of 16 coordinates, the same indices: v = (x + 1) 0.5 (extent - 1) in fp32,
/// rounded half to even and clamped to [0, extent - 1]. v is clamped first, which changes no index
/// (a v below 0 rounds to at most 0, one above extent - 1 to at least extent - 1, and extent - 1 is
/// an integer) and leaves v >= 0, where truncation is the floor: the rounding is then the floor
/// plus 1 when the fraction (exact) is above 1/2, or is 1/2 and the floor odd.
PB_SIMD_ALWAYS_INLINE LaneInts lattice_index_lanes(const Lanes& normalised, int extent) {
  const float last = static_cast<float>(extent - 1);
  Lanes v = (normalised + 1.0f) * 0.5f * last;
  v = v < 0.0f ? 0.0f : (v > last ? last : v);
  const LaneInts below = __builtin_convertvector(v, LaneInts);
  const Lanes fraction = v - __builtin_convertvector(below, Lanes);
  return below + (fraction > 0.5f ? 1 : (fraction == 0.5f ? below & 1 : 0));
}

/// ref::flow_weight of 16 flows: |E| (1 / (1 + dist)) (1 + 0.1 steps).
PB_SIMD_ALWAYS_INLINE Lanes flow_weight_lanes(const Lanes& energy, const Lanes& z, const Lanes& steps) {
  const Lanes dist = min_lanes(lanes::abs_lanes(z + 1.0f), lanes::abs_lanes(z - 1.0f));
  return lanes::abs_lanes(energy) * (1.0f / (1.0f + dist)) *
         (1.0f + static_cast<float>(ref::kStepsWeight) * steps);
}

/// 16 flows' keys (each one's output cell b H W + s, or the spare cell when it is not completed)
/// and omegas.
struct FlowLanes {
  LaneInts key;
  Lanes omega;
};

/// Flows [first, first + 16) of `p`, all of them there. The integer and flag lanes are filled by
/// loops that GCC turns into vector conversions (vpmovqd, vcvtqq2ps, vpmovzxbd): in the ISA clones
/// its __builtin_convertvector of a 128-byte int64 vector came out lane by lane, as did
/// comparisons used as integer values rather than as selects (several times slower keys).
PB_SIMD_ALWAYS_INLINE FlowLanes sixteen_flows(const FlowPointers& p, const Layout& layout, int64_t first) {
  LaneInts active{}, projected{}, batch{};  // every lane is written below
  Lanes steps{};
  for (int l = 0; l < kLanes; ++l) {
    active[l] = p.active[first + l];
    projected[l] = p.projected[first + l];
    batch[l] = static_cast<int32_t>(p.batch[first + l]);
    steps[l] = static_cast<float>(p.steps[first + l]);
  }
  Lanes x, y, z, energy;
  std::memcpy(&x, p.x + first, sizeof x);
  std::memcpy(&y, p.y + first, sizeof y);
  std::memcpy(&z, p.z + first, sizeof z);
  std::memcpy(&energy, p.energy + first, sizeof energy);
  const LaneInts cell = batch * static_cast<int32_t>(layout.plane) +
                        lattice_index_lanes(y, layout.height) * layout.width + lattice_index_lanes(x, layout.width);
  // Not completed: active, or not projected. Written as one select: GCC 12 lowered two chained
  // selects on integer comparisons lane by lane in the AVX-512 clone (240 instructions, not 15).
  const LaneInts not_completed = active | (projected == 0 ? 1 : 0);
  return {not_completed != 0 ? static_cast<int32_t>(layout.cells) : cell, flow_weight_lanes(energy, z, steps)};
}

/// The last block's flows, fewer than 16, copied into 16 lanes; the lanes past them are flows
/// that are not projected (all zeros), so they go to the spare cell.
struct TailFlows {
  int64_t batch[kLanes] = {}, steps[kLanes] = {};
  float x[kLanes] = {}, y[kLanes] = {}, z[kLanes] = {}, energy[kLanes] = {};
  uint8_t active[kLanes] = {}, projected[kLanes] = {};
  TailFlows(const FlowPointers& p, int64_t first, int64_t count) {
    for (int64_t l = 0; l < count; ++l) {
      batch[l] = p.batch[first + l], steps[l] = p.steps[first + l];
      x[l] = p.x[first + l], y[l] = p.y[first + l], z[l] = p.z[first + l], energy[l] = p.energy[first + l];
      active[l] = p.active[first + l], projected[l] = p.projected[first + l];
    }
  }
  FlowPointers pointers() const { return {batch, steps, x, y, z, energy, active, projected}; }
};

/// Block b's flows (b < blocks()).
PB_SIMD_ALWAYS_INLINE FlowLanes flow_lanes(const FlowPointers& p, const Layout& layout, int64_t block) {
  const int64_t first = block * kLanes;
  if (first + kLanes <= layout.flows) return sixteen_flows(p, layout, first);
  const TailFlows tail(p, first, layout.flows - first);
  return sixteen_flows(tail.pointers(), layout, 0);
}

/// Pass 1, one slice: its flows' keys and omegas stored (keys[i], omegas[i]) and the max of omega
/// per key in this slice's copy `largest`, whose cells it resets first. The spare cell (index
/// `cells`) is written and never read: pass 3 takes a spare flow's own omega as its max, and no
/// pass reads the spare cell's max or sums, so neither is reset.
PB_SIMD_ALWAYS_INLINE void keys_and_maxima_of_slice(const FlowPointers& p, const Layout& layout,
                                                          BlockRange range, int32_t* keys, float* omegas,
                                                          float* largest) {
  for (int64_t c = 0; c < layout.cells; ++c) largest[c] = -INFINITY;
  for (int64_t block = range.first; block < range.last; ++block) {
    const FlowLanes flows = flow_lanes(p, layout, block);
    std::memcpy(keys + block * kLanes, &flows.key, sizeof flows.key);  // keys and omegas hold whole blocks
    std::memcpy(omegas + block * kLanes, &flows.omega, sizeof flows.omega);
    for (int l = 0; l < kLanes; ++l) {
      float& cell_max = largest[flows.key[l]];
      cell_max = flows.omega[l] > cell_max ? flows.omega[l] : cell_max;
    }
  }
}

/// Pass 2, one block of cells [first, last): the max over every copy into copy 0, and each copy's
/// sums (2 floats per cell, `sums` holding copies of 2 copy_stride floats) zeroed for pass 3.
PB_SIMD_ALWAYS_INLINE void merge_maxima_of_cells(const Layout& layout, int64_t first, int64_t last,
                                                       float* largest, float* sums) {
  for (int64_t copy = 1; copy < layout.copies; ++copy) {
    const float* other = largest + copy * layout.copy_stride;
    for (int64_t c = first; c < last; ++c) largest[c] = other[c] > largest[c] ? other[c] : largest[c];
  }
  for (int64_t copy = 0; copy < layout.copies; ++copy)
    for (int64_t v = 2 * first; v < 2 * last; ++v) sums[copy * 2 * layout.copy_stride + v] = 0.0f;
}

/// Pass 3, one slice: exp(omega - max) of its flows, their sum and their weighted sum of energies
/// per key into this slice's copy `sums` (pairs [sum, weighted sum] per cell), in flow order, with
/// `largest` the merged maxima. A flow in the spare cell (never merged, never read) takes its own
/// omega as the max: e = 1, finite whatever the spare cell holds.
PB_SIMD_ALWAYS_INLINE void sums_of_slice(const FlowPointers& p, const Layout& layout, BlockRange range,
                                               const int32_t* keys, const float* omegas, const float* largest,
                                               float* sums) {
  for (int64_t block = range.first; block < range.last; ++block) {
    const int64_t first = block * kLanes;
    const int count = static_cast<int>(layout.flows - first < kLanes ? layout.flows - first : kLanes);
    LaneInts key;
    Lanes omega, cell_max;
    std::memcpy(&key, keys + first, sizeof key);
    std::memcpy(&omega, omegas + first, sizeof omega);
    for (int l = 0; l < kLanes; ++l) cell_max[l] = largest[key[l]];
    cell_max = key == static_cast<int32_t>(layout.cells) ? omega : cell_max;
    const Lanes e = lanes::exp_nonpositive_lanes(omega - cell_max);
    Lanes energy{};
    if (count == kLanes) std::memcpy(&energy, p.energy + first, sizeof energy);
    else for (int l = 0; l < count; ++l) energy[l] = p.energy[first + l];
    const Lanes weighted = e * energy;
    for (int l = 0; l < kLanes; ++l) {
      float* pair = sums + 2 * int64_t{key[l]};
      pair[0] += e[l];
      pair[1] += weighted[l];
    }
  }
}

/// Pass 4, one block of cells [first, last): out[c] = weighted / (sum + 1e-12), the copies added
/// in copy order; 0 where no completed flow landed (both sums 0: a cell with a flow has sum >= 1,
/// its largest omega's e^0).
PB_SIMD_ALWAYS_INLINE void outputs_of_cells(const Layout& layout, int64_t first, int64_t last,
                                                  const float* sums, float* out) {
  for (int64_t c = first; c < last; ++c) {
    float total = 0.0f, weighted = 0.0f;
    for (int64_t copy = 0; copy < layout.copies; ++copy) {
      total += sums[copy * 2 * layout.copy_stride + 2 * c];
      weighted += sums[copy * 2 * layout.copy_stride + 2 * c + 1];
    }
    out[c] = weighted / (total + static_cast<float>(ref::kSoftmaxSumEpsilon));
  }
}

// ---- the passes of one work item, as the kernels run them ---------------------------------------
// Slice s (pass 1 and 3) reads and writes its own blocks of keys and omegas and its own copy of the
// cells (copy s of `largest_copies`, copy_stride floats each; of `sum_copies`, 2 copy_stride each);
// owner o (pass 2 and 4) its own block of cells, `blocks` the cells split over the copies.

PB_SIMD_ALWAYS_INLINE void keys_and_maxima_of(const FlowPointers& p, const Layout& layout, int64_t slice,
                                                    int32_t* keys, float* omegas, float* largest_copies) {
  keys_and_maxima_of_slice(p, layout, slice_blocks(layout, slice, layout.copies), keys, omegas,
                           largest_copies + slice * layout.copy_stride);
}
PB_SIMD_ALWAYS_INLINE void merge_maxima_of(const Layout& layout, const CellBlocks& blocks, int64_t owner,
                                                 float* largest_copies, float* sum_copies) {
  merge_maxima_of_cells(layout, blocks.first(owner), blocks.first(owner + 1), largest_copies, sum_copies);
}
PB_SIMD_ALWAYS_INLINE void sums_of(const FlowPointers& p, const Layout& layout, int64_t slice,
                                         const int32_t* keys, const float* omegas, const float* largest_copies,
                                         float* sum_copies) {
  sums_of_slice(p, layout, slice_blocks(layout, slice, layout.copies), keys, omegas, largest_copies,
                sum_copies + slice * 2 * layout.copy_stride);
}
PB_SIMD_ALWAYS_INLINE void outputs_of(const Layout& layout, const CellBlocks& blocks, int64_t owner,
                                            const float* sum_copies, float* out) {
  outputs_of_cells(layout, blocks.first(owner), blocks.first(owner + 1), sum_copies, out);
}

}  // namespace pb::optimized::energy_flow::simd

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
