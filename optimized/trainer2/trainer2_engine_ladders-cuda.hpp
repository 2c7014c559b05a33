#pragma once
// trainer2 on CUDA: the ladders of retrieval, rotor_update, window and train_step, written once
// against an executor, so the same code queues the kernels on the GPU (DeviceExecutor,
// backends/cuda/device_executor.cuh, in the *-cuda.cu variants) and runs them on the host in
// the tests (tests/cuda/host_executor.hpp). Each ladder takes the PhasePlan of its case and asks
// it which optimizations are in effect (what each one means: suites/trainer2/phases.hpp and
// `phasebench list`). The kernel bodies are in trainer2_engine-cuda.cuh; the math is
// reference/trainer2/trainer2.hpp.
//
// An executor provides (both implement exactly this):
//   Buffer<T>, HostBuffer<T>            owning device / pinned host memory, T* data() const
//   allocate<T>(n), allocate_host<T>(n) the former counted as bytes allocated
//   for_each(name, count, op), blocks(name, op)         one kernel launch each
//   copy(dst, src, n), zero(dst, n)                     device-side, ordered
//   read(host, device, n)               the host waits and reads: one host sync
//   copy_to_host(host, device, n)       queued, no wait (graph capture); valid after wait()
//   wait()                              one host sync
//   upload(device, host, n), download(host, device, n) setup() and outputs() only
//
// The window without any optimization does what the original does per step: |F| into a
// temporary and a two-level sum for R; the retrieval batch rebuilt; q + ν as its own kernel, then
// the rotor; retrieval op by op; s, dlior, s again; three mean kernels; the path row; accumulators
// out of place into fresh (stream-ordered) buffers; three one-float reads of the accumulators (3 W
// host syncs); field force into a temporary, kick, drift, force, kick. graph_capture is the
// variant's (trainer2_engine_variant-cuda.cuh): the ladders only log through pinned memory
// (Logging::Capture) when a graph records them.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "optimized/trainer2/trainer2_engine-cuda.cuh"
#include "phasebench/arrays.hpp"
#include "phasebench/phases.hpp"
#include "suites/trainer2/phases.hpp"
#include "suites/trainer2/window_io.hpp"

namespace pb::cuda_backend::trainer2 {

namespace t2 = pb::suites::trainer2;

template <typename Exec>
using Floats = typename Exec::template Buffer<float>;

template <typename Exec>
Floats<Exec> allocate_floats(Exec& exec, int64_t count) {
  return exec.template allocate<float>(count);
}

/// setup(): an input array rounded to float, on the device.
template <typename Exec>
Floats<Exec> upload_array(Exec& exec, const HostArray& array) {
  const std::vector<float> values = array.to_floats();
  Floats<Exec> buffer = allocate_floats(exec, static_cast<int64_t>(values.size()));
  exec.upload(buffer.data(), values.data(), static_cast<int64_t>(values.size()));
  return buffer;
}

/// outputs(): `count` device floats, on the host.
template <typename Exec>
std::vector<float> download_floats(Exec& exec, const float* device, int64_t count) {
  std::vector<float> values(static_cast<size_t>(count));
  exec.download(values.data(), device, count);
  return values;
}

template <typename Exec>
void poison(Exec& exec, float* data, int64_t count) {
  exec.for_each("poison", count, Fill{data, std::numeric_limits<float>::quiet_NaN()});
}

/// The fused retrieval keeps a row's K weights in shared memory: 48 KiB without opting in.
inline void require_fused_retrieval_fits(int64_t candidates) {
  const int64_t bytes = (candidates + 2 * kBlockThreads) * static_cast<int64_t>(sizeof(float));
  if (bytes > 48 * 1024)
    throw std::invalid_argument("fused retrieval: K = " + std::to_string(candidates) +
                                " candidates do not fit in 48 KiB of shared memory");
}

// ==== retrieval ==================================================================================

/// One retrieval step's operands (device pointers).
struct RetrievalArgs {
  const float* q;  // rotated query [B, n]
  const float* cand_coord;
  const float* cand_state;
  const float* g;
  const float* R;
  int64_t batch, candidates, state_dim;
  float* weights;  // [B, K]
  float* act;      // [B, d]
};

/// The intermediate tensors of the op-by-op retrieval (allocated per run or per window).
template <typename Exec>
struct RetrievalTemporaries {
  Floats<Exec> u, quadratic_form, spd, cost, logits, weighted;
  RetrievalTemporaries() = default;
  RetrievalTemporaries(Exec& exec, int64_t batch, int64_t candidates, int64_t state_dim) {
    const int64_t rows = batch * candidates;
    u = allocate_floats(exec, rows * kDim);
    quadratic_form = allocate_floats(exec, rows);
    spd = allocate_floats(exec, rows);
    cost = allocate_floats(exec, rows);
    logits = allocate_floats(exec, rows);
    weighted = allocate_floats(exec, rows * state_dim);
  }
};

/// As the original: u = cand - q; (g*u*u).sum(-1); clamp, + eps, sqrt; R * spd; -β cost;
/// softmax; w[..., None] * cand_state; sum over K. Eight launches.
template <typename Exec>
void retrieval_op_by_op(Exec& exec, const RetrievalArgs& a, RetrievalTemporaries<Exec>& tmp) {
  const int64_t rows = a.batch * a.candidates;
  exec.for_each("displacement", rows * kDim, Displacement{a.q, a.cand_coord, a.candidates, tmp.u.data()});
  exec.for_each("quadratic_form", rows, QuadraticForm{tmp.u.data(), a.g, tmp.quadratic_form.data()});
  exec.for_each("clamped_sqrt", rows, ClampedSqrt{tmp.quadratic_form.data(), tmp.spd.data()});
  exec.for_each("cost", rows, Cost{a.R, tmp.spd.data(), a.candidates, tmp.cost.data()});
  exec.for_each("logit", rows, Logit{tmp.cost.data(), tmp.logits.data()});
  exec.blocks("softmax", SoftmaxRows{tmp.logits.data(), a.batch, a.candidates, a.weights});
  exec.for_each("weighted_states", rows * a.state_dim,
                WeightedStates{a.weights, a.cand_state, a.state_dim, tmp.weighted.data()});
  exec.for_each("sum_over_candidates", a.batch * a.state_dim,
                SumOverCandidates{tmp.weighted.data(), a.candidates, a.state_dim, a.act});
}

/// jit_fusion: the whole step in one launch.
template <typename Exec>
void retrieval_fused(Exec& exec, const RetrievalArgs& a) {
  exec.blocks("fused_retrieval", FusedRetrieval{a.q, a.cand_coord, a.cand_state, a.g, a.R, a.batch,
                                                a.candidates, a.state_dim, a.weights, a.act});
}

/// trainer2/retrieval: op by op (intermediates allocated per run, as fresh tensors), or one
/// kernel with jit_fusion.
template <typename Exec>
class RetrievalLadder {
 public:
  /// The phases it implements, for its registration and the tests.
  static std::vector<std::string> phases() { return {t2::kBaseline, t2::kJitFusion}; }

  RetrievalLadder(Exec& exec, const ArrayMap& inputs, const PhasePlan& plan)
      : exec_(exec), fused_(plan.has(t2::kJitFusion)) {
    const HostArray& state = require(inputs, "cand_state");
    batch_ = state.shape.at(0), candidates_ = state.shape.at(1), state_dim_ = state.shape.at(2);
    if (fused_) require_fused_retrieval_fits(candidates_);
    q_ = upload_array(exec, require(inputs, "q"));
    cand_coord_ = upload_array(exec, require(inputs, "cand_coord"));
    cand_state_ = upload_array(exec, state);
    g_ = upload_array(exec, require(inputs, "g"));
    R_ = upload_array(exec, require(inputs, "R"));
    weights_ = allocate_floats(exec, batch_ * candidates_);
    act_ = allocate_floats(exec, batch_ * state_dim_);
  }

  void run() {
    const RetrievalArgs args{q_.data(), cand_coord_.data(), cand_state_.data(), g_.data(), R_.data(),
                             batch_,    candidates_,        state_dim_,         weights_.data(), act_.data()};
    if (fused_) {
      retrieval_fused(exec_, args);
    } else {
      RetrievalTemporaries<Exec> temporaries(exec_, batch_, candidates_, state_dim_);
      retrieval_op_by_op(exec_, args, temporaries);
    }
  }

  void poison_outputs() {
    poison(exec_, weights_.data(), batch_ * candidates_);
    poison(exec_, act_.data(), batch_ * state_dim_);
  }

  ArrayMap outputs() {
    return {{"act", HostArray::from_floats({batch_, state_dim_},
                                           download_floats(exec_, act_.data(), batch_ * state_dim_).data(),
                                           batch_ * state_dim_)},
            {"weights", HostArray::from_floats({batch_, candidates_},
                                               download_floats(exec_, weights_.data(), batch_ * candidates_).data(),
                                               batch_ * candidates_)}};
  }

 private:
  Exec& exec_;
  bool fused_;
  int64_t batch_ = 0, candidates_ = 0, state_dim_ = 0;
  Floats<Exec> q_, cand_coord_, cand_state_, g_, R_, weights_, act_;
};

// ==== rotor update ===============================================================================

/// The rotor's pair coordinates (i, j) per flattened pair k, as index arrays on the device (the
/// original keeps them as index tensors).
template <typename Exec>
struct RotorPairs {
  typename Exec::template Buffer<int> i, j;
  explicit RotorPairs(Exec& exec) {
    std::vector<int> first(kSlots), second(kSlots);
    for (int k = 0; k < kSlots; ++k) ref::rotor_pair(k, first[k], second[k]);
    i = exec.template allocate<int>(kSlots);
    j = exec.template allocate<int>(kSlots);
    exec.upload(i.data(), first.data(), kSlots);
    exec.upload(j.data(), second.data(), kSlots);
  }
};

/// θ updated from u and Δ (device pointers). Not vectorized: the original's loop, reading i, j,
/// u_i and u_j back to the host for each learnt pair (4 syncs per pair), one launch per pair,
/// then the wrap. Vectorized (vectorized_rotor): one launch, no host read.
template <typename Exec>
void rotor_update(Exec& exec, bool vectorized, const float* u, const RotorPairs<Exec>& pairs,
                  const float* lior_diff, float* theta) {
  if (vectorized) {
    exec.for_each("vectorized_rotor_update", kSlots,
                  VectorizedRotorUpdate{u, pairs.i.data(), pairs.j.data(), lior_diff, theta});
    return;
  }
  for (int k = 0; k < kAngles; ++k) {
    int i = 0, j = 0;
    float u_i = 0.f, u_j = 0.f;
    exec.read(&i, pairs.i.data() + k, 1);
    exec.read(&j, pairs.j.data() + k, 1);
    exec.read(&u_i, u + i, 1);
    exec.read(&u_j, u + j, 1);
    exec.for_each("rotor_pair_update", 1, RotorPairUpdate{k, u_i, u_j, lior_diff, theta});
  }
  exec.for_each("wrap_angles", kSlots, WrapAngles{theta});
}

/// trainer2/rotor_update: every run starts from the input θ (a device copy, part of the run).
template <typename Exec>
class RotorUpdateLadder {
 public:
  static std::vector<std::string> phases() { return {t2::kBaseline, t2::kVectorizedRotor}; }

  RotorUpdateLadder(Exec& exec, const ArrayMap& inputs, const PhasePlan& plan)
      : exec_(exec), vectorized_(plan.has(t2::kVectorizedRotor)), pairs_(exec) {
    u_ = upload_array(exec, require(inputs, "u"));
    theta0_ = upload_array(exec, require(inputs, "theta"));
    lior_diff_ = upload_array(exec, require(inputs, "lior_diff"));
    theta_ = allocate_floats(exec, kSlots);
  }

  void run() {
    exec_.copy(theta_.data(), theta0_.data(), kSlots);
    rotor_update(exec_, vectorized_, u_.data(), pairs_, lior_diff_.data(), theta_.data());
  }

  void poison_outputs() { poison(exec_, theta_.data(), kSlots); }

  ArrayMap outputs() {
    return {{"theta", HostArray::from_floats({kSlots}, download_floats(exec_, theta_.data(), kSlots).data(),
                                             kSlots)}};
  }

 private:
  Exec& exec_;
  bool vectorized_;
  RotorPairs<Exec> pairs_;
  Floats<Exec> u_, theta0_, lior_diff_, theta_;
};

// ==== window =====================================================================================

/// The optimizations of the window in effect, read once from the plan (the runner asks them
/// every step).
struct WindowConfig {
  bool batched_metrics, fused_lior, fused_retrieval, in_place, hoisted_batch, last_step_act, deferred_metrics;

  explicit WindowConfig(const PhasePlan& plan)
      : batched_metrics(plan.has(t2::kBatchedMetrics)),
        fused_lior(plan.has(t2::kFusedLiorSpd)),
        fused_retrieval(plan.has(t2::kJitFusion)),
        in_place(plan.has(t2::kInPlace)),
        hoisted_batch(plan.has(t2::kHoistedRetrievalBatch)),
        last_step_act(plan.has(t2::kLastStepAct)),
        deferred_metrics(plan.has(t2::kDeferredMetrics)) {}
};

/// The window's optimizations this engine implements: all but adaptive_cleanup (CUDA keeps no
/// allocator cache: the harness writes that row) and temporal_blocking.
inline std::vector<std::string> window_phases() {
  return {t2::kBaseline,    t2::kBatchedMetrics,         t2::kFusedLiorSpd, t2::kJitFusion,
          t2::kInPlace,     t2::kGraphCapture,           t2::kHoistedRetrievalBatch,
          t2::kLastStepAct, t2::kDeferredMetrics};
}

/// How the host gets the progress metrics. Read: it reads them as the plan says (eager).
/// Capture: the run is being captured into a graph, which cannot hold a host wait: the values
/// are copied into pinned memory instead, and the caller waits once after the replay.
enum class Logging { Read, Capture };

/// One window's inputs (device pointers); nudge is null in the free phase.
struct WindowInputs {
  const float* O;
  const float* bank_coord;
  const float* bank_state;
  const float* g;
  const float* theta;
  const float* F_eq;
  const float* nudge;
};

/// One run_window on device buffers: the window's ladder. The window and train_step
/// ladders below own one (two) and supply its inputs and field.
template <typename Exec>
class WindowRunner {
 public:
  WindowRunner(Exec& exec, const WindowShape& shape, WindowConfig config)
      : exec_(exec), shape_(shape), config_(config) {
    const int64_t B = shape.batch, d = shape.state_dim;
    if (config.fused_retrieval) require_fused_retrieval_fits(shape.candidates());
    scalars_ = allocate_floats(exec, 3);
    act_ = allocate_floats(exec, B * d);
    vbar_ = allocate_floats(exec, B * kDim);
    path_ = allocate_floats(exec, shape.steps * kPathColumns);
    q_ = allocate_floats(exec, B * kDim);
    q_state_ = allocate_floats(exec, B * d);
    log_ = exec.template allocate_host<float>(3 * shape.steps);
    if (config.in_place) workspace_ = make_workspace();
  }

  /// One window: F and P (device, [Nx, Ny, channels]) advanced in place, outputs written.
  void run(const WindowInputs& in, float* F, float* P, Logging logging) {
    Workspace per_window;  // until inplace: the window's buffers, allocated now, freed at its end
    if (!config_.in_place) per_window = make_workspace();
    Workspace& w = config_.in_place ? workspace_ : per_window;
    Floats<Exec> acc_fresh, vel_fresh;  // until inplace: replaced by fresh buffers every step
    if (!config_.in_place) {
      acc_fresh = allocate_floats(exec_, 3);
      vel_fresh = allocate_floats(exec_, velocity_count());
    }
    Floats<Exec>& acc = config_.in_place ? w.acc : acc_fresh;
    Floats<Exec>& vel = config_.in_place ? w.vel : vel_fresh;
    exec_.zero(acc.data(), 3);
    exec_.zero(vel.data(), velocity_count());

    if (config_.hoisted_batch) build_batch(w, in);
    for (int64_t t = 0; t < shape_.steps; ++t) {
      curvature(w, F);                                                // 1
      if (!config_.hoisted_batch) build_batch(w, in);                 // 2
      if (!config_.last_step_act || t == shape_.steps - 1) {          // 3, 4
        rotate_query(w, in);
        retrieve(w, in);
      }
      lior(w, in.g);                                                  // 5
      if (config_.in_place) {                                         // 6, 7
        accumulate_in_place(t, w, acc.data(), vel.data());
      } else {
        accumulate_out_of_place(t, w, acc, vel);
      }
      log_progress(t, acc.data(), logging);                           // 8
      field_step(w, F, P, in.F_eq);                                   // 9
    }
    exec_.for_each("finish_window", std::max<int64_t>(3, velocity_count()),
                   FinishWindow{acc.data(), vel.data(), velocity_count(), shape_.steps, scalars_.data(),
                                vbar_.data()});
    if (config_.deferred_metrics) deliver_log(w, logging);
  }

  void poison_outputs() {
    poison(exec_, scalars_.data(), 3);
    poison(exec_, act_.data(), shape_.batch * shape_.state_dim);
    poison(exec_, vbar_.data(), velocity_count());
    std::fill(log_.data(), log_.data() + 3 * shape_.steps, std::numeric_limits<float>::quiet_NaN());
    poison(exec_, path_.data(), shape_.steps * kPathColumns);
    poison(exec_, q_.data(), velocity_count());
    poison(exec_, q_state_.data(), shape_.batch * shape_.state_dim);
  }

  const float* scalars() const { return scalars_.data(); }  // {lior, R, spd}
  const float* vbar() const { return vbar_.data(); }
  const float* q() const { return q_.data(); }
  const float* q_state() const { return q_state_.data(); }
  /// The host's progress log: the accumulators {lior, R, spd} after each step, [W, 3]; valid
  /// after run() (Read) or after the caller's wait() (Capture).
  const float* progress_log() const { return log_.data(); }

  /// The outputs of the last run, with F and P, packed as the workload names them.
  void add_outputs(ArrayMap& out, const std::string& prefix, const ref::WindowDims& dims, const float* F,
                   const float* P) {
    const int64_t B = shape_.batch, d = shape_.state_dim;
    ref::WindowResult<float> result;
    const std::vector<float> scalars = download_floats(exec_, scalars_.data(), 3);
    result.lior = scalars[0];
    result.R = scalars[1];
    result.spd = scalars[2];
    result.act = download_floats(exec_, act_.data(), B * d);
    result.vbar = download_floats(exec_, vbar_.data(), velocity_count());
    result.path = download_floats(exec_, path_.data(), shape_.steps * kPathColumns);
    for (int64_t t = 0; t < shape_.steps; ++t)  // the host divides what it read by the step count
      for (int k = 0; k < 3; ++k) result.progress.push_back(log_.data()[3 * t + k] / static_cast<float>(t + 1));
    t2::add_window_outputs(out, prefix, dims, result, download_floats(exec_, F, shape_.field_size()),
                           download_floats(exec_, P, shape_.field_size()), ElementType::Float32);
  }

 private:
  struct Workspace {
    Floats<Exec> cand_coord, cand_state;         // the retrieval batch
    Floats<Exec> R, partials, modulus;           // curvature (modulus: not inplace)
    Floats<Exec> shifted, q_rot;                 // query (shifted: not inplace)
    Floats<Exec> weights;                        // retrieval
    RetrievalTemporaries<Exec> retrieval;        // not jit_fusion
    Floats<Exec> s, s_tmp, dlior, means;         // LIoR step (s_tmp: not fused_lior_spd; means: not inplace)
    Floats<Exec> acc, vel;                       // accumulators (inplace)
    Floats<Exec> force;                          // field (not inplace)
    Floats<Exec> log;                            // deferred_metrics: [W, 3]
  };

  int64_t velocity_count() const { return shape_.batch * kDim; }
  int64_t curvature_block_count() const { return curvature_blocks(shape_.complex_count()); }

  Workspace make_workspace() {
    const int64_t B = shape_.batch, K = shape_.candidates(), d = shape_.state_dim;
    Workspace w;
    w.cand_coord = allocate_floats(exec_, B * K * kDim);
    w.cand_state = allocate_floats(exec_, B * K * d);
    w.R = allocate_floats(exec_, B);
    w.partials = allocate_floats(exec_, curvature_block_count());
    w.q_rot = allocate_floats(exec_, B * kDim);
    w.weights = allocate_floats(exec_, B * K);
    if (!config_.fused_retrieval) w.retrieval = RetrievalTemporaries<Exec>(exec_, B, K, d);
    w.s = allocate_floats(exec_, B);
    w.dlior = allocate_floats(exec_, B);
    if (!config_.fused_lior) w.s_tmp = allocate_floats(exec_, B);
    if (config_.in_place) {
      w.acc = allocate_floats(exec_, 3);
      w.vel = allocate_floats(exec_, velocity_count());
    } else {
      w.modulus = allocate_floats(exec_, shape_.complex_count());
      w.shifted = allocate_floats(exec_, B * kDim);
      w.means = allocate_floats(exec_, 3);
      w.force = allocate_floats(exec_, shape_.field_size());
    }
    if (config_.deferred_metrics) w.log = allocate_floats(exec_, 3 * shape_.steps);
    return w;
  }

  // 1: R = mean |F|, broadcast to [B]; inplace sums |F| straight from F, with no temporary.
  void curvature(Workspace& w, const float* F) {
    const int64_t count = shape_.complex_count(), blocks = curvature_block_count();
    if (config_.in_place) {
      exec_.blocks("curvature_partials", CurvaturePartials{F, true, count, blocks, w.partials.data()});
    } else {
      exec_.for_each("complex_modulus", count, ComplexModulus{F, w.modulus.data()});
      exec_.blocks("curvature_partials",
                   CurvaturePartials{w.modulus.data(), false, count, blocks, w.partials.data()});
    }
    exec_.blocks("curvature_finish", CurvatureFinish{w.partials.data(), blocks, count, shape_.batch, w.R.data()});
  }

  // 2: q = mean_T O[..., :n], q_state = mean_T O, candidates = concat_K(O, bank).
  void build_batch(Workspace& w, const WindowInputs& in) {
    const int64_t B = shape_.batch, T = shape_.tokens, K = shape_.candidates(), d = shape_.state_dim;
    exec_.for_each("token_mean_coord", B * kDim, TokenMean{in.O, T, d, kDim, q_.data()});
    exec_.for_each("token_mean_state", B * d, TokenMean{in.O, T, d, d, q_state_.data()});
    exec_.for_each("concat_coord", B * K * kDim,
                   ConcatCandidates{in.O, in.bank_coord, T, K, d, kDim, w.cand_coord.data()});
    exec_.for_each("concat_state", B * K * d,
                   ConcatCandidates{in.O, in.bank_state, T, K, d, d, w.cand_state.data()});
  }

  // 3: q' = rotor_apply(q + ν, θ) (v = q needs no kernel: it is q); inplace adds ν inside the
  // rotor kernel.
  void rotate_query(Workspace& w, const WindowInputs& in) {
    const int64_t B = shape_.batch;
    if (in.nudge && !config_.in_place) {
      exec_.for_each("shift_query", B * kDim, ShiftQuery{q_.data(), in.nudge, w.shifted.data()});
      exec_.for_each("rotate_query", B, RotateQuery{w.shifted.data(), nullptr, in.theta, w.q_rot.data()});
    } else {
      exec_.for_each("rotate_query", B, RotateQuery{q_.data(), in.nudge, in.theta, w.q_rot.data()});
    }
  }

  // 4: act (and the weights) from the rotated query.
  void retrieve(Workspace& w, const WindowInputs& in) {
    const RetrievalArgs args{w.q_rot.data(), w.cand_coord.data(), w.cand_state.data(), in.g, w.R.data(),
                             shape_.batch, shape_.candidates(), shape_.state_dim, w.weights.data(),
                             act_.data()};
    if (config_.fused_retrieval) {
      retrieval_fused(exec_, args);
    } else {
      retrieval_op_by_op(exec_, args, w.retrieval);
    }
  }

  // 5: s and dlior for v = q.
  void lior(Workspace& w, const float* g) {
    const int64_t B = shape_.batch;
    if (config_.fused_lior) {
      exec_.for_each("fused_lior", B, FusedLior{q_.data(), w.R.data(), g, w.s.data(), w.dlior.data()});
      return;
    }
    // As the original: lior_step computes s and dlior, then the metrics compute s again.
    exec_.for_each("speed", B, Speed{q_.data(), g, w.s_tmp.data()});
    exec_.for_each("dlior", B, Dlior{w.R.data(), w.s_tmp.data(), w.dlior.data()});
    exec_.for_each("speed", B, Speed{q_.data(), g, w.s.data()});
  }

  // 6-7, not inplace: the means, the path row, then acc = acc + means and vel = vel + v into
  // fresh buffers (the previous ones are freed after the kernels that read them).
  void accumulate_out_of_place(int64_t t, Workspace& w, Floats<Exec>& acc, Floats<Exec>& vel) {
    const int64_t B = shape_.batch;
    float* means = w.means.data();
    if (config_.batched_metrics) {
      exec_.for_each("metric_means", 1, MetricMeans{w.dlior.data(), w.R.data(), w.s.data(), B, means});
    } else {
      exec_.for_each("mean", 1, MeanOfRows{w.dlior.data(), B, means + 0});
      exec_.for_each("mean", 1, MeanOfRows{w.R.data(), B, means + 1});
      exec_.for_each("mean", 1, MeanOfRows{w.s.data(), B, means + 2});
    }
    exec_.for_each("path_row", 1, PathRow{q_.data(), B, means, path_.data() + t * kPathColumns});
    Floats<Exec> next_acc = allocate_floats(exec_, 3);
    Floats<Exec> next_vel = allocate_floats(exec_, velocity_count());
    exec_.for_each("accumulate_scalars", 3, AccumulateScalars{acc.data(), means, next_acc.data()});
    exec_.for_each("accumulate_velocity", velocity_count(),
                   AccumulateVelocity{vel.data(), q_.data(), next_vel.data()});
    acc = std::move(next_acc);
    vel = std::move(next_vel);
  }

  // 6-7, inplace: one launch that also writes the path row (and the deferred log row).
  void accumulate_in_place(int64_t t, Workspace& w, float* acc, float* vel) {
    float* log_row = config_.deferred_metrics ? w.log.data() + 3 * t : nullptr;
    exec_.for_each("metrics_in_place", std::max<int64_t>(1, velocity_count()),
                   MetricsInPlace{w.dlior.data(), w.R.data(), w.s.data(), q_.data(), shape_.batch, acc, vel,
                                  path_.data() + t * kPathColumns, log_row});
  }

  // 8: the host reads lior_acc, R_acc, spd_acc (and logs them divided by the step count).
  void log_progress(int64_t t, const float* acc, Logging logging) {
    if (config_.deferred_metrics) return;  // written to the device log, delivered at the end
    float* row = log_.data() + 3 * t;
    if (logging == Logging::Capture) {
      exec_.copy_to_host(row, acc, 3);
    } else if (config_.batched_metrics) {
      exec_.read(row, acc, 3);
    } else {
      for (int k = 0; k < 3; ++k) exec_.read(row + k, acc + k, 1);
    }
  }

  void deliver_log(Workspace& w, Logging logging) {
    if (logging == Logging::Capture) {
      exec_.copy_to_host(log_.data(), w.log.data(), 3 * shape_.steps);
    } else {
      exec_.read(log_.data(), w.log.data(), 3 * shape_.steps);
    }
  }

  // 9: P += dt/2 Force(F); F += dt/m P; P += dt/2 Force(F). inplace computes the force inside
  // the kick, which updates P in place.
  void field_step(Workspace& w, float* F, float* P, const float* F_eq) {
    const int64_t size = shape_.field_size();
    if (config_.in_place) {
      exec_.for_each("kick", size, FusedKick{shape_, F, F_eq, P});
      exec_.for_each("drift", size, Drift{P, F});
      exec_.for_each("kick", size, FusedKick{shape_, F, F_eq, P});
      return;
    }
    exec_.for_each("field_force", size, FieldForce{shape_, F, F_eq, w.force.data()});
    exec_.for_each("kick", size, Kick{w.force.data(), P});
    exec_.for_each("drift", size, Drift{P, F});
    exec_.for_each("field_force", size, FieldForce{shape_, F, F_eq, w.force.data()});
    exec_.for_each("kick", size, Kick{w.force.data(), P});
  }

  Exec& exec_;
  WindowShape shape_;
  WindowConfig config_;
  Floats<Exec> scalars_, act_, vbar_, path_, q_, q_state_;  // outputs (q, q_state for train_step)
  typename Exec::template HostBuffer<float> log_;
  Workspace workspace_;  // inplace: allocated once, in setup
};

/// trainer2/window: every run is one window from the same state: F = F0, P = 0 (the reset is
/// part of the run; F_eq is F0 itself, never written).
template <typename Exec>
class WindowLadder {
 public:
  static std::vector<std::string> phases() { return window_phases(); }

  WindowLadder(Exec& exec, const ArrayMap& inputs, const PhasePlan& plan)
      : exec_(exec),
        dims_(t2::window_dims_of(inputs)),
        runner_(exec, window_shape(dims_), WindowConfig(plan)) {
    O_ = upload_array(exec, require(inputs, "O"));
    bank_coord_ = upload_array(exec, require(inputs, "bank_coord"));
    bank_state_ = upload_array(exec, require(inputs, "bank_state"));
    g_ = upload_array(exec, require(inputs, "g"));
    theta_ = upload_array(exec, require(inputs, "theta"));
    F0_ = upload_array(exec, require(inputs, "F0"));
    F_ = allocate_floats(exec, dims_.field_size());
    P_ = allocate_floats(exec, dims_.field_size());
  }

  void run(Logging logging) {
    enqueue(logging);
    finish_on_host();
  }

  /// The device part of a run (what a graph captures).
  void enqueue(Logging logging) {
    exec_.copy(F_.data(), F0_.data(), dims_.field_size());
    exec_.zero(P_.data(), dims_.field_size());
    const WindowInputs in{O_.data(), bank_coord_.data(), bank_state_.data(), g_.data(),
                          theta_.data(), F0_.data(), nullptr};
    runner_.run(in, F_.data(), P_.data(), logging);
  }
  /// The host part of a run, after the device part (a graph replay runs only the device part).
  void finish_on_host() {}

  void poison_outputs() {
    runner_.poison_outputs();
    poison(exec_, F_.data(), dims_.field_size());
    poison(exec_, P_.data(), dims_.field_size());
  }

  ArrayMap outputs() {
    ArrayMap out;
    runner_.add_outputs(out, "", dims_, F_.data(), P_.data());
    return out;
  }

  const WindowRunner<Exec>& runner() const { return runner_; }

 private:
  Exec& exec_;
  ref::WindowDims dims_;
  WindowRunner<Exec> runner_;
  Floats<Exec> O_, bank_coord_, bank_state_, g_, theta_, F0_, F_, P_;
};

// ==== training step ==============================================================================

/// trainer2/train_step: every run starts from the inputs. The free window runs on a copy of the
/// field (the snapshot), the nudged one on the state itself, which is therefore "restored".
/// Optimizations: the window's, plus vectorized_rotor (24 host syncs fewer).
template <typename Exec>
class TrainStepLadder {
 public:
  static std::vector<std::string> phases() {
    std::vector<std::string> names = window_phases();
    names.insert(names.begin() + 2, t2::kVectorizedRotor);  // catalog order: after batched_metrics
    return names;
  }

  TrainStepLadder(Exec& exec, const ArrayMap& inputs, const PhasePlan& plan)
      : exec_(exec),
        dims_(t2::window_dims_of(inputs)),
        vectorized_rotor_(plan.has(t2::kVectorizedRotor)),
        free_(exec, window_shape(dims_), WindowConfig(plan)),
        nudged_(exec, window_shape(dims_), WindowConfig(plan)),
        pairs_(exec) {
    O_ = upload_array(exec, require(inputs, "O"));
    target_ = upload_array(exec, require(inputs, "target"));
    F0_ = upload_array(exec, require(inputs, "F0"));
    g0_ = upload_array(exec, require(inputs, "g"));
    theta0_ = upload_array(exec, require(inputs, "theta"));
    bank_coord0_ = upload_array(exec, require(inputs, "bank_coord"));
    bank_state0_ = upload_array(exec, require(inputs, "bank_state"));
    pointer0_ = static_cast<int64_t>(require(inputs, "bank_pointer").values.at(0));
    const int64_t field = dims_.field_size();
    F_ = allocate_floats(exec, field);
    P_ = allocate_floats(exec, field);
    free_F_ = allocate_floats(exec, field);
    free_P_ = allocate_floats(exec, field);
    g_ = allocate_floats(exec, kDim);
    theta_ = allocate_floats(exec, kSlots);
    bank_coord_ = allocate_floats(exec, dims_.bank_rows * kDim);
    bank_state_ = allocate_floats(exec, dims_.bank_rows * dims_.state_dim);
    nudge_ = allocate_floats(exec, dims_.batch * kDim);
    u_ = allocate_floats(exec, kDim);
    lior_diff_ = allocate_floats(exec, 1);
  }

  void run(Logging logging) {
    enqueue(logging);
    finish_on_host();
  }

  /// The device part of a run (what a graph captures).
  void enqueue(Logging logging) {
    const int64_t field = dims_.field_size(), B = dims_.batch;
    reset_state();
    exec_.copy(free_F_.data(), F_.data(), field);  // 1: snapshot
    exec_.copy(free_P_.data(), P_.data(), field);
    WindowInputs in{O_.data(), bank_coord_.data(), bank_state_.data(), g_.data(), theta_.data(), F0_.data(),
                    nullptr};
    free_.run(in, free_F_.data(), free_P_.data(), logging);
    exec_.for_each("nudge", B * kDim, Nudge{target_.data(), free_.q(), nudge_.data()});  // 2
    in.nudge = nudge_.data();
    nudged_.run(in, F_.data(), P_.data(), logging);  // 3
    exec_.for_each("contrastive_inputs", 1,          // 4, 5
                   ContrastiveInputs{free_.vbar(), B, free_.scalars(), nudged_.scalars(), u_.data(),
                                     lior_diff_.data()});
    exec_.for_each("metric_update", 1, MetricUpdate{u_.data(), theta_.data(), lior_diff_.data(), g_.data()});
    rotor_update(exec_, vectorized_rotor_, u_.data(), pairs_, lior_diff_.data(), theta_.data());  // 7
    memory_update();                                                                               // 8
  }

  /// The host part of a run: the ring pointer advances (host arithmetic, no device read).
  void finish_on_host() { pointer_ = (pointer0_ + rows_written()) % dims_.bank_rows; }

  void poison_outputs() {
    free_.poison_outputs();
    nudged_.poison_outputs();
    const int64_t field = dims_.field_size();
    for (float* data : {F_.data(), P_.data(), free_F_.data(), free_P_.data()}) poison(exec_, data, field);
    poison(exec_, g_.data(), kDim);
    poison(exec_, theta_.data(), kSlots);
    poison(exec_, bank_coord_.data(), dims_.bank_rows * kDim);
    poison(exec_, bank_state_.data(), dims_.bank_rows * dims_.state_dim);
    pointer_ = -1;
  }

  ArrayMap outputs() {
    ArrayMap out;
    free_.add_outputs(out, "free_", dims_, free_F_.data(), free_P_.data());
    nudged_.add_outputs(out, "nudged_", dims_, F_.data(), P_.data());
    ref::TrainState<float> state;
    state.g = download_floats(exec_, g_.data(), kDim);
    state.theta = download_floats(exec_, theta_.data(), kSlots);
    state.bank_coord = download_floats(exec_, bank_coord_.data(), dims_.bank_rows * kDim);
    state.bank_state = download_floats(exec_, bank_state_.data(), dims_.bank_rows * dims_.state_dim);
    state.bank_pointer = pointer_;
    t2::add_train_state_outputs(out, dims_, state, ElementType::Float32);
    return out;
  }

  const WindowRunner<Exec>& free_window() const { return free_; }
  const WindowRunner<Exec>& nudged_window() const { return nudged_; }

 private:
  // The trainer's state from the inputs: field F0, momentum 0, bank, g, θ.
  void reset_state() {
    const int64_t field = dims_.field_size();
    exec_.copy(F_.data(), F0_.data(), field);
    exec_.zero(P_.data(), field);
    exec_.copy(g_.data(), g0_.data(), kDim);
    exec_.copy(theta_.data(), theta0_.data(), kSlots);
    exec_.copy(bank_coord_.data(), bank_coord0_.data(), dims_.bank_rows * kDim);
    exec_.copy(bank_state_.data(), bank_state0_.data(), dims_.bank_rows * dims_.state_dim);
  }

  int64_t rows_written() const { return std::min(dims_.bank_rows, dims_.batch); }

  // The free phase's (q, q_state) into the ring at the input pointer.
  void memory_update() {
    const int64_t B = dims_.batch, C = dims_.bank_rows, d = dims_.state_dim, rows = rows_written();
    exec_.for_each("memory_update", rows * (kDim + d),
                   MemoryUpdate{free_.q(), free_.q_state(), B, C, d, rows, pointer0_, bank_coord_.data(),
                                bank_state_.data()});
  }

  Exec& exec_;
  ref::WindowDims dims_;
  bool vectorized_rotor_;
  WindowRunner<Exec> free_, nudged_;
  RotorPairs<Exec> pairs_;
  Floats<Exec> O_, target_, F0_, g0_, theta0_, bank_coord0_, bank_state0_;  // inputs
  Floats<Exec> F_, P_, free_F_, free_P_, g_, theta_, bank_coord_, bank_state_;  // state, outputs
  Floats<Exec> nudge_, u_, lior_diff_;
  int64_t pointer0_ = 0, pointer_ = 0;
};

}  // namespace pb::cuda_backend::trainer2
