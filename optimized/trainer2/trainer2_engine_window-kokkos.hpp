#pragma once
// One run_window of the trainer2 suite on Kokkos (reference/trainer2/trainer2.hpp run_window),
// shared by window-kokkos.cpp and train_step-kokkos.cpp: the field dynamics, the retrieval batch,
// the accumulators and the deferred metrics, then the WindowRunner that strings them together
// with the building blocks of trainer2_engine-kokkos.hpp as the variant's plan asks.
//
// The field is stored flat as [Nx*Ny sites, channels] (channels = D*D*2 real components, complex
// values as (re, im) pairs). The op-by-op stencil kernels run one team per site with the
// channels as the vector range; with temporal_blocking the whole field of the window runs in
// one kernel, one team per block of channels (field_window). Either way a neighbour past the
// edge reads a row of zeros (the zero padding), so the inner loop has no branch and adds the
// same zeros the reference adds.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "backends/kokkos/host_vectorization.hpp"
#include "optimized/common/integer_math.hpp"
#include "optimized/trainer2/trainer2_engine-kokkos.hpp"
#include "optimized/trainer2/window_simd_bodies.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/phases.hpp"
#include "suites/trainer2/window_io.hpp"

namespace pb::kokkos_backend::trainer2 {

namespace ws = pb::trainer2_kernels::window_simd;
using pb::optimized::ceil_div;

inline const std::string kModulusLabel = "trainer2/field/modulus";
inline const std::string kModulusSumLabel = "trainer2/field/modulus_sum";
inline const std::string kCurvatureLabel = "trainer2/field/curvature";
inline const std::string kForceLabel = "trainer2/field/force";
inline const std::string kKickLabel = "trainer2/field/kick";
inline const std::string kDriftLabel = "trainer2/field/drift";
inline const std::string kFieldWindowLabel = "trainer2/field/window_blocked";
inline const std::string kTokenMeanLabel = "trainer2/batch/token_mean";
inline const std::string kCandCoordLabel = "trainer2/batch/cand_coord";
inline const std::string kCandStateLabel = "trainer2/batch/cand_state";
inline const std::string kShiftLabel = "trainer2/batch/add_nudge";
inline const std::string kRotateLabel = "trainer2/batch/rotor_apply";
inline const std::string kQueryLabel = "trainer2/batch/query_fused";
inline const std::string kMeanLabel = "trainer2/lior/mean";
inline const std::string kAccumulateLabel = "trainer2/window/accumulate";
inline const std::string kVelocityLabel = "trainer2/window/velocity_acc";
inline const std::string kPathLabel = "trainer2/window/path_push";
inline const std::string kProgressLabel = "trainer2/window/progress";
inline const std::string kWindowMeansLabel = "trainer2/window/means";
inline const std::string kDeferredMetricsLabel = "trainer2/window/deferred_metrics";
inline const std::string kZeroLabel = "trainer2/window/zero";
inline const std::string kWeightsLabel = "trainer2/retrieval/weights";
// Views that run() deep-copies (fills, resets, host reads) have labels of at most 15 characters:
// with Kokkos Tools callbacks installed (while phasebench counts), deep_copy materializes both
// labels as std::strings, and a longer one would be counted as a heap allocation of the variant.
inline const std::string kLiorAccLabel = "lior_acc";
inline const std::string kRAccLabel = "R_acc";
inline const std::string kSpdAccLabel = "spd_acc";
inline const std::string kVelAccLabel = "vel_acc";

// ---- field dynamics ----------------------------------------------------------------------------------

struct FieldShape {
  int64_t nx, ny, channels;
  KOKKOS_INLINE_FUNCTION int64_t sites() const { return nx * ny; }
};

/// True when kernels run on a host execution space (Serial, OpenMP, Threads).
constexpr bool kHostExecution = std::is_same<MemSpace, Kokkos::HostSpace>::value;

/// body(begin, end) over [0, count) shared by a team. On a host space each thread of the team
/// takes one contiguous chunk, so body's loop is a plain SIMD loop over restrict-qualified rows;
/// on a GPU each thread takes single elements, interleaved, so neighbouring threads touch
/// neighbouring addresses.
template <class Body>
KOKKOS_INLINE_FUNCTION void for_each_chunk(const Member& team, int64_t count, const Body& body) {
  if constexpr (kHostExecution) {
    const int64_t chunks = team.team_size();
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, chunks),
                         [&](int64_t r) { body(count * r / chunks, count * (r + 1) / chunks); });
  } else {
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, count), [&](int64_t i) { body(i, i + 1); });
  }
}

/// One site's rows: its own, its four neighbours' (the zero row past an edge: zero padding) and
/// F_eq's (the struct vectorized_window's field uses too). Only read, so they may overlap
/// (restrict constrains modified objects only).
using SiteRows = ws::Rows;

KOKKOS_INLINE_FUNCTION SiteRows site_rows(const FieldShape& shape, const float* F, const float* F_eq,
                                          const float* zero, int64_t site) {
  const int64_t x = site / shape.ny, y = site % shape.ny, ch = shape.channels;
  const float* center = F + site * ch;
  return {center,
          x + 1 < shape.nx ? center + shape.ny * ch : zero,
          x > 0 ? center - shape.ny * ch : zero,
          y + 1 < shape.ny ? center + ch : zero,
          y > 0 ? center - ch : zero,
          F_eq + site * ch};
}

using pb::trainer2_kernels::force_value;  // Force(F) at one component (field_dynamics.hpp)

// The per-site loops of the stencil kernels, over components [begin, end). Rows arrive as
// restrict-qualified parameters: the written row is a different View from every row read, so
// a host compiler vectorizes without alias checks (it gives up past 10 of them).

/// out = Force(F) on the site.
KOKKOS_INLINE_FUNCTION void force_loop(int64_t begin, int64_t end, const float* KOKKOS_RESTRICT center,
                                       const float* KOKKOS_RESTRICT x_next,
                                       const float* KOKKOS_RESTRICT x_prev,
                                       const float* KOKKOS_RESTRICT y_next,
                                       const float* KOKKOS_RESTRICT y_prev,
                                       const float* KOKKOS_RESTRICT equilibrium, float* KOKKOS_RESTRICT out) {
  for (int64_t c = begin; c < end; ++c)
    out[c] = force_value(x_next[c], x_prev[c], y_next[c], y_prev[c], center[c], equilibrium[c]);
}

/// momentum = momentum + h Force(F) (the last half kick of a window).
KOKKOS_INLINE_FUNCTION void kick_loop(int64_t begin, int64_t end, const float* KOKKOS_RESTRICT center,
                                      const float* KOKKOS_RESTRICT x_next,
                                      const float* KOKKOS_RESTRICT x_prev,
                                      const float* KOKKOS_RESTRICT y_next,
                                      const float* KOKKOS_RESTRICT y_prev,
                                      const float* KOKKOS_RESTRICT equilibrium,
                                      float* KOKKOS_RESTRICT momentum) {
  for (int64_t c = begin; c < end; ++c)
    momentum[c] = momentum[c] + kHalfDt * force_value(x_next[c], x_prev[c], y_next[c], y_prev[c], center[c],
                                                      equilibrium[c]);
}

/// A fused step on the site: with f = Force(F), P = h f (first step, P = 0) or
/// P = (P + h f) + h f (the previous step's second half kick, then this step's first: two
/// roundings, as the reference's two separate kicks), then F_next = F + (dt/m) P.
KOKKOS_INLINE_FUNCTION void fused_step_loop(
    int64_t begin, int64_t end, bool first_step, const float* KOKKOS_RESTRICT center,
    const float* KOKKOS_RESTRICT x_next, const float* KOKKOS_RESTRICT x_prev,
    const float* KOKKOS_RESTRICT y_next, const float* KOKKOS_RESTRICT y_prev,
    const float* KOKKOS_RESTRICT equilibrium, float* KOKKOS_RESTRICT momentum, float* KOKKOS_RESTRICT next) {
  if (first_step) {
    for (int64_t c = begin; c < end; ++c) {
      const float p =
          kHalfDt * force_value(x_next[c], x_prev[c], y_next[c], y_prev[c], center[c], equilibrium[c]);
      momentum[c] = p;
      next[c] = center[c] + kDtOverMass * p;
    }
  } else {
    for (int64_t c = begin; c < end; ++c) {
      const float half_kick =
          kHalfDt * force_value(x_next[c], x_prev[c], y_next[c], y_prev[c], center[c], equilibrium[c]);
      const float p = (momentum[c] + half_kick) + half_kick;
      momentum[c] = p;
      next[c] = center[c] + kDtOverMass * p;
    }
  }
}

/// Σ |z| over complex values [begin, end) of the (re, im) pairs at `values`, in 8 interleaved
/// partial sums (lane l takes values l, l + 8, ...; then the lanes in order, then the tail):
/// a serial float sum would be one dependency chain the compiler may not reorder.
KOKKOS_INLINE_FUNCTION float modulus_sum(int64_t begin, int64_t end, const float* KOKKOS_RESTRICT values) {
  constexpr int kLanes = 8;
  float lanes[kLanes] = {};
  int64_t m = begin;
  for (; m + kLanes <= end; m += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float re = values[2 * (m + l)], im = values[2 * (m + l) + 1];
      lanes[l] += device_math::sqrt(re * re + im * im);
    }
  float sum = 0;
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  for (; m < end; ++m)
    sum += device_math::sqrt(values[2 * m] * values[2 * m] + values[2 * m + 1] * values[2 * m + 1]);
  return sum;
}

/// force = Force(F).
inline void field_force(const FieldShape& shape, const ConstVec& F, const ConstVec& F_eq,
                        const ConstVec& zero, const Vec& force) {
  Kokkos::parallel_for(
      kForceLabel, TeamPolicy(shape.sites(), Kokkos::AUTO), KOKKOS_LAMBDA(const Member& team) {
        const int64_t site = team.league_rank();
        const SiteRows rows = site_rows(shape, F.data(), F_eq.data(), zero.data(), site);
        float* out = force.data() + site * shape.channels;
        for_each_chunk(team, shape.channels, [&](int64_t begin, int64_t end) {
          force_loop(begin, end, rows.center, rows.x_next, rows.x_prev, rows.y_next, rows.y_prev,
                     rows.equilibrium, out);
        });
      });
}

/// y = y + a x (one in-place update of the Störmer–Verlet step).
inline void add_scaled(const std::string& label, const Vec& y, float a, const ConstVec& x) {
  Kokkos::parallel_for(
      label, RangePolicy(0, y.extent(0)), KOKKOS_LAMBDA(int64_t i) { y(i) = y(i) + a * x(i); });
}

/// |F| per complex value.
inline void field_modulus(const ConstVec& F, const Vec& modulus) {
  Kokkos::parallel_for(
      kModulusLabel, RangePolicy(0, modulus.extent(0)), KOKKOS_LAMBDA(int64_t m) {
        const float re = F(2 * m), im = F(2 * m + 1);
        modulus(m) = device_math::sqrt(re * re + im * im);
      });
}

/// total() = Σ x, left on the device.
inline void sum_into(const ConstVec& x, const Cell& total) {
  Kokkos::parallel_reduce(
      kModulusSumLabel, RangePolicy(0, x.extent(0)), KOKKOS_LAMBDA(int64_t i, float& sum) { sum += x(i); },
      total);
}

/// R(b) = total() / count for every b: the mean, broadcast to the batch.
inline void broadcast_mean(const ConstCell& total, float count, const Vec& R) {
  Kokkos::parallel_for(
      kCurvatureLabel, RangePolicy(0, R.extent(0)), KOKKOS_LAMBDA(int64_t b) { R(b) = total() / count; });
}

// The field of a whole window in ONE kernel, by temporal blocking (temporal_blocking). The
// channels of the field never interact (the stencil runs over x and y, the force is per
// component) and the rest of the window reads the field only through R_t, so each block of
// channels can run all W steps on its own: one team per block loads F_start and F_eq into team
// scratch (on a CPU: ~400 KB that stay in the core's L2; on a GPU: 2 channels in shared
// memory), runs the steps there with two F buffers, and writes F and P once at the end.
// Per step t and site: P = h f (t = 0, P starts at 0) or P = (P + h f) + h f, with f the force
// of the current F computed once for the two half kicks around it (the previous step's second
// and this step's first: the field does not change between them; two roundings, as the
// reference's separate kicks), then F_next = F + (dt/m) P; partial(t, block) = Σ |F_t| over
// the block's complex values. After the last step, the last half kick P += h Force(F_W).
// Every component sees the reference's operations in the reference's order.

/// Channels per team of field_window: 32 on a host space (a team's buffers, ~400 KB at the
/// default size, stay in a core's L2; 16 is slower, and 64's 800 KB crowd a 1 MB L2), 2 (one
/// complex value) on a GPU,
/// so that a team's buffers fit its shared memory.
constexpr int64_t kFieldBlock = kHostExecution ? 32 : 2;
constexpr int kFieldScratchLevel = kHostExecution ? 1 : 0;  // Serial caps level 0 at 32 KB
using ScratchFloats =
    Kokkos::View<float*, ExecSpace::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

/// One team per channel block, each with F (two buffers), P and F_eq [sites, kFieldBlock] and a
/// zero row (the padding) in team scratch.
inline TeamPolicy field_window_policy(const FieldShape& shape) {
  const int64_t blocks = ceil_div(shape.channels, kFieldBlock);
  const int64_t floats = 4 * shape.sites() * kFieldBlock + kFieldBlock;
  return TeamPolicy(blocks, Kokkos::AUTO)
      .set_scratch_size(kFieldScratchLevel, Kokkos::PerTeam(ScratchFloats::shmem_size(floats)));
}

/// One empty launch with field_window's scratch size: host spaces grow their per-thread
/// scratch on the first launch that needs it, which setup() should pay for, not run().
inline void reserve_field_window_scratch(const FieldShape& shape) {
  Kokkos::parallel_for(kFieldWindowLabel, field_window_policy(shape), KOKKOS_LAMBDA(const Member&){});
  Kokkos::fence();
}

/// body(site, begin, end) over every site and the components [0, width) of a channel block: on
/// a host space one thread per site with the width as its SIMD loop; on a GPU one thread per
/// (site, component).
template <class Body>
KOKKOS_INLINE_FUNCTION void for_each_site(const Member& team, int64_t sites, int64_t width,
                                          const Body& body) {
  if constexpr (kHostExecution) {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, sites), [&](int64_t s) { body(s, 0, width); });
  } else {
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, sites * width),
                         [&](int64_t i) { body(i / width, i % width, i % width + 1); });
  }
}

/// Σ |z| over a channel block's complex values ([sites, kFieldBlock] floats as (re, im) pairs,
/// `width` of them used). On a host space the buffer is one contiguous run (the unused
/// components of a ragged block are zeros, which add exactly nothing), split in one chunk per
/// thread: one long SIMD loop each; on a GPU one thread per value.
KOKKOS_INLINE_FUNCTION float block_modulus(const Member& team, const float* values, int64_t sites,
                                           int64_t width) {
  float total = 0;
  if constexpr (kHostExecution) {
    const int64_t count = sites * kFieldBlock / 2, chunks = team.team_size();
    Kokkos::parallel_reduce(
        Kokkos::TeamThreadRange(team, chunks),
        [&](int64_t r, float& sum) {
          sum += modulus_sum(count * r / chunks, count * (r + 1) / chunks, values);
        },
        total);
  } else {
    const int64_t pairs = width / 2;
    Kokkos::parallel_reduce(
        Kokkos::TeamVectorRange(team, sites * pairs),
        [&](int64_t i, float& sum) {
          const float* z = values + (i / pairs) * kFieldBlock + 2 * (i % pairs);
          sum += device_math::sqrt(z[0] * z[0] + z[1] * z[1]);
        },
        total);
  }
  return total;
}

/// F, P after the window's field from F_start (P = 0), and partial [W, blocks] (see above).
inline void field_window(const FieldShape& shape, int64_t steps, const ConstVec& F_start,
                         const ConstVec& F_eq, const Vec& F_out, const Vec& P_out, const Mat& partial) {
  Kokkos::parallel_for(
      kFieldWindowLabel, field_window_policy(shape), KOKKOS_LAMBDA(const Member& team) {
        constexpr int64_t block = kFieldBlock;
        const int64_t sites = shape.sites(), ch = shape.channels, c0 = team.league_rank() * block;
        const int64_t width = ch - c0 < block ? ch - c0 : block;
        ScratchFloats scratch(team.team_scratch(kFieldScratchLevel), 4 * sites * block + block);
        float* const F_a = scratch.data();
        float* const F_b = F_a + sites * block;
        float* const P = F_b + sites * block;
        float* const equilibrium = P + sites * block;
        float* const zero = equilibrium + sites * block;
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, block), [&](int64_t c) { zero[c] = 0; });
        if (width < block)  // a ragged last block: the unused components stay 0 (block_modulus reads them)
          Kokkos::parallel_for(Kokkos::TeamVectorRange(team, 2 * sites * block),
                               [&](int64_t i) { F_a[i] = 0; });
        team.team_barrier();
        for_each_site(team, sites, width, [&](int64_t s, int64_t begin, int64_t end) {
          for (int64_t c = begin; c < end; ++c) {
            F_a[s * block + c] = F_start(s * ch + c0 + c);
            equilibrium[s * block + c] = F_eq(s * ch + c0 + c);
          }
        });
        team.team_barrier();
        const FieldShape block_shape{shape.nx, shape.ny, block};
        for (int64_t t = 0; t < steps; ++t) {
          const float* current = t % 2 == 0 ? F_a : F_b;
          float* next = t % 2 == 0 ? F_b : F_a;
          const bool first_step = t == 0;
          for_each_site(team, sites, width, [&](int64_t s, int64_t begin, int64_t end) {
            const SiteRows rows = site_rows(block_shape, current, equilibrium, zero, s);
            fused_step_loop(begin, end, first_step, rows.center, rows.x_next, rows.x_prev, rows.y_next,
                            rows.y_prev, rows.equilibrium, P + s * block, next + s * block);
          });
          const float modulus = block_modulus(team, current, sites, width);
          Kokkos::single(Kokkos::PerTeam(team), [&]() { partial(t, team.league_rank()) = modulus; });
          team.team_barrier();
        }
        const float* last = steps % 2 == 0 ? F_a : F_b;
        for_each_site(team, sites, width, [&](int64_t s, int64_t begin, int64_t end) {
          const SiteRows rows = site_rows(block_shape, last, equilibrium, zero, s);
          kick_loop(begin, end, rows.center, rows.x_next, rows.x_prev, rows.y_next, rows.y_prev,
                    rows.equilibrium, P + s * block);
          for (int64_t c = begin; c < end; ++c) {
            F_out(s * ch + c0 + c) = last[s * block + c];
            P_out(s * ch + c0 + c) = P[s * block + c];
          }
        });
      });
}

// vectorized_window's two kernels (window_simd_bodies.hpp), defined in window_simd-kokkos.cpp with
// their ISA clones. On a device Kokkos they throw: the variant says UNSUPPORTED before either runs.

/// The window's field: F, P and partial as field_window leaves them, one channel block per work
/// item, each with its share of `scratch` (ws::scratch_floats floats).
void field_window_vectorized(const ws::Grid& grid, int64_t steps, const ConstVec& F_start, const ConstVec& F_eq,
                             const Vec& F_out, const Vec& P_out, const Mat& partial, const Vec& scratch);

/// The last step's retrieval: weights [B,K] and act [B,d] as retrieval_fused leaves them, in two
/// kernels: the weights, one batch row per work item; the mixing, one group of batch rows per work
/// item (each bank row read once per group, not once per batch row).
void retrieval_vectorized(const InPlaceCandidates& candidates, const ConstMat& q, const ConstVec& g,
                          const ConstVec& R, const Mat& weights, const Mat& act);

// ---- the retrieval batch -------------------------------------------------------------------------------

/// row[j] = mean_t O(b, t, j) for j < cols, by the team: the sum over t in order, then / T.
KOKKOS_INLINE_FUNCTION void token_mean(const Member& team, const ConstCube& O, int64_t b, int64_t cols, float* row) {
  const int64_t T = O.extent(1);
  Kokkos::parallel_for(Kokkos::TeamVectorRange(team, cols), [&](int64_t j) { row[j] = 0; });
  team.team_barrier();
  for (int64_t t = 0; t < T; ++t) {
    const float* token = &O(b, t, 0);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, cols), [&](int64_t j) { row[j] += token[j]; });
  }
  team.team_barrier();
  Kokkos::parallel_for(Kokkos::TeamVectorRange(team, cols), [&](int64_t j) { row[j] /= static_cast<float>(T); });
}

/// out(b, j) = mean_t O(b, t, j) for j < out.extent(1).
inline void mean_over_tokens(const ConstCube& O, const Mat& out) {
  Kokkos::parallel_for(
      kTokenMeanLabel, TeamPolicy(out.extent(0), Kokkos::AUTO), KOKKOS_LAMBDA(const Member& team) {
        const int64_t b = team.league_rank();
        token_mean(team, O, b, out.extent(1), &out(b, 0));
      });
}

/// cand(b, k, :) = concat_K(O[b], bank)(k, :) for the coordinates (first n components) or the
/// states: the copy the original makes with torch.cat every step.
inline void concat_candidates(const std::string& label, const ConstCube& O, const ConstMat& bank,
                              const Cube& cand) {
  const int64_t B = cand.extent(0), K = cand.extent(1);
  Kokkos::parallel_for(
      label, TeamPolicy(B * K, Kokkos::AUTO), KOKKOS_LAMBDA(const Member& team) {
        const int64_t b = team.league_rank() / K, k = team.league_rank() % K, T = O.extent(1);
        const float* source = k < T ? &O(b, k, 0) : &bank(k - T, 0);
        float* target = &cand(b, k, 0);
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, cand.extent(2)),
                             [&](int64_t j) { target[j] = source[j]; });
      });
}

/// shifted = q + nudge.
inline void add_nudge(const ConstMat& q, const ConstMat& nudge, const Mat& shifted) {
  Kokkos::parallel_for(
      kShiftLabel, RangePolicy(0, q.extent(0)), KOKKOS_LAMBDA(int64_t b) {
        for (int i = 0; i < kDim; ++i) shifted(b, i) = q(b, i) + nudge(b, i);
      });
}

/// q_rot(b, :) = rotor_apply(x(b, :), θ).
inline void rotate_rows(const ConstMat& x, const ConstVec& theta, const Mat& q_rot) {
  Kokkos::parallel_for(
      kRotateLabel, RangePolicy(0, x.extent(0)), KOKKOS_LAMBDA(int64_t b) {
        float row[kDim];
        for (int i = 0; i < kDim; ++i) row[i] = x(b, i);
        rotor_apply(row, theta);
        for (int i = 0; i < kDim; ++i) q_rot(b, i) = row[i];
      });
}

/// The whole query in one kernel, one team per row: q_state = mean_T O, q = its first n
/// components (the same sums in the same order, so the same values as mean_T coords), and
/// q_rot = rotor_apply(q + nudge, θ) (no nudge when `nudge` is unallocated).
inline void query_fused(const ConstCube& O, const ConstMat& nudge, const ConstVec& theta, const Mat& q,
                        const Mat& q_state, const Mat& q_rot) {
  const bool nudged = nudge.is_allocated();
  Kokkos::parallel_for(
      kQueryLabel, TeamPolicy(q.extent(0), Kokkos::AUTO), KOKKOS_LAMBDA(const Member& team) {
        const int64_t b = team.league_rank();
        float* row = &q_state(b, 0);
        token_mean(team, O, b, O.extent(2), row);
        team.team_barrier();
        Kokkos::single(Kokkos::PerTeam(team), [&]() {
          float x[kDim];
          for (int i = 0; i < kDim; ++i) {
            q(b, i) = row[i];
            x[i] = row[i] + (nudged ? nudge(b, i) : 0.f);
          }
          rotor_apply(x, theta);
          for (int i = 0; i < kDim; ++i) q_rot(b, i) = x[i];
        });
      });
}

// ---- the accumulators and the metrics ------------------------------------------------------------

/// lior_acc = R_acc = spd_acc = 0, vel_acc = 0: one kernel (Kokkos' own fill for a View of rank
/// >= 1 builds its kernel label as a heap-allocated string on every call).
inline void zero_accumulators(const Cell& lior_acc, const Cell& R_acc, const Cell& spd_acc,
                              const Mat& vel_acc) {
  const int64_t cols = vel_acc.extent(1);
  Kokkos::parallel_for(
      kZeroLabel, RangePolicy(0, vel_acc.extent(0) * cols), KOKKOS_LAMBDA(int64_t i) {
        vel_acc(i / cols, i % cols) = 0;
        if (i == 0) lior_acc() = R_acc() = spd_acc() = 0;
      });
}

/// x = 0, as a kernel (see zero_accumulators for why not deep_copy(x, 0)).
inline void set_zero(const Vec& x) {
  Kokkos::parallel_for(
      kZeroLabel, RangePolicy(0, x.extent(0)), KOKKOS_LAMBDA(int64_t i) { x(i) = 0; });
}

/// mean() = (Σ x in order) / count, on the device (a tensor's .mean(), no host read).
inline void mean_into(const ConstVec& x, const Cell& mean) {
  Kokkos::parallel_for(
      kMeanLabel, TeamPolicy(1, Kokkos::AUTO), KOKKOS_LAMBDA(const Member& team) {
        const int64_t count = x.extent(0);
        float sum = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, count), [&](int64_t i, float& acc) { acc += x(i); }, sum);
        Kokkos::single(Kokkos::PerTeam(team), [&]() { mean() = sum / static_cast<float>(count); });
      });
}

/// out() = a() + b() (in place when out is a).
inline void add_cells(const Cell& out, const ConstCell& a, const ConstCell& b) {
  Kokkos::parallel_for(
      kAccumulateLabel, RangePolicy(0, 1), KOKKOS_LAMBDA(int64_t) { out() = a() + b(); });
}

/// out = a + b elementwise (in place when out is a).
inline void add_rows(const Mat& out, const ConstMat& a, const ConstMat& b) {
  const int64_t cols = out.extent(1);
  Kokkos::parallel_for(
      kVelocityLabel, RangePolicy(0, out.extent(0) * cols),
      KOKKOS_LAMBDA(int64_t i) { out(i / cols, i % cols) = a(i / cols, i % cols) + b(i / cols, i % cols); });
}

/// Path row t: mean_b v (n values), mean_b R, mean_b dlior, |mean_b v|.
KOKKOS_INLINE_FUNCTION void write_path_row(const Mat& path, int64_t t, const ConstMat& v, float mean_R,
                                           float mean_dlior) {
  const int64_t B = v.extent(0);
  float norm_sq = 0;
  for (int i = 0; i < kDim; ++i) {
    float mean_v = 0;
    for (int64_t b = 0; b < B; ++b) mean_v += v(b, i);
    path(t, i) = mean_v / static_cast<float>(B);
    norm_sq += path(t, i) * path(t, i);
  }
  path(t, kDim) = mean_R;
  path(t, kDim + 1) = mean_dlior;
  path(t, kDim + 2) = device_math::sqrt(norm_sq);
}

inline void push_path(const Mat& path, int64_t t, const ConstMat& v, const ConstCell& mean_R,
                      const ConstCell& mean_dlior) {
  Kokkos::parallel_for(
      kPathLabel, RangePolicy(0, 1),
      KOKKOS_LAMBDA(int64_t) { write_path_row(path, t, v, mean_R(), mean_dlior()); });
}

/// progress = (lior_acc, R_acc, spd_acc) / (t + 1), stacked for one transfer.
inline void stack_progress(const Vec& progress, const ConstCell& lior_acc, const ConstCell& R_acc,
                           const ConstCell& spd_acc, int64_t t) {
  Kokkos::parallel_for(
      kProgressLabel, RangePolicy(0, 1), KOKKOS_LAMBDA(int64_t) {
        const float steps = static_cast<float>(t + 1);
        progress(0) = lior_acc() / steps;
        progress(1) = R_acc() / steps;
        progress(2) = spd_acc() / steps;
      });
}

/// scalars = (lior_acc, R_acc, spd_acc) / W; vbar = vel_acc / W.
inline void window_means(const Vec& scalars, const ConstCell& lior_acc, const ConstCell& R_acc,
                         const ConstCell& spd_acc, const Mat& vbar, const ConstMat& vel_acc, int64_t W) {
  const int64_t cols = vbar.extent(1);
  Kokkos::parallel_for(
      kWindowMeansLabel, RangePolicy(0, vbar.extent(0) * cols), KOKKOS_LAMBDA(int64_t i) {
        const float steps = static_cast<float>(W);
        vbar(i / cols, i % cols) = vel_acc(i / cols, i % cols) / steps;
        if (i == 0) {
          scalars(0) = lior_acc() / steps;
          scalars(1) = R_acc() / steps;
          scalars(2) = spd_acc() / steps;
        }
      });
}

/// Every per-step metric of a fused window, once the field has run: R_t from the partial sums
/// of field_window (one per channel block; one thread per step), then, in step order on one thread, the LIoR
/// step of each step (v = q is fixed for the window, only R_t changes), the accumulators, the velocity sum,
/// the path rows and the progress log [W,3]. Also the means of the window and R_last [B] (the
/// last step's R, for its retrieval). Every sum runs in the reference's order except R_t's
/// (per channel block, then over blocks: as exact as the reference's serial sum, or more).
inline void window_metrics_deferred(const ConstMat& partial, float count, const ConstMat& v,
                                    const ConstVec& g, const Vec& R_step, const Vec& R_last,
                                    const Vec& scalars, const Mat& vbar, const Mat& path,
                                    const Mat& progress) {
  Kokkos::parallel_for(
      kDeferredMetricsLabel, TeamPolicy(1, Kokkos::AUTO), KOKKOS_LAMBDA(const Member& team) {
        const int64_t W = partial.extent(0), blocks = partial.extent(1), B = v.extent(0);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, W), [&](int64_t t) {
          float sum = 0;
          for (int64_t block = 0; block < blocks; ++block) sum += partial(t, block);
          R_step(t) = sum / count;
        });
        team.team_barrier();
        Kokkos::single(Kokkos::PerTeam(team), [&]() {
          float lior_acc = 0, R_acc = 0, spd_acc = 0;
          for (int64_t b = 0; b < B; ++b)
            for (int i = 0; i < kDim; ++i) vbar(b, i) = 0;
          for (int64_t t = 0; t < W; ++t) {
            const float R = R_step(t);
            float sum_dlior = 0, sum_R = 0, sum_s = 0;
            for (int64_t b = 0; b < B; ++b) {
              const float s = lior_speed(v, g, b);
              sum_dlior += R * s;
              sum_R += R;
              sum_s += s;
            }
            const float batch = static_cast<float>(B);
            const float mean_dlior = sum_dlior / batch, mean_R = sum_R / batch, mean_s = sum_s / batch;
            lior_acc += mean_dlior;
            R_acc += mean_R;
            spd_acc += mean_s;
            for (int64_t b = 0; b < B; ++b)
              for (int i = 0; i < kDim; ++i) vbar(b, i) += v(b, i);
            write_path_row(path, t, v, mean_R, mean_dlior);
            const float steps = static_cast<float>(t + 1);
            progress(t, 0) = lior_acc / steps;
            progress(t, 1) = R_acc / steps;
            progress(t, 2) = spd_acc / steps;
          }
          const float steps = static_cast<float>(W);
          for (int64_t b = 0; b < B; ++b) {
            for (int i = 0; i < kDim; ++i) vbar(b, i) /= steps;
            R_last(b) = R_step(W - 1);
          }
          scalars(0) = lior_acc / steps;
          scalars(1) = R_acc / steps;
          scalars(2) = spd_acc / steps;
        });
      });
}

// ---- the window ------------------------------------------------------------------------------------

namespace suite = pb::suites::trainer2;

/// The optimizations of the variant's plan that change a window, read once from its context.
struct WindowPlan {
  explicit WindowPlan(const VariantContext& context)
      : batched_metrics(context.has(suite::kBatchedMetrics)),
        fused_lior_spd(context.has(suite::kFusedLiorSpd)),
        fused_retrieval(context.has(suite::kJitFusion)),
        preallocated(context.has(suite::kInPlace)),
        hoisted_batch(context.has(suite::kHoistedRetrievalBatch)),
        last_step_act(context.has(suite::kLastStepAct)),
        temporal_blocking(context.has(suite::kTemporalBlocking)),
        vectorized_window(context.has(suite::kVectorizedWindow)) {}
  bool batched_metrics, fused_lior_spd, fused_retrieval, preallocated, hoisted_batch, last_step_act;
  // On Kokkos deferring the metrics and blocking the field in time are one change: the deferred
  // metrics are computed after the loop from the per-block sums Σ |F_t| that the blocked field
  // kernel leaves (window_metrics_deferred), and the field leaves the loop as one kernel only once
  // no per-step metric is read there. So the ladder registers temporal_blocking alone, and the
  // deferred_metrics that the plan holds with it adds nothing of its own here.
  bool temporal_blocking;
  // The blocked field and the last step's retrieval as host SIMD code (window_simd_bodies.hpp);
  // host spaces only.
  bool vectorized_window;

  /// A variant's support(): UNSUPPORTED with vectorized_window on a Kokkos that runs on a device.
  std::optional<CannotRun> support() const {
    return vectorized_window ? host_cores_only(suite::kVectorizedWindow) : std::nullopt;
  }
};

/// The fixed inputs of a window, on the device.
struct WindowInputsDevice {
  ConstCube O;
  ConstMat bank_coord, bank_state;
  ConstVec g, theta;
};

/// A field: F and P (advanced by a window), F_eq (fixed during a window).
struct FieldState {
  Vec F, P, F_eq;

  /// F = F0, P = 0, F_eq = F0: the state a trainer starts from (asynchronous device copies and
  /// one kernel: no host wait).
  void start_from(const ConstVec& F0) const {
    const ExecSpace exec;
    Kokkos::deep_copy(exec, F, F0);
    set_zero(P);
    Kokkos::deep_copy(exec, F_eq, F0);
  }
};

/// What a window leaves on the device besides the field.
struct WindowResultDevice {
  Vec scalars;          // [3]: lior, R, spd (accumulator / W)
  Mat act, vbar, path;  // [B,d], [B,n], [W, n+3]
  Mat q, q_state;       // the window's query and its state (set by the run: views of its batch)
  std::vector<float> host_progress;  // [W,3]: what the host read at each step (an output)

  void allocate(const ref::WindowDims& dims) {
    host_progress.assign(dims.steps * 3, 0.f);
    scalars = Vec("trainer2/window/scalars", 3);
    act = Mat("trainer2/window/act", dims.batch, dims.state_dim);
    vbar = Mat("trainer2/window/vbar", dims.batch, kDim);
    path = Mat("trainer2/window/path", dims.steps, kPathColumns);
  }
  void poison() {
    std::fill(host_progress.begin(), host_progress.end(), std::numeric_limits<float>::quiet_NaN());
    fill_nan(scalars);
    fill_nan(act);
    fill_nan(vbar);
    fill_nan(path);
  }
  /// The outputs of add_window_outputs, named with `prefix` (outputs(): untimed).
  void add_outputs(ArrayMap& out, const std::string& prefix, const ref::WindowDims& dims,
                   const FieldState& field) const {
    ref::WindowResult<float> host;
    const std::vector<float> means = to_host_vector(scalars);
    host.lior = means.at(0);
    host.R = means.at(1);
    host.spd = means.at(2);
    host.act = to_host_vector(act);
    host.vbar = to_host_vector(vbar);
    host.path = to_host_vector(path);
    host.progress = host_progress;
    suite::add_window_outputs(out, prefix, dims, host, to_host_vector(field.F), to_host_vector(field.P),
                                ElementType::Float32);
  }
};

/// One run_window on Kokkos, as the plan asks. Built in setup(): it allocates every buffer the
/// plan keeps (with inplace, run() allocates nothing). Not thread-safe; one per window in flight.
class WindowRunner {
 public:
  WindowRunner(const ref::WindowDims& dims, const WindowPlan& plan)
      : dims_(dims), plan_(plan), shape_{dims.nx, dims.ny, dims.channels} {
    zero_row_ = Vec("trainer2/field/zero_row", dims.channels);
    if (plan_.preallocated) {
      kept_step_ = allocate_step_buffers();
      kept_batch_ = allocate_batch_buffers();
      kept_accumulators_ = allocate_accumulators();
    }
    if (plan_.temporal_blocking) {
      partial_ = Mat("trainer2/field/modulus_partial", dims.steps, field_window_policy(shape_).league_size());
      if (plan_.vectorized_window)
        field_scratch_ =
            Vec("trainer2/field/block_scratch", ws::blocks(field_grid()) * ws::scratch_floats(field_grid()));
      else
        reserve_field_window_scratch(shape_);
      R_step_ = Vec("trainer2/window/R_step", dims.steps);
      R_last_ = Vec("trainer2/window/R_last", dims.batch);
      progress_log_ = Mat("progress_log", dims.steps, 3);
      progress_log_host_ = Kokkos::create_mirror_view(progress_log_);
    } else {
      progress_ = Vec("progress", 3);
      progress_host_ = Kokkos::create_mirror_view(progress_);
      progress_cell_ = HostCell("progress_cell");
    }
  }

  /// One window from F = F0, P = 0, F_eq = F0, its final F and P in `field`: with
  /// temporal_blocking the blocked window reads F0 where it lies (run_from_rest); else `field` is
  /// set to that state (a reset that is part of the work) and advanced in place.
  void run_from_start(const WindowInputsDevice& in, const ConstMat& nudge, const ConstVec& F0, const FieldState& field,
                      WindowResultDevice& out) {
    if (plan_.temporal_blocking) {
      run_from_rest(in, nudge, F0, F0, field, out);
      return;
    }
    field.start_from(F0);
    run(in, nudge, field, out);
  }

  /// Without temporal_blocking: one window that advances `field` in place.
  void run(const WindowInputsDevice& in, const ConstMat& nudge, const FieldState& field,
           WindowResultDevice& out) {
    Accumulators acc = plan_.preallocated ? zeroed(kept_accumulators_) : allocate_accumulators();
    Batch batch;
    if (plan_.hoisted_batch) {
      batch = kept_batch_;
      build_batch(in, nudge, batch, kept_step_.shifted);
    }
    for (int64_t t = 0; t < dims_.steps; ++t) {
      const StepBuffers step = plan_.preallocated ? kept_step_ : allocate_step_buffers();
      curvature(field.F, step);
      if (!plan_.hoisted_batch) {
        batch = plan_.preallocated ? kept_batch_ : allocate_batch_buffers();
        build_batch(in, nudge, batch, step.shifted);
      }
      if (!plan_.last_step_act || t == dims_.steps - 1) retrieve(in, batch, step, out.act);
      lior_step_and_means(batch.q, in.g, step);
      accumulate(acc, step, batch.q);
      push_path(out.path, t, batch.q, step.mean_R, step.mean_dlior);
      read_progress(acc, t, out.host_progress);
      field_step(field, step);
    }
    window_means(out.scalars, acc.lior, acc.R, acc.spd, out.vbar, acc.velocity, dims_.steps);
    out.q = batch.q;
    out.q_state = batch.q_state;
  }

  /// With temporal_blocking: one window from rest (F = F_start, P = 0, F_eq fixed) in five kernels: the
  /// query; the field of all W steps (field_window); the deferred metrics; the last step's
  /// retrieval; then ONE host read of the progress log. The final F and P land in `result`.
  void run_from_rest(const WindowInputsDevice& in, const ConstMat& nudge, const ConstVec& F_start,
                     const ConstVec& F_eq, const FieldState& result, WindowResultDevice& out) {
    const Batch& batch = kept_batch_;
    query_fused(in.O, nudge, in.theta, batch.q, batch.q_state, batch.q_rot);
    if (plan_.vectorized_window)
      field_window_vectorized(field_grid(), dims_.steps, F_start, F_eq, result.F, result.P, partial_, field_scratch_);
    else
      field_window(shape_, dims_.steps, F_start, F_eq, result.F, result.P, partial_);
    window_metrics_deferred(partial_, complex_count(), batch.q, in.g, R_step_, R_last_, out.scalars, out.vbar,
                            out.path, progress_log_);
    const InPlaceCandidates candidates{in.O, in.bank_coord, in.bank_state};
    if (plan_.vectorized_window)
      retrieval_vectorized(candidates, batch.q_rot, in.g, R_last_, kept_step_.weights, out.act);
    else
      retrieval_fused(candidates, batch.q_rot, in.g, R_last_, kept_step_.weights, out.act);
    copy_to_host(progress_log_host_, progress_log_);  // the window's log: one host sync
    for (int64_t t = 0; t < dims_.steps; ++t)
      for (int64_t i = 0; i < 3; ++i) out.host_progress.at(t * 3 + i) = progress_log_host_(t, i);
    out.q = batch.q;
    out.q_state = batch.q_state;
  }

 private:
  struct StepBuffers {
    Vec modulus, R;  // |F| per complex value; R broadcast to [B]
    Cell modulus_sum;
    Vec speed_again, s, dlior;  // speed_again: lior_step's own s (without fused_lior_spd)
    Cell mean_dlior, mean_R, mean_s;
    Mat shifted;             // q + nudge
    Mat weights;             // [B,K]
    Vec force, force_again;  // the two force evaluations of a field step
  };
  struct Batch {
    Mat q, q_state, q_rot;
    Cube cand_coord, cand_state;
  };
  struct Accumulators {
    Cell lior, R, spd;
    Mat velocity;
  };

  // Every buffer of one step, freshly allocated: without inplace every step (each tensor op
  // allocates its result), with it once in the constructor.
  StepBuffers allocate_step_buffers() const {
    const int64_t B = dims_.batch;
    StepBuffers step;
    step.weights = uninitialized<Mat>(kWeightsLabel, B, dims_.candidates());
    if (plan_.temporal_blocking) return step;  // the blocked window keeps its own buffers
    step.modulus = uninitialized<Vec>(kModulusLabel, dims_.field_size() / 2);
    step.R = uninitialized<Vec>(kCurvatureLabel, B);
    step.modulus_sum = uninitialized<Cell>(kModulusSumLabel);
    if (!plan_.fused_lior_spd) step.speed_again = uninitialized<Vec>(kLiorSpeedLabel, B);
    step.s = uninitialized<Vec>(kLiorSpeedLabel, B);
    step.dlior = uninitialized<Vec>(kLiorScaleLabel, B);
    step.mean_dlior = uninitialized<Cell>(kMeanLabel);
    step.mean_R = uninitialized<Cell>(kMeanLabel);
    step.mean_s = uninitialized<Cell>(kMeanLabel);
    step.shifted = uninitialized<Mat>(kShiftLabel, B, kDim);
    step.force = uninitialized<Vec>(kForceLabel, dims_.field_size());
    step.force_again = plan_.preallocated ? step.force : uninitialized<Vec>(kForceLabel, dims_.field_size());
    return step;
  }

  Batch allocate_batch_buffers() const {
    const int64_t B = dims_.batch, K = dims_.candidates();
    Batch batch;
    batch.q = uninitialized<Mat>(kTokenMeanLabel, B, kDim);
    batch.q_state = uninitialized<Mat>(kTokenMeanLabel, B, dims_.state_dim);
    batch.q_rot = uninitialized<Mat>(kRotateLabel, B, kDim);
    if (!plan_.temporal_blocking) {
      batch.cand_coord = uninitialized<Cube>(kCandCoordLabel, B, K, kDim);
      batch.cand_state = uninitialized<Cube>(kCandStateLabel, B, K, dims_.state_dim);
    }
    return batch;
  }

  // torch.zeros: fresh accumulators, zero-initialized by Kokkos.
  Accumulators allocate_accumulators() const {
    return {Cell(kLiorAccLabel), Cell(kRAccLabel), Cell(kSpdAccLabel), Mat(kVelAccLabel, dims_.batch, kDim)};
  }

  // The kept accumulators, zeroed for a new window.
  static const Accumulators& zeroed(const Accumulators& acc) {
    zero_accumulators(acc.lior, acc.R, acc.spd, acc.velocity);
    return acc;
  }

  float complex_count() const { return static_cast<float>(dims_.field_size() / 2); }

  // 1. R = mean |F|, broadcast to the batch.
  void curvature(const ConstVec& F, const StepBuffers& step) const {
    field_modulus(F, step.modulus);
    sum_into(step.modulus, step.modulus_sum);
    broadcast_mean(step.modulus_sum, complex_count(), step.R);
  }

  // 2-3. The retrieval batch and the rotated query.
  void build_batch(const WindowInputsDevice& in, const ConstMat& nudge, const Batch& batch,
                   const Mat& shifted) const {
    mean_over_tokens(in.O, batch.q);  // q = mean_T coords: coords are O's first n columns
    mean_over_tokens(in.O, batch.q_state);
    concat_candidates(kCandCoordLabel, in.O, in.bank_coord, batch.cand_coord);
    concat_candidates(kCandStateLabel, in.O, in.bank_state, batch.cand_state);
    if (nudge.is_allocated()) {
      add_nudge(batch.q, nudge, shifted);
      rotate_rows(shifted, in.theta, batch.q_rot);
    } else {
      rotate_rows(batch.q, in.theta, batch.q_rot);
    }
  }

  // 4. The retrieval: op by op, or one kernel with jit_fusion.
  void retrieve(const WindowInputsDevice& in, const Batch& batch, const StepBuffers& step, const Mat& act) const {
    retrieval(plan_.fused_retrieval, batch.q_rot, batch.cand_coord, batch.cand_state, in.g, step.R, step.weights,
              act);
  }

  // 5. The LIoR step (s twice, or once with fused_lior_spd) and the three batch means.
  void lior_step_and_means(const ConstMat& v, const ConstVec& g, const StepBuffers& step) const {
    lior_step(plan_.fused_lior_spd, v, g, step.R, step.s, step.dlior, step.speed_again);
    mean_into(step.dlior, step.mean_dlior);
    mean_into(step.R, step.mean_R);
    mean_into(step.s, step.mean_s);
  }

  // 6. The accumulators: in place (inplace), or each sum into a fresh View.
  void accumulate(Accumulators& acc, const StepBuffers& step, const ConstMat& v) const {
    if (plan_.preallocated) {
      add_cells(acc.lior, acc.lior, step.mean_dlior);
      add_cells(acc.R, acc.R, step.mean_R);
      add_cells(acc.spd, acc.spd, step.mean_s);
      add_rows(acc.velocity, acc.velocity, v);
      return;
    }
    Accumulators next{uninitialized<Cell>(kLiorAccLabel), uninitialized<Cell>(kRAccLabel),
                      uninitialized<Cell>(kSpdAccLabel), uninitialized<Mat>(kVelAccLabel, dims_.batch, kDim)};
    add_cells(next.lior, acc.lior, step.mean_dlior);
    add_cells(next.R, acc.R, step.mean_R);
    add_cells(next.spd, acc.spd, step.mean_s);
    add_rows(next.velocity, acc.velocity, v);
    acc = next;
  }

  // 8. The host reads the progress metrics: three reads, or with batched_metrics one read of the
  // three stacked in a device buffer made once (the seed's pre-allocated progress_metrics_gpu).
  void read_progress(const Accumulators& acc, int64_t t, std::vector<float>& host_log) {
    float* read = &host_log.at(t * 3);
    const float steps = static_cast<float>(t + 1);
    if (!plan_.batched_metrics) {
      copy_to_host(progress_cell_, acc.lior);
      read[0] = progress_cell_() / steps;
      copy_to_host(progress_cell_, acc.R);
      read[1] = progress_cell_() / steps;
      copy_to_host(progress_cell_, acc.spd);
      read[2] = progress_cell_() / steps;
      return;
    }
    stack_progress(progress_, acc.lior, acc.R, acc.spd, t);
    copy_to_host(progress_host_, progress_);
    for (int i = 0; i < 3; ++i) read[i] = progress_host_(i);
  }

  // 9. Störmer–Verlet, op by op: force, kick, drift, force, kick.
  void field_step(const FieldState& field, const StepBuffers& step) const {
    field_force(shape_, field.F, field.F_eq, zero_row_, step.force);
    add_scaled(kKickLabel, field.P, kHalfDt, step.force);
    add_scaled(kDriftLabel, field.F, kDtOverMass, field.P);
    field_force(shape_, field.F, field.F_eq, zero_row_, step.force_again);
    add_scaled(kKickLabel, field.P, kHalfDt, step.force_again);
  }

  ref::WindowDims dims_;
  WindowPlan plan_;
  FieldShape shape_;
  Vec zero_row_;
  StepBuffers kept_step_;
  Batch kept_batch_;
  Accumulators kept_accumulators_;
  // without temporal_blocking: the per-step progress read
  Vec progress_;
  Vec::HostMirror progress_host_;
  HostCell progress_cell_;
  // with temporal_blocking
  Vec R_step_, R_last_;
  Mat partial_, progress_log_;
  Vec field_scratch_;  // vectorized_window: each channel block's buffers

  ws::Grid field_grid() const { return {dims_.nx, dims_.ny, dims_.channels}; }
  Mat::HostMirror progress_log_host_;
};

}  // namespace pb::kokkos_backend::trainer2
