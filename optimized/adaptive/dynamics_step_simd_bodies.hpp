#pragma once
// adaptive/dynamics_step's vectorized_cells phase: all S steps of a block of kLanes
// cells at once, one cell per SIMD lane, on raw pointers. The Kokkos variant runs one block per
// work item and inlines this into its ISA clones (optimized/adaptive/dynamics_step-kokkos.cpp);
// tests/adaptive_dynamics_simd_test.cpp runs its pieces against the reference. Math:
// reference/adaptive/dynamics_step.hpp.
//
// What holds the other rows back (docs/adaptive.md, "The limit of dynamics_step"): one kernel or
// primitive per operation of a step, 15 to 339 per iteration, each a pass over [cells, H] arrays and
// a fork-join. A cell's dynamics read only its own state, x and phase and the shared parameters
// (W is 16 kB at H = 64), so here one work item runs every step of its 16 cells with the state in
// L1 and registers, the hidden state transposed (h[k] is one vector: unit k of the 16 cells):
//   - the drive W h + b of the block is a [H, H] x [H, 16] product, kRowGroup rows at a time: each
//     h[k] loaded once feeds kRowGroup independent multiply-add chains (each row's terms summed in
//     the reference's order, b_j first, then k = 0, 1, ...);
//   - its epilogue, per group of rows: the phase scale, the mask, the input, tanh (a polynomial
//     that vectorizes, christoffel_simd's tanh_lanes), and the new h's energy projection and mean;
//   - anxiety, energy and activity are per-cell values, one vector per block: no horizontal sums.
//   - The input term 0.1 u and mean_I(x) do not change between steps: formed once per block.
// The arithmetic is the reference's up to fp32 rounding (tanh's last bits, the exponential of the
// sigmoid); verify checks it against the fp64 oracle like every other row.

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "optimized/common/simd_lanes.hpp"  // Lanes, tanh_lanes, exp_normal_lanes, blocks
#include "reference/adaptive/dynamics_step.hpp"

// The functions below return vectors by value; they are always inlined into one ISA clone, so the
// ABI GCC warns about (a 64-byte vector returned without AVX-512) never applies.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace pb::adaptive_kernels::dynamics_simd {

namespace ref = pb::reference::adaptive;
namespace lanes = pb::optimized::simd;
using lanes::kLanes;  // cells per block
using lanes::Lanes;

/// The widest hidden state a block holds (every catalog size has H <= 64).
constexpr int64_t kMaxHidden = 64;

/// std::invalid_argument when a block cannot hold `hidden` units and `input` inputs per cell (the
/// variant's setup() asks): 2 <= H <= kMaxHidden (the variance over H needs 2), 1 <= I <= H (x is
/// transposed into a state's place; u = W[:, :I] x needs I <= H).
inline void require_block_fits(int64_t hidden, int64_t input) {
  if (hidden < 2 || hidden > kMaxHidden)
    throw std::invalid_argument("vectorized_cells holds 2 to " + std::to_string(kMaxHidden) +
                                " hidden units per cell; H = " + std::to_string(hidden));
  if (input < 1 || input > hidden)
    throw std::invalid_argument("vectorized_cells needs 1 <= I <= H; I = " + std::to_string(input) +
                                ", H = " + std::to_string(hidden));
}

/// Rows of the drive whose dot products run side by side (see the header comment).
constexpr int kRowGroup = 16;

/// The parameters and sizes a block reads: the reference's own, fp32, and W packed by pack_weight.
struct Model {
  const ref::Parameters<float>* parameters;
  const float* packed_weight;
  ref::Dimensions dims;
};

/// How many rows from row j the drive runs side by side: kRowGroup, or one in the tail of H.
inline int64_t row_group(int64_t H, int64_t j) { return j + kRowGroup <= H ? kRowGroup : 1; }

/// W [H, H] row-major laid out so that a group of G rows from j reads its weights in order:
/// packed[j H + k G + g] = W[j + g, k], the 16 weights of one k one cache line instead of 16 rows'
/// strided reads: a little faster than indexing W itself.
inline std::vector<float> pack_weight(const std::vector<float>& W, int64_t H) {
  std::vector<float> packed(W.size());
  for (int64_t j = 0; j < H; j += row_group(H, j)) {
    const int64_t G = row_group(H, j);
    for (int64_t g = 0; g < G; ++g)
      for (int64_t k = 0; k < H; ++k) packed[j * H + k * G + g] = W[(j + g) * H + k];
  }
  return packed;
}

/// What a block keeps between steps besides h: per-cell values, one lane per cell.
struct CellLanes {
  Lanes energy, activity;
  Lanes scale;       // 1 + s[p]
  Lanes moving;      // m = [p != 1]
  Lanes input_term;  // w_a[1] mean_I(x) / I, the activity's constant part
};

/// A block's hidden state, transposed ([unit][lane]): before and after a step, alternating (step t
/// reads state[t % 2] and writes the other), and the input term 0.1 u.
struct BlockScratch {
  Lanes state[2][kMaxHidden];
  Lanes scaled_input[kMaxHidden];
};

/// What the energy and the activity read of a step's new h, summed in unit order as it is formed.
struct NewStateSums {
  Lanes projection;  // b_e + w_e . h'
  Lanes hidden;      // Σ h'
};

#define PB_DYNAMICS_ALWAYS_INLINE PB_SIMD_ALWAYS_INLINE

PB_DYNAMICS_ALWAYS_INLINE Lanes clamp_lanes(const Lanes& v, float low, float high) {
  return v < low ? low : (v > high ? high : v);
}

/// 1 / (1 + e^{-z}) through t = e^{-|z|} <= 1: 1 / (1 + t) for z >= 0, t / (1 + t) below (the
/// reference's formula for z >= 0; for z < 0 the same value without e^{-z} overflowing). |z| is
/// clamped to 87 (exp_normal's domain): above it the result is 1 in fp32 anyway, below -87 it is
/// e^-87 = 1.6e-38 for smaller values, 2e-38 off at most (the logits here stay within ±2).
PB_DYNAMICS_ALWAYS_INLINE Lanes sigmoid_lanes(const Lanes& z) {
  const Lanes magnitude = lanes::abs_lanes(z);
  const Lanes t = lanes::exp_normal_lanes(-(magnitude < 87.0f ? magnitude : 87.0f));
  const Lanes positive = 1.0f / (1.0f + t);
  return z >= 0 ? positive : t * positive;
}

/// Σ_k f(h[k]) over the H units, in kChains interleaved partial sums: with one sum, a chain of H
/// dependent adds, the block takes longer, the drive's work waiting behind it.
constexpr int kChains = 4;
template <class Term>
PB_DYNAMICS_ALWAYS_INLINE Lanes sum_units(const Lanes* h, int64_t H, const Term& term) {
  Lanes partial[kChains] = {};
  int64_t k = 0;
  for (; k + kChains <= H; k += kChains)
    for (int c = 0; c < kChains; ++c) partial[c] += term(h[k + c]);
  for (; k < H; ++k) partial[0] += term(h[k]);
  static_assert(kChains == 4, "the partial sums are added in pairs below");
  return (partial[0] + partial[1]) + (partial[2] + partial[3]);
}

/// The unbiased variance over the H units of each lane's h (the reference's two passes).
PB_DYNAMICS_ALWAYS_INLINE Lanes variance_lanes(const Lanes* h, int64_t H) {
  const Lanes mean = sum_units(h, H, [](const Lanes& v) { return v; }) / float(H);
  return sum_units(h, H, [mean](const Lanes& v) { return (v - mean) * (v - mean); }) / float(H - 1);
}

/// drive[g] = b[j + g] + Σ_k W[j + g, k] h[k] for kGroup rows from j, the terms in k order;
/// `packed` is pack_weight's layout.
template <int kGroup>
PB_DYNAMICS_ALWAYS_INLINE void drive_rows(const float* packed, const float* b, int64_t H, int64_t j, const Lanes* h,
                                          Lanes* drive) {
  const float* weights = packed + j * H;
  for (int g = 0; g < kGroup; ++g) drive[g] = Lanes{} + b[j + g];
  for (int64_t k = 0; k < H; ++k)
    for (int g = 0; g < kGroup; ++g) drive[g] += weights[k * kGroup + g] * h[k];
}

/// next[j + g] = tanh(h + m ((W h + b)(1 + s[p]) + 0.1 u)) for kGroup rows from j, added to `sums`.
template <int kGroup>
PB_DYNAMICS_ALWAYS_INLINE void hidden_rows(const Model& model, int64_t j, const CellLanes& cell, const Lanes* h,
                                           const Lanes* scaled_input, Lanes* next, NewStateSums& sums) {
  const ref::Parameters<float>& w = *model.parameters;
  Lanes drive[kGroup];
  drive_rows<kGroup>(model.packed_weight, w.bias.data(), model.dims.hidden, j, h, drive);
  for (int g = 0; g < kGroup; ++g) {
    const Lanes updated = lanes::tanh_lanes(h[j + g] + cell.moving * (drive[g] * cell.scale + scaled_input[j + g]));
    next[j + g] = updated;
    sums.projection += w.energy_weight[j + g] * updated;
    sums.hidden += updated;
  }
}

/// One step of the block's cells: the new h from h into next, e and a in place.
PB_DYNAMICS_ALWAYS_INLINE void step_lanes(const Model& model, CellLanes& cell, const Lanes* h, const Lanes* scaled_input,
                                          Lanes* next) {
  const ref::Parameters<float>& w = *model.parameters;
  const int64_t H = model.dims.hidden;
  const Lanes shortfall = 5.0f - cell.energy;
  const Lanes anxious = (shortfall > 0 ? shortfall : 0.0f) + 2.0f * cell.activity + variance_lanes(h, H);
  NewStateSums sums{Lanes{} + w.energy_bias, Lanes{}};
  int64_t j = 0;
  for (; j + kRowGroup <= H; j += kRowGroup) hidden_rows<kRowGroup>(model, j, cell, h, scaled_input, next, sums);
  for (; j < H; ++j) hidden_rows<1>(model, j, cell, h, scaled_input, next, sums);
  const Lanes damping = 1.0f - 0.1f * clamp_lanes(anxious / 10.0f, 0.0f, 1.0f);
  cell.energy = clamp_lanes(0.99f * cell.energy + sums.projection * damping * cell.moving, 0.0f, 50.0f);
  const Lanes logit = w.activity_weight[0] * sums.hidden / float(H) + cell.input_term + w.activity_bias;
  cell.activity = clamp_lanes(sigmoid_lanes(logit), 0.0f, 1.0f);
}

/// What a block reads of the arrays: its `count` cells from cell `first`.
struct BlockInputs {
  const float *x, *h0, *e0, *a0;  // [C, I], [C, H], [C], [C]
  const int64_t* phase;           // [C]
};

/// `count` floats copied, as one vector when they are a whole one (a copy of variable size is a
/// call to memcpy).
PB_DYNAMICS_ALWAYS_INLINE void copy_floats(void* to, const void* from, int64_t count) {
  if (count == kLanes) {
    std::memcpy(to, from, sizeof(Lanes));
  } else {
    std::memcpy(to, from, count * sizeof(float));
  }
}

/// How many of a row's `width` floats from `first` one transpose moves: kLanes, or the rest.
inline int64_t chunk_width(int64_t width, int64_t first) { return width - first < kLanes ? width - first : kLanes; }

/// Rows [count][width] of an array, transposed into units[width] (unit k of the count cells, lanes
/// past count 0), kLanes units at a time: each cell's kLanes floats one copy, then
/// simd_lanes.hpp's 16 x 16 transpose (element by element, the block's loads and stores take a
/// noticeable share of its time).
PB_DYNAMICS_ALWAYS_INLINE void gather_units(const float* rows, int64_t width, int count, Lanes* units) {
  for (int64_t first = 0; first < width; first += kLanes) {
    const int64_t chunk = chunk_width(width, first);
    Lanes tile[kLanes] = {};
    for (int lane = 0; lane < count; ++lane) copy_floats(&tile[lane], rows + lane * width + first, chunk);
    lanes::transpose_lanes(tile);
    for (int64_t k = 0; k < chunk; ++k) units[first + k] = tile[k];
  }
}

/// gather_units' inverse: units[width] written to the count rows [count][width].
PB_DYNAMICS_ALWAYS_INLINE void scatter_units(const Lanes* units, int64_t width, int count, float* rows) {
  for (int64_t first = 0; first < width; first += kLanes) {
    const int64_t chunk = chunk_width(width, first);
    Lanes tile[kLanes] = {};
    for (int64_t k = 0; k < chunk; ++k) tile[k] = units[first + k];
    lanes::transpose_lanes(tile);
    for (int lane = 0; lane < count; ++lane) copy_floats(rows + lane * width + first, &tile[lane], chunk);
  }
}

/// The block's lanes from the inputs; lanes past `count` hold zeros (phase 0), computed and never
/// written back. x is transposed into state[1], which the first step overwrites.
PB_DYNAMICS_ALWAYS_INLINE CellLanes load_block(const Model& model, const BlockInputs& in, int count, BlockScratch& s) {
  const ref::Parameters<float>& w = *model.parameters;
  const int64_t H = model.dims.hidden, I = model.dims.input;
  gather_units(in.h0, H, count, s.state[0]);
  const Lanes* x = s.state[1];
  gather_units(in.x, I, count, s.state[1]);
  for (int64_t j = 0; j < H; ++j) {  // u = x if I == H, else W[:, :I] x (no bias)
    Lanes u{};
    if (I == H) {
      u = x[j];
    } else {
      for (int64_t k = 0; k < I; ++k) u += w.weight[j * H + k] * x[k];
    }
    s.scaled_input[j] = 0.1f * u;
  }
  Lanes input_sum{};
  for (int64_t k = 0; k < I; ++k) input_sum += x[k];
  CellLanes cell{};
  std::memcpy(&cell.energy, in.e0, count * sizeof(float));
  std::memcpy(&cell.activity, in.a0, count * sizeof(float));
  for (int lane = 0; lane < kLanes; ++lane) {
    const int64_t phase = lane < count ? in.phase[lane] : 0;
    cell.scale[lane] = 1.0f + w.phase_scale[phase];
    cell.moving[lane] = phase == ref::kSleepPhase ? 0.0f : 1.0f;
  }
  cell.input_term = w.activity_weight[1] * input_sum / float(I);
  return cell;
}

/// The block's `count` cells (their hidden state `state`) written to h [C, H], e [C], a [C] from
/// cell 0 of the pointers.
PB_DYNAMICS_ALWAYS_INLINE void store_block(const Model& model, const CellLanes& cell, const Lanes* state, int count,
                                           float* h, float* e, float* a) {
  scatter_units(state, model.dims.hidden, count, h);
  std::memcpy(e, &cell.energy, count * sizeof(float));
  std::memcpy(a, &cell.activity, count * sizeof(float));
}

/// Every step of `count` (1..kLanes) cells whose arrays start at `in` and h, e, a.
PB_DYNAMICS_ALWAYS_INLINE void dynamics_block(const Model& model, const BlockInputs& in, int count, float* h, float* e,
                                              float* a, BlockScratch& s) {
  CellLanes cell = load_block(model, in, count, s);
  const int64_t steps = model.dims.steps;
  for (int64_t t = 0; t < steps; ++t) step_lanes(model, cell, s.state[t % 2], s.scaled_input, s.state[(t + 1) % 2]);
  store_block(model, cell, s.state[steps % 2], count, h, e, a);
}

/// Block `block` of all C cells (arrays from cell 0), written to its cells of h, e, a: what one
/// work item of the Kokkos kernel runs.
PB_DYNAMICS_ALWAYS_INLINE void dynamics_block_of(const Model& model, const BlockInputs& all, float* h, float* e,
                                                 float* a, int64_t block, BlockScratch& s) {
  const int64_t first = lanes::first_point(block), H = model.dims.hidden;
  const BlockInputs in{all.x + first * model.dims.input, all.h0 + first * H, all.e0 + first, all.a0 + first,
                       all.phase + first};
  dynamics_block(model, in, lanes::block_count(model.dims.cells(), block), h + first * H, e + first, a + first, s);
}

#undef PB_DYNAMICS_ALWAYS_INLINE

}  // namespace pb::adaptive_kernels::dynamics_simd

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
