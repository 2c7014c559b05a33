#pragma once
// trainer2's vectorized_window phase: the two kernels that carry a blocked window's
// time (temporal_blocking, trainer2_engine_window-kokkos.hpp) as host SIMD code on raw pointers:
// the field of all W steps (field_window there, run_block here) and the last step's retrieval
// (retrieval_fused there, retrieval_weights and retrieval_mix here). The Kokkos variant runs one
// channel block or batch rows per work item and inlines these into its ISA clones
// (window_simd-kokkos.cpp); tests/trainer2_window_simd_test.cpp runs them against the reference.
// Math: reference/trainer2/trainer2.hpp (field_force, field_step, retrieval).
//
// What temporal_blocking's field kernel spends its time on (a perf profile, docs/trainer2.md): the
// site loop is generic in the block's width (peeling, remainder, alignment tests), each site
// finds its neighbours by a 64-bit division, Σ |F_t| is a second pass over the block every step,
// and the build's baseline is SSE2. Here a block is always 32 channels (a ragged last block is
// padded with zeros that stay exactly 0: force 0, momentum 0), a site is two AVX-512 registers,
// the sites are walked row by row, Σ |F_t| is taken from the step's own loads, and the steps run in
// pairs, one sweep over the grid rows per two steps (step_pair), so that the block's buffers cross
// L2 once per two steps.
//
// Per step t and site, as temporal_blocking: f = Force(F_t); P = h f (t = 0) or (P + h f) + h f;
// F_{t+1} = F_t + (dt/m) P; after the last step P += h Force(F_W). The ISA clones may contract a
// multiply and an add into one FMA (one rounding fewer); partial(t, block) sums |F_t| per lane
// (the 16 complex positions of a site) over the sites, then the lanes in order.

#include <cmath>
#include <cstdint>

#include "optimized/common/integer_math.hpp"
#include "optimized/trainer2/field_dynamics.hpp"
#include "optimized/trainer2/retrieval_simd_bodies.hpp"  // softmax_of_logits
#include "reference/trainer2/trainer2.hpp"

#if defined(__GNUC__)
#define PB_FIELD_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define PB_FIELD_ALWAYS_INLINE inline
#endif

namespace pb::trainer2_kernels::window_simd {

using pb::optimized::ceil_div;

/// Channels per block: 32 floats, two AVX-512 registers per site; a block's four buffers at the
/// default size's 784 sites are 401 kB, which stay in one core's L2 for all W steps.
constexpr int64_t kBlock = 32;
constexpr int64_t kPairs = kBlock / 2;  // complex values per site and block

/// The field's grid: nx x ny sites, `channels` reals per site (complex values as (re, im) pairs).
struct Grid {
  int64_t nx, ny, channels;
  int64_t sites() const { return nx * ny; }
};

/// Channel blocks covering the grid's channels (the last one padded with zeros).
inline int64_t blocks(const Grid& grid) { return ceil_div(grid.channels, kBlock); }

/// Floats of one grid row of a block: ny sites x kBlock channels.
inline int64_t row_floats(const Grid& grid) { return grid.ny * kBlock; }

/// Floats of one block's scratch: F twice, P and F_eq [sites, kBlock]; a row of zeros (the
/// padding past every edge); and a ring of three rows for the middle step of a pair.
inline int64_t scratch_floats(const Grid& grid) { return 4 * grid.sites() * kBlock + 4 * row_floats(grid); }

/// One site's rows in a block buffer: its own, its four neighbours' (zeros past an edge: the zero
/// padding), and F_eq's.
struct Rows {
  const float* center;
  const float* x_next;
  const float* x_prev;
  const float* y_next;
  const float* y_prev;
  const float* equilibrium;
};

/// Force(F) at component c of a site (field_dynamics.hpp's force_value, the engine's formula).
PB_FIELD_ALWAYS_INLINE float force(const Rows& rows, int64_t c) {
  return force_value(rows.x_next[c], rows.x_prev[c], rows.y_next[c], rows.y_prev[c], rows.center[c],
                     rows.equilibrium[c]);
}

/// Grid row x of a block buffer ([sites, kBlock]), or the zero row past an edge.
PB_FIELD_ALWAYS_INLINE const float* grid_row(const Grid& grid, const float* buffer, int64_t x, const float* zero_row) {
  return x >= 0 && x < grid.nx ? buffer + x * row_floats(grid) : zero_row;
}

/// Site y of a grid row: `row`, the grid rows before and after it and F_eq's row (each ny sites of
/// kBlock floats; `zero_row` where there is none).
PB_FIELD_ALWAYS_INLINE Rows site_rows(int64_t ny, const float* prev, const float* row, const float* next,
                                      const float* equilibrium, const float* zero_row, int64_t y) {
  const int64_t at = y * kBlock;
  return {row + at,
          next + at,
          prev + at,
          y + 1 < ny ? row + at + kBlock : zero_row,
          y > 0 ? row + at - kBlock : zero_row,
          equilibrium + at};
}

/// One step at one site: momentum and the next F for the block's 32 channels, and |F_t| of its 16
/// complex values added to `lanes`.
template <bool kFirstStep>
PB_FIELD_ALWAYS_INLINE void step_site(const Rows& rows, float* __restrict momentum, float* __restrict next,
                                      float* __restrict lanes) {
  for (int64_t c = 0; c < kBlock; ++c) {
    const float half_kick = kHalfDt * force(rows, c);
    const float p = kFirstStep ? half_kick : (momentum[c] + half_kick) + half_kick;
    momentum[c] = p;
    next[c] = rows.center[c] + kDtOverMass * p;
  }
  // Not unrolled: GCC would peel the 16 iterations whole before vectorizing, then keep them scalar.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 1
#endif
  for (int64_t m = 0; m < kPairs; ++m) {
    const float re = rows.center[2 * m], im = rows.center[2 * m + 1];
    lanes[m] += std::sqrt(re * re + im * im);
  }
}

/// One step of one grid row: its momentum row and its row of the next F, from the rows of F_t
/// before, at and after it.
template <bool kFirstStep>
PB_FIELD_ALWAYS_INLINE void step_row(int64_t ny, const float* prev, const float* row, const float* next,
                                     const float* equilibrium, const float* zero_row, float* momentum, float* out,
                                     float* lanes) {
  for (int64_t y = 0; y < ny; ++y)
    step_site<kFirstStep>(site_rows(ny, prev, row, next, equilibrium, zero_row, y), momentum + y * kBlock,
                          out + y * kBlock, lanes);
}

/// Σ over the lanes, in order.
PB_FIELD_ALWAYS_INLINE float lane_sum(const float* lanes) {
  float sum = 0;
  for (int64_t m = 0; m < kPairs; ++m) sum += lanes[m];
  return sum;
}

/// A block's buffers (see scratch_floats).
struct BlockBuffers {
  float* F[2];
  float* P;
  float* equilibrium;
  float* zero_row;
  float* ring;
};

/// Steps t and t + 1 in one sweep over the grid rows, F_t in `current`, F_{t+2} to `next`: row x
/// of step t (into the ring), then row x - 1 of step t + 1, whose three rows of F_{t+1} are in the
/// ring by then. Each site's F, P and F_eq come from L2 once per two steps instead of once per
/// step: what bounds the one-step sweep (its traffic from L2 per site and step). The momentum
/// row is updated in place by both (row x by step t before row x by step t + 1, one sweep later).
/// sums[0], sums[1] = Σ |F_t|, Σ |F_{t+1}| over the block.
template <bool kFirstStep>
PB_FIELD_ALWAYS_INLINE void step_pair(const Grid& grid, const BlockBuffers& buffers, const float* current, float* next,
                                      float* sums) {
  const int64_t nx = grid.nx, ny = grid.ny, row = row_floats(grid);
  const float* zero = buffers.zero_row;
  const auto ring_row = [&](int64_t x) { return buffers.ring + (x % 3) * row; };
  float first[kPairs] = {}, second[kPairs] = {};
  for (int64_t x = 0; x <= nx; ++x) {
    if (x < nx)
      step_row<kFirstStep>(ny, grid_row(grid, current, x - 1, zero), current + x * row,
                           grid_row(grid, current, x + 1, zero), buffers.equilibrium + x * row, zero,
                           buffers.P + x * row, ring_row(x), first);
    if (x > 0) {
      const int64_t middle = x - 1;
      step_row<false>(ny, middle > 0 ? ring_row(middle - 1) : zero, ring_row(middle), x < nx ? ring_row(x) : zero,
                      buffers.equilibrium + middle * row, zero, buffers.P + middle * row, next + middle * row, second);
    }
  }
  sums[0] = lane_sum(first);
  sums[1] = lane_sum(second);
}

/// One step over the grid rows (a window's odd last step): F_{t+1} to `next`; returns Σ |F_t|.
template <bool kFirstStep>
PB_FIELD_ALWAYS_INLINE float step_single(const Grid& grid, const BlockBuffers& buffers, const float* current,
                                         float* next) {
  const int64_t nx = grid.nx, row = row_floats(grid);
  const float* zero = buffers.zero_row;
  float lanes[kPairs] = {};
  for (int64_t x = 0; x < nx; ++x)
    step_row<kFirstStep>(grid.ny, grid_row(grid, current, x - 1, zero), current + x * row,
                         grid_row(grid, current, x + 1, zero), buffers.equilibrium + x * row, zero, buffers.P + x * row,
                         next + x * row, lanes);
  return lane_sum(lanes);
}

/// The window's field for channel block `block`: from F = F_start, P = 0 (F_eq fixed) through
/// `steps` steps (in pairs, step_pair) and the last step's second half kick; F_out and P_out
/// [sites, channels] get the block's channels, partial[t * blocks(grid) + block] = Σ |F_t| over the
/// block. `scratch` holds scratch_floats(grid) floats per block, blocks(grid) of them: this block
/// uses its own share only (another work item may run another block meanwhile).
PB_FIELD_ALWAYS_INLINE void run_block(const Grid& grid, int64_t steps, const float* F_start, const float* F_eq,
                                      float* F_out, float* P_out, float* partial, int64_t block, float* scratch_all) {
  float* const scratch = scratch_all + block * scratch_floats(grid);
  const int64_t sites = grid.sites(), ch = grid.channels, c0 = block * kBlock, row = row_floats(grid);
  const int64_t width = ch - c0 < kBlock ? ch - c0 : kBlock;
  const BlockBuffers buffers{{scratch, scratch + sites * kBlock},
                             scratch + 2 * sites * kBlock,
                             scratch + 3 * sites * kBlock,
                             scratch + 4 * sites * kBlock,
                             scratch + 4 * sites * kBlock + row};
  for (int64_t i = 0; i < row; ++i) buffers.zero_row[i] = 0;
  for (int64_t s = 0; s < sites; ++s)
    for (int64_t c = 0; c < kBlock; ++c) {
      buffers.F[0][s * kBlock + c] = c < width ? F_start[s * ch + c0 + c] : 0.0f;
      buffers.equilibrium[s * kBlock + c] = c < width ? F_eq[s * ch + c0 + c] : 0.0f;
      buffers.P[s * kBlock + c] = 0;  // a window of no steps leaves P = 0; else the first step overwrites it
    }
  const int64_t stride = blocks(grid);
  int current = 0;
  int64_t t = 0;
  for (; t + 1 < steps; t += 2, current = 1 - current) {
    float sums[2];
    if (t == 0)
      step_pair<true>(grid, buffers, buffers.F[current], buffers.F[1 - current], sums);
    else
      step_pair<false>(grid, buffers, buffers.F[current], buffers.F[1 - current], sums);
    partial[t * stride + block] = sums[0];
    partial[(t + 1) * stride + block] = sums[1];
  }
  if (t < steps) {
    partial[t * stride + block] = t == 0
                                      ? step_single<true>(grid, buffers, buffers.F[current], buffers.F[1 - current])
                                      : step_single<false>(grid, buffers, buffers.F[current], buffers.F[1 - current]);
    current = 1 - current;
  }
  const float* last = buffers.F[current];
  for (int64_t x = 0; x < grid.nx; ++x)
    for (int64_t y = 0; y < grid.ny; ++y) {
      const int64_t site = x * grid.ny + y;
      const Rows rows =
          site_rows(grid.ny, grid_row(grid, last, x - 1, buffers.zero_row), last + x * row,
                    grid_row(grid, last, x + 1, buffers.zero_row), buffers.equilibrium + x * row, buffers.zero_row, y);
      float* momentum = buffers.P + site * kBlock;
      if (steps > 0)  // the last step's second half kick
        for (int64_t c = 0; c < kBlock; ++c) momentum[c] = momentum[c] + kHalfDt * force(rows, c);
      for (int64_t c = 0; c < width; ++c) {
        F_out[site * ch + c0 + c] = rows.center[c];
        P_out[site * ch + c0 + c] = momentum[c];
      }
    }
}

// ---- the last step's retrieval ---------------------------------------------------------------------

/// The candidates concat_K(O[b], bank) where they lie: token k < T of row b is O[b, k] (its first
/// n components its coordinates), candidate T + c is bank row c.
struct Candidates {
  const float* O;           // [B, T, d]
  const float* bank_coord;  // [C, n]
  const float* bank_state;  // [C, d]
  int64_t tokens, bank_rows, state_dim;
  int64_t count() const { return tokens + bank_rows; }  // K
};

/// The weights [K] of batch row b, as retrieval_fused computes them: softmax_k of the logits
/// −β R spd (ref::retrieval_logit, the reference's order in each), their maximum and the softmax
/// by retrieval_simd's maximum and softmax_of_logits (vectorized exponentials, their sum in k
/// order). The logit loops carry no running maximum, which would keep them scalar.
PB_FIELD_ALWAYS_INLINE void retrieval_weights(const Candidates& candidates, int64_t b, const float* query,
                                              const float* metric, float curvature, float* __restrict weights) {
  namespace rs = pb::trainer2_kernels::retrieval_simd;
  const int64_t T = candidates.tokens, C = candidates.bank_rows, K = candidates.count(), d = candidates.state_dim;
  const int64_t n = pb::reference::trainer2::kCoordinateDim;
  const float* tokens = candidates.O + b * T * d;
  for (int64_t k = 0; k < T; ++k)
    weights[k] = pb::reference::trainer2::retrieval_logit(tokens + k * d, query, metric, curvature);
  for (int64_t c = 0; c < C; ++c)
    weights[T + c] = pb::reference::trainer2::retrieval_logit(candidates.bank_coord + c * n, query, metric, curvature);
  rs::softmax_of_logits(weights, K, rs::maximum(weights, K));
}

/// Batch rows per work item of the mixing: 4 rows of act (4 kB at the default d = 256) stay in L1
/// while the bank streams past them.
constexpr int64_t kMixRows = 4;

/// Work items of the mixing: groups of kMixRows batch rows (the last one partial).
inline int64_t mix_groups(int64_t batch) { return ceil_div(batch, kMixRows); }

/// act [B, d], the rows of group `group`: Σ_k weights[b, k] state_k, k ascending (row b's tokens,
/// then the bank rows), the reference's order for every column. Each bank row is read once per
/// group, whole and in order (a stream the prefetchers follow), where retrieval_fused reads the
/// 2 MB bank once per batch row; chunks of columns read 256 B of each 1 kB row instead, which is
/// slower.
PB_FIELD_ALWAYS_INLINE void retrieval_mix(const Candidates& candidates, int64_t batch, const float* weights,
                                          int64_t group, float* __restrict act) {
  const int64_t T = candidates.tokens, C = candidates.bank_rows, K = candidates.count(), d = candidates.state_dim;
  const int64_t first = group * kMixRows, last = first + kMixRows < batch ? first + kMixRows : batch;
  for (int64_t b = first; b < last; ++b)  // row b's tokens, then the bank below
    pb::trainer2_kernels::retrieval_simd::mix_states(candidates.O + b * T * d, weights + b * K, T, d, act + b * d);
  for (int64_t c = 0; c < C; ++c) {
    const float* state = candidates.bank_state + c * d;
    for (int64_t b = first; b < last; ++b) {
      const float w = weights[b * K + T + c];
      float* out = act + b * d;
      for (int64_t j = 0; j < d; ++j) out[j] += w * state[j];
    }
  }
}

}  // namespace pb::trainer2_kernels::window_simd
