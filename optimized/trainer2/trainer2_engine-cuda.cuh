#pragma once
// trainer2 on CUDA: the kernel bodies ("ops") of the retrieval, rotor_update, window and
// train_step ladders, the suite's building blocks on this backend. Math:
// reference/trainer2/trainer2.hpp, whose order of operations each body follows (so fp32 results
// differ from the serial fp32 reference only by summation order and by the device's fused
// multiply-adds and math library). The per-element math is the reference's own PB_HOST_DEVICE
// code, instantiated for float (ref::rotor_apply, ref::retrieval_logit, ref::complex_modulus,
// ref::path_row, ref::coordinate_mean, ref::field_force_at, ref::metric_update, ref::rotor_step,
// ref::wrap_angle, and the LIoR speed of reference/trainer2/lior_step.hpp); what is written here is
// how it is split across threads.
//
// Each op is a struct of pointers and sizes with PB_HOST_DEVICE members: what one GPU thread does
// for its index (elementwise ops), or what every thread of a block does in each stage between
// barriers (block ops; the contract is in backends/cuda/device_executor.cuh). The ladders
// (trainer2_engine_ladders-cuda.hpp) queue them on an executor: DeviceExecutor launches them as
// kernels, the tests' HostExecutor runs them on the host over the whole index space.

#include <math.h>  // expf

#include <cstdint>

#include "backends/cuda/host_device.hpp"
#include "optimized/common/integer_math.hpp"
#include "optimized/trainer2/lior_step-cuda.cuh"
#include "reference/trainer2/trainer2.hpp"

namespace pb::cuda_backend::trainer2 {

namespace ref = pb::reference::trainer2;
namespace lior = pb::cuda_backend::lior_step;  // the LIoR speed, shared with trainer2/lior_step
using pb::optimized::ceil_div;

// ---- constants, as the reference rounds them to float -------------------------------------------

constexpr int kDim = ref::kCoordinateDim;        // n = 8
constexpr int kSlots = ref::kRotorSlots;         // θ padded to 8
constexpr int kAngles = ref::kRotorAngles;       // 6 learnt angles
constexpr int kPathColumns = ref::kPathColumns;  // n + 3
constexpr float kBeta = static_cast<float>(ref::kRetrievalBeta);
constexpr float kHalfDt = static_cast<float>(ref::kDt / 2);
constexpr float kDtOverMass = static_cast<float>(ref::kDt / ref::kMass);
constexpr float kNudgeScale = static_cast<float>(ref::kNudgeScale);

// Block ops use 256 threads and reduce their per-thread partials with a pairwise tree of
// kTreeLevels stages (half = 128, 64, ..., 1): a fixed summation order, no atomics.
constexpr int kBlockThreads = 256;
constexpr int kTreeLevels = 8;
static_assert((1 << kTreeLevels) == kBlockThreads, "the tree halves the block down to one thread");

/// The sizes of one window, as kernels take them (ref::WindowDims has no device members).
struct WindowShape {
  int64_t batch, tokens, state_dim, bank_rows;  // B, T, d, C
  int64_t nx, ny, channels;                     // the field: [Nx, Ny, channels] real components
  int64_t steps;                                // W
  PB_HOST_DEVICE int64_t candidates() const { return tokens + bank_rows; }  // K
  PB_HOST_DEVICE int64_t field_size() const { return nx * ny * channels; }
  PB_HOST_DEVICE int64_t complex_count() const { return field_size() / 2; }
};

inline WindowShape window_shape(const ref::WindowDims& dims) {
  return {dims.batch, dims.tokens, dims.state_dim, dims.bank_rows,
          dims.nx,    dims.ny,     dims.channels,  dims.steps};
}

// ---- small helpers ----------------------------------------------------------------------------

/// std::max as the reference calls it (the first argument wins ties and NaNs).
using ref::max_of;

/// The half of tree level `level` (0 .. kTreeLevels-1): 128, 64, ..., 1.
PB_HOST_DEVICE inline int tree_half(int level) { return kBlockThreads >> (level + 1); }

/// One tree level: threads below `half` fold in the partial `half` above (sum or max).
PB_HOST_DEVICE inline void tree_add(float* partials, int thread, int half) {
  if (thread < half) partials[thread] = partials[thread] + partials[thread + half];
}
PB_HOST_DEVICE inline void tree_max(float* partials, int thread, int half) {
  if (thread < half) partials[thread] = max_of(partials[thread], partials[thread + half]);
}

// ==== step 1: curvature R = mean |F| ==============================================================

/// Without inplace, the first kernel: |F| per complex element into a temporary.
struct ComplexModulus {
  const float* F;
  float* modulus;
  PB_HOST_DEVICE void operator()(int64_t e) const { modulus[e] = ref::complex_modulus(F + 2 * e); }
};

/// Per-block partial sums of |F| (from_field: computed from F on the fly, inplace) or of a
/// precomputed modulus array: thread (block, t) sums elements block*256 + t, then every
/// blocks*256-th one; the block adds its 256 partials in the tree; partials[block] = the sum.
struct CurvaturePartials {
  static constexpr int kThreads = kBlockThreads;
  const float* values;  // F (from_field) or the modulus
  bool from_field;
  int64_t count;  // complex elements
  int64_t block_count;
  float* partials;  // [block_count]

  int64_t blocks() const { return block_count; }
  int64_t shared_floats() const { return kThreads; }
  PB_HOST_DEVICE int stages() const { return kTreeLevels + 2; }
  PB_HOST_DEVICE float value(int64_t e) const {
    if (!from_field) return values[e];
    return ref::complex_modulus(values + 2 * e);
  }
  PB_HOST_DEVICE void stage(int s, int64_t block, int thread, float* shared) const {
    if (s == 0) {
      float sum = 0.f;
      const int64_t stride = block_count * kThreads;
      for (int64_t e = block * kThreads + thread; e < count; e += stride) sum += value(e);
      shared[thread] = sum;
    } else if (s <= kTreeLevels) {
      tree_add(shared, thread, tree_half(s - 1));
    } else if (thread == 0) {
      partials[block] = shared[0];
    }
  }
};

/// One block: the partials summed (strided, then the tree), R[b] = total / count for b < B.
struct CurvatureFinish {
  static constexpr int kThreads = kBlockThreads;
  const float* partials;
  int64_t partial_count;
  int64_t count;  // complex elements
  int64_t batch;
  float* R;  // [B]

  int64_t blocks() const { return 1; }
  int64_t shared_floats() const { return kThreads; }
  PB_HOST_DEVICE int stages() const { return kTreeLevels + 2; }
  PB_HOST_DEVICE void stage(int s, int64_t, int thread, float* shared) const {
    if (s == 0) {
      float sum = 0.f;
      for (int64_t p = thread; p < partial_count; p += kThreads) sum += partials[p];
      shared[thread] = sum;
    } else if (s <= kTreeLevels) {
      tree_add(shared, thread, tree_half(s - 1));
    } else {
      const float mean = shared[0] / static_cast<float>(count);
      for (int64_t b = thread; b < batch; b += kThreads) R[b] = mean;
    }
  }
};

/// Blocks of CurvaturePartials: enough for about 8 elements per thread, at most 128 (the
/// finishing block then reads one partial per thread or fewer).
inline int64_t curvature_blocks(int64_t complex_count) {
  const int64_t per_block = 8 * kBlockThreads;
  const int64_t blocks = ceil_div(complex_count, per_block);
  return blocks < 1 ? 1 : (blocks > 128 ? 128 : blocks);
}

// ==== step 2: the retrieval batch ================================================================

/// out[b, j] = mean over the T tokens of O[b, t, j], for j < cols (q: cols = n; q_state: cols = d).
struct TokenMean {
  const float* O;
  int64_t tokens, state_dim, cols;
  float* out;  // [B, cols]
  PB_HOST_DEVICE void operator()(int64_t e) const {
    const int64_t b = e / cols, j = e % cols;
    float sum = 0.f;
    for (int64_t t = 0; t < tokens; ++t) sum += O[(b * tokens + t) * state_dim + j];
    out[e] = sum / static_cast<float>(tokens);
  }
};

/// out[b, k, j] = O[b, k, j] for the T tokens, then bank[k - T, j]: concat_K(O[..., :cols], bank).
struct ConcatCandidates {
  const float* O;
  const float* bank;  // [C, cols]
  int64_t tokens, candidates, state_dim, cols;
  float* out;  // [B, K, cols]
  PB_HOST_DEVICE void operator()(int64_t e) const {
    const int64_t j = e % cols, row = e / cols;
    const int64_t b = row / candidates, k = row % candidates;
    out[e] = k < tokens ? O[(b * tokens + k) * state_dim + j] : bank[(k - tokens) * cols + j];
  }
};

// ==== step 3: the rotated query ===================================================================

/// Without inplace, a separate add: out = q + ν.
struct ShiftQuery {
  const float* q;
  const float* nudge;
  float* out;
  PB_HOST_DEVICE void operator()(int64_t e) const { out[e] = q[e] + nudge[e]; }
};

/// q'[b] = rotor_apply(q[b] + ν[b], θ); ν may be null (the free phase: q + 0, as the reference).
struct RotateQuery {
  const float* q;
  const float* nudge;
  const float* theta;
  float* out;  // [B, n]
  PB_HOST_DEVICE void operator()(int64_t b) const {
    float shifted[kDim];
    for (int i = 0; i < kDim; ++i) shifted[i] = q[b * kDim + i] + (nudge ? nudge[b * kDim + i] : 0.f);
    ref::rotor_apply(shifted, theta, out + b * kDim);
  }
};

// ==== step 4: retrieval, op by op (as the original) ===============================================

/// u[b, k, i] = cand_coord[b, k, i] - q[b, i].
struct Displacement {
  const float* q;
  const float* cand_coord;
  int64_t candidates;
  float* u;
  PB_HOST_DEVICE void operator()(int64_t e) const {
    const int64_t b = e / (candidates * kDim), i = e % kDim;
    u[e] = cand_coord[e] - q[b * kDim + i];
  }
};

/// quadratic_form[r] = sum_i g_i u_ri u_ri, r = (b, k).
struct QuadraticForm {
  const float* u;
  const float* g;
  float* out;
  PB_HOST_DEVICE void operator()(int64_t r) const { out[r] = ref::quadratic_form(g, u + r * kDim); }
};

/// spd = sqrt(max(0, quadratic_form) + eps).
struct ClampedSqrt {
  const float* quadratic_form;
  float* spd;
  PB_HOST_DEVICE void operator()(int64_t r) const { spd[r] = ref::clamped_speed(quadratic_form[r]); }
};

/// cost[b, k] = R[b] spd[b, k].
struct Cost {
  const float* R;
  const float* spd;
  int64_t candidates;
  float* cost;
  PB_HOST_DEVICE void operator()(int64_t r) const { cost[r] = R[r / candidates] * spd[r]; }
};

/// logit = -β cost.
struct Logit {
  const float* cost;
  float* logit;
  PB_HOST_DEVICE void operator()(int64_t r) const { logit[r] = -kBeta * cost[r]; }
};

/// The stages of a softmax over one row of K values held in `w` (global or shared memory), by a
/// block of kBlockThreads: thread t owns k = t, t + 256, ... in every stage. `max_scratch` and
/// `sum_scratch` are two distinct arrays of kBlockThreads floats in shared memory.
/// Stage numbers: kSoftmaxStages of them, starting with load (which the caller supplies).
struct BlockSoftmax {
  static constexpr int kLoad = 0;                           // caller: w[k] = logit, local max
  static constexpr int kMaxTree = 1;                        // .. kMaxTree + kTreeLevels - 1
  static constexpr int kExp = kMaxTree + kTreeLevels;       // w = exp(w - max), local sums
  static constexpr int kSumTree = kExp + 1;                 // .. kSumTree + kTreeLevels - 1
  static constexpr int kNormalize = kSumTree + kTreeLevels;  // w /= total
  static constexpr int kStages = kNormalize + 1;

  /// Runs softmax stage s (kMaxTree <= s <= kNormalize) for `thread`.
  PB_HOST_DEVICE static void stage(int s, int thread, int64_t K, float* w, float* max_scratch,
                                   float* sum_scratch) {
    if (s < kExp) {
      tree_max(max_scratch, thread, tree_half(s - kMaxTree));
    } else if (s == kExp) {
      const float max_logit = max_scratch[0];
      float sum = 0.f;
      for (int64_t k = thread; k < K; k += kBlockThreads) sum += (w[k] = expf(w[k] - max_logit));
      sum_scratch[thread] = sum;
    } else if (s < kNormalize) {
      tree_add(sum_scratch, thread, tree_half(s - kSumTree));
    } else {
      const float total = sum_scratch[0];
      for (int64_t k = thread; k < K; k += kBlockThreads) w[k] /= total;
    }
  }
};

/// The op-by-op softmax: one block per row b, weights[b, :] = softmax(logits[b, :]).
struct SoftmaxRows {
  static constexpr int kThreads = kBlockThreads;
  const float* logits;
  int64_t rows, candidates;
  float* weights;

  int64_t blocks() const { return rows; }
  int64_t shared_floats() const { return 2 * kThreads; }
  PB_HOST_DEVICE int stages() const { return BlockSoftmax::kStages; }
  PB_HOST_DEVICE void stage(int s, int64_t b, int thread, float* shared) const {
    float* w = weights + b * candidates;
    if (s == BlockSoftmax::kLoad) {
      float local_max = -INFINITY;
      for (int64_t k = thread; k < candidates; k += kThreads) {
        w[k] = logits[b * candidates + k];
        local_max = max_of(local_max, w[k]);
      }
      shared[thread] = local_max;
    } else {
      BlockSoftmax::stage(s, thread, candidates, w, shared, shared + kThreads);
    }
  }
};

/// weighted[b, k, j] = w[b, k] cand_state[b, k, j] (the original materializes w[..., None] * state).
struct WeightedStates {
  const float* weights;
  const float* cand_state;
  int64_t state_dim;
  float* out;
  PB_HOST_DEVICE void operator()(int64_t e) const { out[e] = weights[e / state_dim] * cand_state[e]; }
};

/// act[b, j] = sum over k of weighted[b, k, j], in k order.
struct SumOverCandidates {
  const float* weighted;
  int64_t candidates, state_dim;
  float* act;
  PB_HOST_DEVICE void operator()(int64_t e) const {
    const int64_t b = e / state_dim, j = e % state_dim;
    float sum = 0.f;
    for (int64_t k = 0; k < candidates; ++k) sum += weighted[(b * candidates + k) * state_dim + j];
    act[e] = sum;
  }
};

// ==== step 4: retrieval as one kernel (jit_fusion) ================================================

/// The whole retrieval step in one block op. Block (b, tile) computes row b's K logits into
/// shared memory, its softmax (BlockSoftmax), and act[b, j] for the kMixColumns columns j of its
/// tile: 8 groups of 32 threads each sum every 8th candidate for one column (coalesced 128-byte
/// rows of cand_state), then group 0 adds the 8 partials in group order. Every tile of a row
/// computes the same weights (they are cheap: K x 8 coordinates); tile 0 writes them out.
/// Shared memory: K weights, then two scratch arrays of kThreads floats.
struct FusedRetrieval {
  static constexpr int kThreads = kBlockThreads;
  static constexpr int kMixColumns = 32;
  static constexpr int kGroups = kThreads / kMixColumns;
  static constexpr int kMix = BlockSoftmax::kStages;  // partial sums per group
  static constexpr int kCombine = kMix + 1;            // act = sum of the group partials

  const float* q;           // [B, n], rotated
  const float* cand_coord;  // [B, K, n]
  const float* cand_state;  // [B, K, d]
  const float* g;           // [n]
  const float* R;           // [B]
  int64_t batch, candidates, state_dim;
  float* weights;  // [B, K]
  float* act;      // [B, d]

  int64_t tiles() const { return ceil_div(state_dim, kMixColumns); }
  int64_t blocks() const { return batch * tiles(); }
  int64_t shared_floats() const { return candidates + 2 * kThreads; }
  PB_HOST_DEVICE int stages() const { return kCombine + 1; }

  /// -β R_b spd_bk, with spd from the displacement of candidate k from the query.
  PB_HOST_DEVICE float logit(int64_t b, int64_t k) const {
    return ref::retrieval_logit(cand_coord + (b * candidates + k) * kDim, q + b * kDim, g, R[b]);
  }

  PB_HOST_DEVICE void stage(int s, int64_t block, int thread, float* shared) const {
    const int64_t tile_count = ceil_div(state_dim, kMixColumns);
    const int64_t b = block / tile_count, tile = block % tile_count;
    float* w = shared;
    float* scratch = shared + candidates;  // max, then the mixing partials [kGroups][kMixColumns]
    float* sums = scratch + kThreads;
    if (s == BlockSoftmax::kLoad) {
      float local_max = -INFINITY;
      for (int64_t k = thread; k < candidates; k += kThreads) {
        w[k] = logit(b, k);
        local_max = max_of(local_max, w[k]);
      }
      scratch[thread] = local_max;
    } else if (s < kMix) {
      BlockSoftmax::stage(s, thread, candidates, w, scratch, sums);
      if (s == BlockSoftmax::kNormalize && tile == 0) {
        for (int64_t k = thread; k < candidates; k += kThreads) weights[b * candidates + k] = w[k];
      }
    } else {
      const int lane = thread % kMixColumns, group = thread / kMixColumns;
      const int64_t j = tile * kMixColumns + lane;
      if (s == kMix) {
        float sum = 0.f;
        if (j < state_dim) {
          for (int64_t k = group; k < candidates; k += kGroups)
            sum += w[k] * cand_state[(b * candidates + k) * state_dim + j];
        }
        scratch[group * kMixColumns + lane] = sum;
      } else if (group == 0 && j < state_dim) {
        float sum = 0.f;
        for (int other = 0; other < kGroups; ++other) sum += scratch[other * kMixColumns + lane];
        act[b * state_dim + j] = sum;
      }
    }
  }
};

// ==== steps 5-7: LIoR step, accumulators, path buffer ============================================

/// s[b] (v = q), computed twice without fused_lior_spd (once in lior_step, once for the metrics).
struct Speed {
  const float* v;
  const float* g;
  float* s;
  PB_HOST_DEVICE void operator()(int64_t b) const { lior::speed_row(b, v, g, s); }
};

struct Dlior {
  const float* R;
  const float* s;
  float* dlior;
  PB_HOST_DEVICE void operator()(int64_t b) const { lior::dlior_row(b, R, s, dlior); }
};

/// fused_lior_spd: s computed once, returned with dlior.
struct FusedLior {
  const float* v;
  const float* R;
  const float* g;
  float* s;
  float* dlior;
  PB_HOST_DEVICE void operator()(int64_t b) const { lior::fused_lior_row(b, v, R, g, s, dlior); }
};

/// Without batched_metrics: one mean per launch (one thread; B is a handful of rows), sum in row order.
struct MeanOfRows {
  const float* x;
  int64_t rows;
  float* mean;
  PB_HOST_DEVICE void operator()(int64_t) const {
    float sum = 0.f;
    for (int64_t r = 0; r < rows; ++r) sum += x[r];
    *mean = sum / static_cast<float>(rows);
  }
};

/// {mean dlior, mean R, mean s} in one pass, as reference lior_step sums them.
PB_HOST_DEVICE inline void metric_means(const float* dlior, const float* R, const float* s,
                                        int64_t rows, float* means) {
  float sum_dlior = 0.f, sum_R = 0.f, sum_s = 0.f;
  for (int64_t r = 0; r < rows; ++r) {
    sum_dlior += dlior[r];
    sum_R += R[r];
    sum_s += s[r];
  }
  const float count = static_cast<float>(rows);
  means[0] = sum_dlior / count;
  means[1] = sum_R / count;
  means[2] = sum_s / count;
}

/// batched_metrics (until inplace): the three means in one launch.
struct MetricMeans {
  const float* dlior;
  const float* R;
  const float* s;
  int64_t rows;
  float* means;  // [3]: dlior, R, s
  PB_HOST_DEVICE void operator()(int64_t) const { metric_means(dlior, R, s, rows, means); }
};

/// Path row t: mean_b v (n), mean R, mean dlior, |mean_b v|; means = {dlior, R, s}.
PB_HOST_DEVICE inline void path_row(const float* v, int64_t batch, const float* means, float* row) {
  ref::path_row(v, batch, means[1], means[0], row);
}

struct PathRow {
  const float* v;
  int64_t batch;
  const float* means;
  float* row;  // path + t * kPathColumns
  PB_HOST_DEVICE void operator()(int64_t) const { path_row(v, batch, means, row); }
};

/// Out of place (without inplace): acc_out = acc_in + means ({lior, R, spd} += {dlior, R, s} means).
struct AccumulateScalars {
  const float* acc_in;
  const float* means;
  float* acc_out;
  PB_HOST_DEVICE void operator()(int64_t k) const { acc_out[k] = acc_in[k] + means[k]; }
};

/// Out of place (without inplace): vel_out = vel_in + v.
struct AccumulateVelocity {
  const float* vel_in;
  const float* v;
  float* vel_out;
  PB_HOST_DEVICE void operator()(int64_t e) const { vel_out[e] = vel_in[e] + v[e]; }
};

/// inplace, one launch of max(B n, 1) threads: thread 0 computes the means, adds them to the
/// accumulators in place, writes the path row (and, deferred_metrics, the log row: the accumulators
/// after this step); every thread e < B n adds v[e] to vel_acc in place.
struct MetricsInPlace {
  const float* dlior;
  const float* R;
  const float* s;
  const float* v;
  int64_t batch;
  float* acc;      // [3]
  float* vel_acc;  // [B, n]
  float* row;      // path + t * kPathColumns
  float* log_row;  // [3] or null
  PB_HOST_DEVICE void operator()(int64_t e) const {
    if (e == 0) {
      float means[3];
      metric_means(dlior, R, s, batch, means);
      for (int k = 0; k < 3; ++k) acc[k] += means[k];
      path_row(v, batch, means, row);
      if (log_row) {
        for (int k = 0; k < 3; ++k) log_row[k] = acc[k];
      }
    }
    if (e < batch * kDim) vel_acc[e] += v[e];
  }
};

/// The window's outputs: {lior, R, spd} = acc / W and vbar = vel_acc / W.
struct FinishWindow {
  const float* acc;
  const float* vel_acc;
  int64_t elements;  // B n
  int64_t steps;
  float* scalars;  // [3]
  float* vbar;     // [B, n]
  PB_HOST_DEVICE void operator()(int64_t e) const {
    const float count = static_cast<float>(steps);
    if (e < 3) scalars[e] = acc[e] / count;
    if (e < elements) vbar[e] = vel_acc[e] / count;
  }
};

// ==== step 9: the field's Störmer–Verlet step =====================================================

/// Force(F)_i = (ħ²/2m) Lap(F)_i - k (F_i - F_eq_i), the Laplacian over (x, y) with zero padding:
/// ref::field_force_at at the (x, y) of flat index i.
PB_HOST_DEVICE inline float field_force(const WindowShape& shape, const float* F, const float* F_eq,
                                        int64_t i) {
  const int64_t ch = shape.channels, ny = shape.ny;
  const int64_t y = (i / ch) % ny, x = i / (ch * ny);
  return ref::field_force_at(shape.nx, ny, ch, x, y, i, F, F_eq);
}

/// Without inplace: the force into a temporary, then the kick and drift updates as separate kernels.
struct FieldForce {
  WindowShape shape;
  const float* F;
  const float* F_eq;
  float* force;
  PB_HOST_DEVICE void operator()(int64_t i) const { force[i] = field_force(shape, F, F_eq, i); }
};

struct Kick {  // P += dt/2 force
  const float* force;
  float* P;
  PB_HOST_DEVICE void operator()(int64_t i) const { P[i] += kHalfDt * force[i]; }
};

struct Drift {  // F += dt/m P
  const float* P;
  float* F;
  PB_HOST_DEVICE void operator()(int64_t i) const { F[i] += kDtOverMass * P[i]; }
};

/// inplace: P += dt/2 Force(F) in place, no force temporary (reads F, writes only P).
struct FusedKick {
  WindowShape shape;
  const float* F;
  const float* F_eq;
  float* P;
  PB_HOST_DEVICE void operator()(int64_t i) const { P[i] += kHalfDt * field_force(shape, F, F_eq, i); }
};

// ==== the training step's manual update ===========================================================

/// ν = nudge_scale (target - q_free).
struct Nudge {
  const float* target;
  const float* q;
  float* nudge;
  PB_HOST_DEVICE void operator()(int64_t e) const { nudge[e] = kNudgeScale * (target[e] - q[e]); }
};

/// One thread: u = mean_b vbar_free [n], Δ = lior_nudged - lior_free.
struct ContrastiveInputs {
  const float* free_vbar;
  int64_t batch;
  const float* free_scalars;    // {lior, R, spd} of the free window
  const float* nudged_scalars;  // of the nudged window
  float* u;                     // [n]
  float* lior_diff;             // [1]
  PB_HOST_DEVICE void operator()(int64_t) const {
    for (int i = 0; i < kDim; ++i) u[i] = ref::coordinate_mean(free_vbar, batch, i);
    *lior_diff = nudged_scalars[0] - free_scalars[0];
  }
};

/// One thread: g <- clamp(g + η Δ u_r² / (Σ u_r² + 1e-8), 0.01, 100), u_r = rotor_apply(u, θ).
struct MetricUpdate {
  const float* u;
  const float* theta;
  const float* lior_diff;
  float* g;
  PB_HOST_DEVICE void operator()(int64_t) const { ref::metric_update(u, theta, *lior_diff, g); }
};

/// Without vectorized_rotor: the angle of pair k from u_i, u_j that the host read back (the original's loop).
struct RotorPairUpdate {
  int k;
  float u_i, u_j;
  const float* lior_diff;
  float* theta;
  PB_HOST_DEVICE void operator()(int64_t) const { theta[k] = ref::rotor_step(theta[k], u_i, u_j, *lior_diff); }
};

struct WrapAngles {
  float* theta;
  PB_HOST_DEVICE void operator()(int64_t k) const { theta[k] = ref::wrap_angle(theta[k]); }
};

/// vectorized_rotor: thread k gathers (i, j) = (pair_i[k], pair_j[k]) and u_i, u_j, updates θ_k
/// (k < 6) and wraps it: the whole rotor update in one launch of kSlots threads.
struct VectorizedRotorUpdate {
  const float* u;
  const int* pair_i;
  const int* pair_j;
  const float* lior_diff;
  float* theta;
  PB_HOST_DEVICE void operator()(int64_t k) const {
    float angle = theta[k];
    if (k < kAngles) angle = ref::rotor_step(angle, u[pair_i[k]], u[pair_j[k]], *lior_diff);
    theta[k] = ref::wrap_angle(angle);
  }
};

/// The last min(C, B) rows of (q, q_state) into the bank ring from `pointer`: one thread per
/// element of the written rows (n coordinates, then d state values per row).
struct MemoryUpdate {
  const float* q;
  const float* q_state;
  int64_t batch, bank_rows, state_dim, rows_written, pointer;
  float* bank_coord;
  float* bank_state;
  PB_HOST_DEVICE void operator()(int64_t e) const {
    const int64_t width = kDim + state_dim;
    const int64_t r = e / width, col = e % width;
    const int64_t source = batch - rows_written + r, row = (pointer + r) % bank_rows;
    if (col < kDim) {
      bank_coord[row * kDim + col] = q[source * kDim + col];
    } else {
      bank_state[row * state_dim + col - kDim] = q_state[source * state_dim + col - kDim];
    }
  }
};

}  // namespace pb::cuda_backend::trainer2
