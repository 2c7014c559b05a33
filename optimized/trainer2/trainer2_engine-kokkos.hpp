#pragma once
// The trainer2 suite's building blocks on Kokkos, written once for every Kokkos variant: the
// views and constants, the rotor update, the retrieval and the LIoR speed, each with the
// variants of it the catalog's optimizations ask for (per-pair or vectorized_rotor; op by op or
// jit_fusion; twice or fused_lior_spd). The unit workloads (lior_step, retrieval, rotor_update)
// call them directly; the window and the training step string them together with the field
// dynamics in trainer2_engine_window-kokkos.hpp. The math is reference/trainer2/trainer2.hpp, in
// its order of operations (so that on one thread most results match the fp32 reference bit for
// bit).
//
// Conventions: every kernel runs on Kokkos::DefaultExecutionSpace and its memory space. Kernels
// are free functions, never member functions (CUDA builds reject KOKKOS_LAMBDA inside private
// members), and capture Views by value. Arrays are row-major Views (LayoutRight on every device)
// because the inner loops run along the last index: contiguous for a host core, coalesced across
// the threads of a team on a GPU. Per-site and per-row kernels are team kernels (one team per
// field site or batch row, TeamVectorRange over the contiguous channels or states). Nothing here
// reads the host except through the counted helpers of backends/kokkos/kokkos_backend.hpp.

#include <cmath>
#include <cstdint>
#include <string>

#include "backends/kokkos/kokkos_backend.hpp"
#include "optimized/trainer2/field_dynamics.hpp"
#include "reference/trainer2/trainer2.hpp"

namespace pb::kokkos_backend::trainer2 {

namespace ref = pb::reference::trainer2;

// ---- views and policies ------------------------------------------------------------------------

template <class DataType>
using RowMajor = Kokkos::View<DataType, Kokkos::LayoutRight, MemSpace>;
using Vec = RowMajor<float*>;
using ConstVec = RowMajor<const float*>;
using Mat = RowMajor<float**>;
using ConstMat = RowMajor<const float**>;
using Cube = RowMajor<float***>;
using ConstCube = RowMajor<const float***>;
using Cell = RowMajor<float>;  // a device scalar (a 0-d tensor)
using ConstCell = RowMajor<const float>;
using IndexVec = RowMajor<int*>;
using HostCell = Kokkos::View<float, Kokkos::HostSpace>;
using HostIndexCell = Kokkos::View<int, Kokkos::HostSpace>;
using TeamPolicy = Kokkos::TeamPolicy<ExecSpace, Kokkos::IndexType<int64_t>>;
using Member = TeamPolicy::member_type;

// ---- constants, in the reference's float rounding ------------------------------------------------

constexpr int kDim = ref::kCoordinateDim;
constexpr int kSlots = ref::kRotorSlots;
constexpr int kAngles = ref::kRotorAngles;
constexpr int kPathColumns = ref::kPathColumns;
constexpr float kEps = static_cast<float>(ref::kLiorEps);
constexpr float kBeta = static_cast<float>(ref::kRetrievalBeta);
using pb::trainer2_kernels::kDiffusion;
using pb::trainer2_kernels::kDtOverMass;
using pb::trainer2_kernels::kHalfDt;
using pb::trainer2_kernels::kSpring;
constexpr float kNudgeScale = static_cast<float>(ref::kNudgeScale);
constexpr float kEta = static_cast<float>(ref::kEta);
constexpr float kRotorRate = static_cast<float>(0.01 * ref::kEta);
// The oracle's rotor threshold, compared in double as the oracle compares it: 1e-6f is just below
// 1e-6, so `r >= 1e-6f` would update a pair at r == 1e-6f that the fp64 reference leaves alone.
constexpr double kMinRotorRadius = 1e-6;
constexpr float kPi = static_cast<float>(ref::kPi);

// Labels are std::string constants: Kokkos takes labels as const std::string&, and a literal
// longer than the small-string buffer would allocate on every launch.
inline const std::string kDisplacementLabel = "trainer2/retrieval/displacement";
inline const std::string kQuadraticFormLabel = "trainer2/retrieval/quadratic_form";
inline const std::string kSpeedLabel = "trainer2/retrieval/spd";
inline const std::string kCostLabel = "trainer2/retrieval/cost";
inline const std::string kLogitsLabel = "trainer2/retrieval/logits";
inline const std::string kRowMaxLabel = "trainer2/retrieval/row_max";
inline const std::string kExpLabel = "trainer2/retrieval/exp";
inline const std::string kRowSumLabel = "trainer2/retrieval/row_sum";
inline const std::string kNormalizeLabel = "trainer2/retrieval/normalize";
inline const std::string kMixLabel = "trainer2/retrieval/mix";
inline const std::string kFusedRetrievalLabel = "trainer2/retrieval/fused";
inline const std::string kRotorPairLabel = "trainer2/rotor/pair_update";
inline const std::string kRotorWrapLabel = "trainer2/rotor/wrap";
inline const std::string kRotorVectorLabel = "trainer2/rotor/vectorized_update";

// ---- the rotor --------------------------------------------------------------------------------------

/// The coordinates (a, b) that flattened pair k rotates (ref::rotor_pair, callable in kernels).
KOKKOS_INLINE_FUNCTION void rotor_pair(int k, int& a, int& b) {
  const int layer = k / (kDim / 2), p = k % (kDim / 2);
  a = (2 * p + layer) % kDim;
  b = (a + 1) % kDim;
}

/// x = rotor_apply(x, θ) in place: layer after layer, as ref::rotor_apply.
template <class ThetaView>
KOKKOS_INLINE_FUNCTION void rotor_apply(float (&x)[kDim], const ThetaView& theta) {
  for (int k = 0; k < kSlots; ++k) {
    int a, b;
    rotor_pair(k, a, b);
    const float c = device_math::cos(theta(k)), s = device_math::sin(theta(k));
    const float xa = x[a], xb = x[b];
    x[a] = c * xa - s * xb;
    x[b] = s * xa + c * xb;
  }
}

/// θ wrapped to [−π, π), as ref::wrap_angle.
KOKKOS_INLINE_FUNCTION float wrap_angle(float theta) {
  const float two_pi = static_cast<float>(2 * ref::kPi);
  float wrapped = device_math::fmod(theta + kPi, two_pi);
  if (wrapped < 0) wrapped += two_pi;
  return wrapped - kPi;
}

/// θ_k + 0.01 η (−Δ) atan2(u_j, u_i) r, in the reference's order of operations.
KOKKOS_INLINE_FUNCTION float rotor_step(float theta_k, float lior_diff, float angle, float radius) {
  return theta_k + kRotorRate * (-lior_diff) * angle * radius;
}

/// θ(k) = rotor_step(θ(k), Δ, angle, r): one pair's update with angle and r computed by the host.
inline void rotor_pair_update(const Vec& theta, int k, const ConstCell& lior_diff, float angle,
                              float radius) {
  Kokkos::parallel_for(
      kRotorPairLabel, RangePolicy(0, 1),
      KOKKOS_LAMBDA(int64_t) { theta(k) = rotor_step(theta(k), lior_diff(), angle, radius); });
}

/// Every slot of θ wrapped to [−π, π).
inline void rotor_wrap(const Vec& theta) {
  Kokkos::parallel_for(
      kRotorWrapLabel, RangePolicy(0, kSlots), KOKKOS_LAMBDA(int64_t k) { theta(k) = wrap_angle(theta(k)); });
}

/// The baseline rotor update, as the original loop: for each learnt pair the host reads i, j,
/// u_i and u_j one at a time (4 host syncs per pair), computes the angle and radius, and
/// launches a one-element update; then every angle is wrapped. `pairs` holds (i, j) per pair.
inline void rotor_update_per_pair(const IndexVec& pairs, const ConstVec& u, const ConstCell& lior_diff,
                                  const Vec& theta, const HostIndexCell& index_cell,
                                  const HostCell& value_cell) {
  for (int k = 0; k < kAngles; ++k) {
    const int i = read_element(index_cell, pairs, 2 * k);
    const int j = read_element(index_cell, pairs, 2 * k + 1);
    const float u_i = read_element(value_cell, u, i);
    const float u_j = read_element(value_cell, u, j);
    const float radius = std::hypot(u_i, u_j);
    if (radius >= kMinRotorRadius) rotor_pair_update(theta, k, lior_diff, std::atan2(u_j, u_i), radius);
  }
  rotor_wrap(theta);
}

/// Slot k of θ after the update, from its value before: the pair's step where k is a learnt angle
/// whose r = hypot(u_i, u_j) >= 1e-6, then the wrap. The pair indices are compile-time arithmetic,
/// the gather is u(i), u(j) (`Values`: a managed View, or an unmanaged one where counting the
/// View's references would cost more than the update).
template <class Values>
KOKKOS_INLINE_FUNCTION float updated_rotor_slot(int k, const Values& u, float lior_diff, float theta_k) {
  if (k < kAngles) {
    int i, j;
    rotor_pair(k, i, j);
    const float radius = device_math::hypot(u(i), u(j));
    if (radius >= kMinRotorRadius) theta_k = rotor_step(theta_k, lior_diff, device_math::atan2(u(j), u(i)), radius);
  }
  return wrap_angle(theta_k);
}

/// The vectorized rotor update: one kernel, one thread per slot; no host reads.
inline void rotor_update_vectorized(const ConstVec& u, const ConstCell& lior_diff, const Vec& theta) {
  Kokkos::parallel_for(
      kRotorVectorLabel, RangePolicy(0, kSlots), KOKKOS_LAMBDA(int64_t slot) {
        const int k = static_cast<int>(slot);
        theta(k) = updated_rotor_slot(k, u, lior_diff(), theta(k));
      });
}

inline const std::string kMetricUpdateLabel = "trainer2/train_step/metric_update";

/// Δ = lior_nudged − lior_free (scalars(0) of each window); u = mean_b vbar_free; then
/// g ← clamp(g + η Δ u_r² / (Σ u_r² + 1e-8), 0.01, 100) with u_r = rotor_apply(u, θ) (θ before
/// its own update), as ref::metric_update. One thread: 8 values. (Here, not in train_step-kokkos.cpp,
/// so that a test runs it with Δ ≠ 0: in train_step Δ is exactly 0 by the original's construction.)
inline void metric_update(const ConstVec& free_scalars, const ConstVec& nudged_scalars, const ConstMat& free_vbar,
                          const ConstVec& theta, const Vec& g, const Cell& lior_diff, const Vec& u) {
  Kokkos::parallel_for(
      kMetricUpdateLabel, RangePolicy(0, 1), KOKKOS_LAMBDA(int64_t) {
        const float diff = nudged_scalars(0) - free_scalars(0);
        lior_diff() = diff;
        const int64_t B = free_vbar.extent(0);
        float rotated[kDim];
        for (int i = 0; i < kDim; ++i) {
          float sum = 0;
          for (int64_t b = 0; b < B; ++b) sum += free_vbar(b, i);
          u(i) = sum / static_cast<float>(B);
          rotated[i] = u(i);
        }
        rotor_apply(rotated, theta);
        float norm_sq = 0;
        for (int i = 0; i < kDim; ++i) norm_sq += rotated[i] * rotated[i];
        for (int i = 0; i < kDim; ++i) {
          const float updated = g(i) + kEta * diff * rotated[i] * rotated[i] / (norm_sq + 1e-8f);
          const float low = updated < 0.01f ? 0.01f : updated;  // std::min(std::max(...)), on any device
          g(i) = 100.f < low ? 100.f : low;
        }
      });
}

/// The (i, j) coordinates of each learnt pair, on the device (what the per-pair update reads back).
inline IndexVec rotor_pair_indices() {
  const auto coordinate = [](int64_t i) {
    int a, b;
    ref::rotor_pair(static_cast<int>(i / 2), a, b);
    return i % 2 == 0 ? a : b;
  };
  return filled_on_device<IndexVec>("rotor_pairs", coordinate, 2 * kAngles);  // short label: read back by deep_copy
}

/// The rotor update a variant's plan asks for: one kernel with vectorized_rotor, else the
/// original per-pair loop, whose pair table and host cells are made here (in setup()).
class RotorUpdate {
 public:
  RotorUpdate() = default;
  explicit RotorUpdate(bool vectorized) : vectorized_(vectorized) {
    if (vectorized_) return;
    pairs_ = rotor_pair_indices();
    index_cell_ = HostIndexCell("pair_index");
    value_cell_ = HostCell("u_value");
  }

  /// θ updated in place from u and Δ = lior_diff().
  void operator()(const ConstVec& u, const ConstCell& lior_diff, const Vec& theta) const {
    if (vectorized_) {
      rotor_update_vectorized(u, lior_diff, theta);
    } else {
      rotor_update_per_pair(pairs_, u, lior_diff, theta, index_cell_, value_cell_);
    }
  }

 private:
  bool vectorized_ = false;
  IndexVec pairs_;
  HostIndexCell index_cell_;
  HostCell value_cell_;
};

// ---- retrieval ---------------------------------------------------------------------------------------

/// sqrt(max(0, q) + eps), as the reference writes it.
KOKKOS_INLINE_FUNCTION float speed_from_quadratic_form(float quadratic_form) {
  return device_math::sqrt((quadratic_form > 0.f ? quadratic_form : 0.f) + kEps);
}

/// act(b, :) = Σ_k weights(b, k) state_row(k)[:], k ascending (the reference's order for every
/// state index j). The k loop is outside: each step is a contiguous vector update of act's row
/// (one j per thread on a GPU, SIMD lanes on a CPU).
template <class StateRow>
KOKKOS_INLINE_FUNCTION void mix_states(const Member& team, int64_t b, const Mat& weights, const Mat& act,
                                       const StateRow& state_row) {
  const int64_t K = weights.extent(1), d = act.extent(1);
  float* out = &act(b, 0);
  Kokkos::parallel_for(Kokkos::TeamVectorRange(team, d), [&](int64_t j) { out[j] = 0; });
  team.team_barrier();
  for (int64_t k = 0; k < K; ++k) {
    const float w = weights(b, k);
    const float* state = state_row(k);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, d), [&](int64_t j) { out[j] += w * state[j]; });
  }
}

/// The candidates as the materialized retrieval batch cand_coord [B,K,n], cand_state [B,K,d].
struct MaterializedCandidates {
  ConstCube coord, state;
  KOKKOS_INLINE_FUNCTION const float* coord_row(int64_t b, int64_t k) const { return &coord(b, k, 0); }
  KOKKOS_INLINE_FUNCTION const float* state_row(int64_t b, int64_t k) const { return &state(b, k, 0); }
};

/// The candidates concat_K(O[b], bank) read where they lie: token k < T is O[b, k] (its first n
/// components are its coordinates), candidate T + c is bank row c. Nothing is copied.
struct InPlaceCandidates {
  ConstCube O;
  ConstMat bank_coord, bank_state;
  KOKKOS_INLINE_FUNCTION const float* coord_row(int64_t b, int64_t k) const {
    const int64_t T = O.extent(1);
    return k < T ? &O(b, k, 0) : &bank_coord(k - T, 0);
  }
  KOKKOS_INLINE_FUNCTION const float* state_row(int64_t b, int64_t k) const {
    const int64_t T = O.extent(1);
    return k < T ? &O(b, k, 0) : &bank_state(k - T, 0);
  }
};

/// The whole retrieval step as one kernel, one team per batch row: logits (distances under g,
/// cost R·spd) with their maximum, exponentials with their sum, normalization, state mixing.
/// weights [B,K] holds the logits, then the exponentials, then the weights.
template <class Candidates>
void retrieval_fused(const Candidates& candidates, const ConstMat& q, const ConstVec& g, const ConstVec& R,
                     const Mat& weights, const Mat& act) {
  const int64_t B = act.extent(0);
  Kokkos::parallel_for(
      kFusedRetrievalLabel, TeamPolicy(B, Kokkos::AUTO), KOKKOS_LAMBDA(const Member& team) {
        const int64_t b = team.league_rank(), K = weights.extent(1);
        float query[kDim], metric[kDim];
        for (int i = 0; i < kDim; ++i) {
          query[i] = q(b, i);
          metric[i] = g(i);
        }
        const float curvature = R(b);
        float max_logit = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, K),
            [&](int64_t k, float& running_max) {
              const float* coord = candidates.coord_row(b, k);
              float quadratic_form = 0;
              for (int i = 0; i < kDim; ++i) {
                const float u = coord[i] - query[i];
                quadratic_form += metric[i] * u * u;
              }
              const float logit = -kBeta * (curvature * speed_from_quadratic_form(quadratic_form));
              weights(b, k) = logit;
              if (logit > running_max) running_max = logit;
            },
            Kokkos::Max<float>(max_logit));
        float total = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, K),
            [&](int64_t k, float& sum) {
              const float e = device_math::exp(weights(b, k) - max_logit);
              weights(b, k) = e;
              sum += e;
            },
            total);
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, K), [&](int64_t k) { weights(b, k) /= total; });
        team.team_barrier();
        mix_states(team, b, weights, act, [&](int64_t k) { return candidates.state_row(b, k); });
      });
}

/// out(b) = x(b, 0) ⊕ x(b, 1) ⊕ ... with ⊕ the Kokkos reducer's join (Max: the row maximum, Sum:
/// the row sum), one team per row.
template <class Reducer>
void reduce_rows(const std::string& label, const ConstMat& x, const Vec& out) {
  const int64_t K = x.extent(1);
  Kokkos::parallel_for(
      label, TeamPolicy(x.extent(0), Kokkos::AUTO), KOKKOS_LAMBDA(const Member& team) {
        const int64_t b = team.league_rank();
        float result = 0;
        const Reducer reducer(result);
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, K), [&](int64_t k, float& partial) { reducer.join(partial, x(b, k)); },
            reducer);
        Kokkos::single(Kokkos::PerTeam(team), [&]() { out(b) = result; });
      });
}

/// The retrieval step op by op, as the original PyTorch code: u = cand − q; (g u u).sum(−1);
/// clamp_min(0).add(eps).sqrt(); cost = R[:, None] spd; logits = −β cost; softmax as row max,
/// exp, row sum, divide; act = (w[..., None] cand_state).sum(1). Each op is one kernel writing a
/// freshly allocated View, as each tensor op allocates its result.
inline void retrieval_op_by_op(const ConstMat& q, const ConstCube& cand_coord, const ConstCube& cand_state,
                               const ConstVec& g, const ConstVec& R, const Mat& weights, const Mat& act) {
  const int64_t B = cand_coord.extent(0), K = cand_coord.extent(1);
  const RangePolicy rows(0, B * K);
  const auto u = uninitialized<Cube>(kDisplacementLabel, B, K, kDim);
  Kokkos::parallel_for(
      kDisplacementLabel, rows, KOKKOS_LAMBDA(int64_t bk) {
        const int64_t b = bk / K, k = bk % K;
        for (int i = 0; i < kDim; ++i) u(b, k, i) = cand_coord(b, k, i) - q(b, i);
      });
  const auto quadratic_form = uninitialized<Mat>(kQuadraticFormLabel, B, K);
  Kokkos::parallel_for(
      kQuadraticFormLabel, rows, KOKKOS_LAMBDA(int64_t bk) {
        const int64_t b = bk / K, k = bk % K;
        float sum = 0;
        for (int i = 0; i < kDim; ++i) sum += g(i) * u(b, k, i) * u(b, k, i);
        quadratic_form(b, k) = sum;
      });
  const auto spd = uninitialized<Mat>(kSpeedLabel, B, K);
  Kokkos::parallel_for(
      kSpeedLabel, rows, KOKKOS_LAMBDA(int64_t bk) {
        spd(bk / K, bk % K) = speed_from_quadratic_form(quadratic_form(bk / K, bk % K));
      });
  const auto cost = uninitialized<Mat>(kCostLabel, B, K);
  Kokkos::parallel_for(
      kCostLabel, rows,
      KOKKOS_LAMBDA(int64_t bk) { cost(bk / K, bk % K) = R(bk / K) * spd(bk / K, bk % K); });
  const auto logits = uninitialized<Mat>(kLogitsLabel, B, K);
  Kokkos::parallel_for(
      kLogitsLabel, rows,
      KOKKOS_LAMBDA(int64_t bk) { logits(bk / K, bk % K) = -kBeta * cost(bk / K, bk % K); });
  const auto row_max = uninitialized<Vec>(kRowMaxLabel, B);
  reduce_rows<Kokkos::Max<float>>(kRowMaxLabel, logits, row_max);
  const auto exps = uninitialized<Mat>(kExpLabel, B, K);
  Kokkos::parallel_for(
      kExpLabel, rows, KOKKOS_LAMBDA(int64_t bk) {
        exps(bk / K, bk % K) = device_math::exp(logits(bk / K, bk % K) - row_max(bk / K));
      });
  const auto row_sum = uninitialized<Vec>(kRowSumLabel, B);
  reduce_rows<Kokkos::Sum<float>>(kRowSumLabel, exps, row_sum);
  Kokkos::parallel_for(
      kNormalizeLabel, rows,
      KOKKOS_LAMBDA(int64_t bk) { weights(bk / K, bk % K) = exps(bk / K, bk % K) / row_sum(bk / K); });
  Kokkos::parallel_for(
      kMixLabel, TeamPolicy(B, Kokkos::AUTO), KOKKOS_LAMBDA(const Member& team) {
        const int64_t b = team.league_rank();
        mix_states(team, b, weights, act, [&](int64_t k) { return &cand_state(b, k, 0); });
      });
}

/// The retrieval on a materialized batch: one kernel with jit_fusion, else op by op.
inline void retrieval(bool fused, const ConstMat& q, const ConstCube& cand_coord, const ConstCube& cand_state,
                      const ConstVec& g, const ConstVec& R, const Mat& weights, const Mat& act) {
  if (fused) {
    retrieval_fused(MaterializedCandidates{cand_coord, cand_state}, q, g, R, weights, act);
  } else {
    retrieval_op_by_op(q, cand_coord, cand_state, g, R, weights, act);
  }
}

// ---- the LIoR speed -------------------------------------------------------------------------------
// v may be any rank-2 View of float (lior_step keeps the default layout of its memory space).

inline const std::string kLiorSpeedLabel = "trainer2/lior/speed";
inline const std::string kLiorScaleLabel = "trainer2/lior/dlior";
inline const std::string kLiorFusedLabel = "trainer2/lior/speed_dlior";

/// sqrt(max(0, Σ_i g_i v_i²) + eps) of row b, as ref::lior_step.
template <class Matrix>
KOKKOS_INLINE_FUNCTION float lior_speed(const Matrix& v, const ConstVec& g, int64_t b) {
  float quadratic_form = 0;
  for (int i = 0; i < kDim; ++i) quadratic_form += g(i) * v(b, i) * v(b, i);
  return speed_from_quadratic_form(quadratic_form);
}

template <class Matrix>
void lior_speeds(const Matrix& v, const ConstVec& g, const Vec& s) {
  Kokkos::parallel_for(
      kLiorSpeedLabel, RangePolicy(0, s.extent(0)), KOKKOS_LAMBDA(int64_t b) { s(b) = lior_speed(v, g, b); });
}

inline void lior_scale(const ConstVec& R, const ConstVec& s, const Vec& dlior) {
  Kokkos::parallel_for(
      kLiorScaleLabel, RangePolicy(0, s.extent(0)), KOKKOS_LAMBDA(int64_t b) { dlior(b) = R(b) * s(b); });
}

/// s and dlior from one evaluation of the quadratic form per row (lior_step_fused).
template <class Matrix>
void lior_speeds_and_scale(const Matrix& v, const ConstVec& g, const ConstVec& R, const Vec& s, const Vec& dlior) {
  Kokkos::parallel_for(
      kLiorFusedLabel, RangePolicy(0, s.extent(0)), KOKKOS_LAMBDA(int64_t b) {
        const float speed = lior_speed(v, g, b);
        s(b) = speed;
        dlior(b) = R(b) * speed;
      });
}

/// The LIoR step's s and dlior = R s: with fused_lior_spd one kernel; without it, as the
/// original, s into `s_first` for dlior, then s again into `s` for the metrics (3 kernels).
template <class Matrix>
void lior_step(bool fused, const Matrix& v, const ConstVec& g, const ConstVec& R, const Vec& s, const Vec& dlior,
               const Vec& s_first) {
  if (fused) {
    lior_speeds_and_scale(v, g, R, s, dlior);
  } else {
    lior_speeds(v, g, s_first);
    lior_scale(R, s_first, dlior);
    lior_speeds(v, g, s);
  }
}

}  // namespace pb::kokkos_backend::trainer2
