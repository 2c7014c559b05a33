#pragma once
// The trainer2 suite (Liorhybrid's training hot path, WORKLOADS.md "Suite trainer2") as plain
// loops: the rotor, the retrieval step, the field dynamics, run_window and the two-phase training
// step. Templated on the scalar: Scalar = double is the oracle, Scalar = float the serial baseline.
// Every function is the formula of WORKLOADS.md written out; nothing is hoisted or fused except
// where the comment says the math makes it the same thing.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "reference/trainer2/lior_step.hpp"

namespace pb::reference::trainer2 {

// ---- constants (WORKLOADS.md) --------------------------------------------------------------------
constexpr double kRetrievalBeta = 5.0;  // β
constexpr double kDt = 0.005;
constexpr double kMass = 1.0;
constexpr double kHbar = 0.1;
constexpr double kSpring = 0.01;        // k
constexpr int kRotorAngles = 6;         // rotor_k: learnt angles
constexpr int kPairsPerLayer = kCoordinateDim / 2;  // ppl = n/2
constexpr int kRotorLayers = (kRotorAngles + kPairsPerLayer - 1) / kPairsPerLayer;  // L = 2
constexpr int kRotorSlots = kRotorLayers * kPairsPerLayer;  // θ padded to 8
constexpr double kBetaNudge = 1e-3;
constexpr double kEtaUpdate = 1e-2;
constexpr double kEta = kEtaUpdate / kBetaNudge;  // η = 10
constexpr double kNudgeScale = 0.1;
constexpr int kPathColumns = kCoordinateDim + 3;  // mean_b v (n), mean_b R, mean_b dlior, |mean_b v|
constexpr double kPi = 3.14159265358979323846;

/// Sizes of one window.
struct WindowDims {
  int64_t batch, tokens, state_dim, bank_rows;  // B, T, d, C
  int64_t nx, ny, channels;                     // Nx, Ny and D*D*2 real components per site
  int64_t steps;                                // W
  int64_t candidates() const { return tokens + bank_rows; }  // K
  int64_t field_size() const { return nx * ny * channels; }
};

// ---- rotor -----------------------------------------------------------------------------------------

/// The coordinates (a, b) that flattened pair k = layer * ppl + p rotates.
inline void rotor_pair(int k, int& a, int& b) {
  const int layer = k / kPairsPerLayer, p = k % kPairsPerLayer;
  a = (2 * p + layer) % kCoordinateDim;
  b = (a + 1) % kCoordinateDim;
}

/// out = rotor_apply(x, θ): each layer in order, every pair of the layer at once (pairs of one
/// layer touch disjoint coordinates, so applying them one after another is the same thing).
template <typename Scalar>
void rotor_apply(const Scalar* x, const Scalar* theta, Scalar* out) {
  for (int i = 0; i < kCoordinateDim; ++i) out[i] = x[i];
  for (int k = 0; k < kRotorSlots; ++k) {
    int a, b;
    rotor_pair(k, a, b);
    const Scalar c = std::cos(theta[k]), s = std::sin(theta[k]);
    const Scalar xa = out[a], xb = out[b];
    out[a] = c * xa - s * xb;
    out[b] = s * xa + c * xb;
  }
}

// ---- retrieval (step 4) ----------------------------------------------------------------------------

/// act[b] = Σ_k softmax_k(−β R_b spd_bk) cand_state[b,k], spd_bk = sqrt(max(0, Σ_i g_i u_i²) + eps)
/// with u = cand_coord[b,k] − q[b]. Shapes: q [B,n], cand_coord [B,K,n], cand_state [B,K,d],
/// R [B]; writes act [B,d] and weights [B,K].
template <typename Scalar>
void retrieval(int64_t B, int64_t K, int64_t d, const Scalar* q, const Scalar* cand_coord,
               const Scalar* cand_state, const Scalar* g, const Scalar* R, Scalar* act,
               Scalar* weights) {
  const int n = kCoordinateDim;
  for (int64_t b = 0; b < B; ++b) {
    Scalar* w = weights + b * K;
    Scalar max_logit = -INFINITY;
    for (int64_t k = 0; k < K; ++k) {
      Scalar quadratic_form = 0;
      for (int i = 0; i < n; ++i) {
        const Scalar u = cand_coord[(b * K + k) * n + i] - q[b * n + i];
        quadratic_form += g[i] * u * u;
      }
      const Scalar spd = std::sqrt(std::max(Scalar(0), quadratic_form) + Scalar(kLiorEps));
      w[k] = -Scalar(kRetrievalBeta) * (R[b] * spd);
      max_logit = std::max(max_logit, w[k]);
    }
    Scalar total = 0;
    for (int64_t k = 0; k < K; ++k) total += (w[k] = std::exp(w[k] - max_logit));
    for (int64_t k = 0; k < K; ++k) w[k] /= total;
    for (int64_t j = 0; j < d; ++j) {
      Scalar mixed = 0;
      for (int64_t k = 0; k < K; ++k) mixed += w[k] * cand_state[(b * K + k) * d + j];
      act[b * d + j] = mixed;
    }
  }
}

// ---- field dynamics (step 9) -----------------------------------------------------------------------

/// Force(F) = (ħ²/2m) Lap(F) − k (F − F_eq); Lap the 5-point stencil over (x, y) with zero padding,
/// per real component. F, F_eq, force: [Nx, Ny, channels].
template <typename Scalar>
void field_force(const WindowDims& dims, const Scalar* F, const Scalar* F_eq, Scalar* force) {
  const Scalar diffusion = Scalar(kHbar * kHbar / (2 * kMass));
  const int64_t nx = dims.nx, ny = dims.ny, ch = dims.channels;
  auto at = [&](int64_t x, int64_t y, int64_t c) -> Scalar {
    return (x < 0 || x >= nx || y < 0 || y >= ny) ? Scalar(0) : F[(x * ny + y) * ch + c];
  };
  for (int64_t x = 0; x < nx; ++x)
    for (int64_t y = 0; y < ny; ++y)
      for (int64_t c = 0; c < ch; ++c) {
        const int64_t i = (x * ny + y) * ch + c;
        const Scalar laplacian =
            at(x + 1, y, c) + at(x - 1, y, c) + at(x, y + 1, c) + at(x, y - 1, c) - 4 * F[i];
        force[i] = diffusion * laplacian - Scalar(kSpring) * (F[i] - F_eq[i]);
      }
}

/// One Störmer–Verlet step: P += dt/2 Force(F); F += dt/m P; P += dt/2 Force(F).
template <typename Scalar>
void field_step(const WindowDims& dims, std::vector<Scalar>& F, std::vector<Scalar>& P,
                const std::vector<Scalar>& F_eq) {
  std::vector<Scalar> force(F.size());
  const Scalar half_dt = Scalar(kDt / 2), dt_over_m = Scalar(kDt / kMass);
  field_force(dims, F.data(), F_eq.data(), force.data());
  for (size_t i = 0; i < F.size(); ++i) P[i] += half_dt * force[i];
  for (size_t i = 0; i < F.size(); ++i) F[i] += dt_over_m * P[i];
  field_force(dims, F.data(), F_eq.data(), force.data());
  for (size_t i = 0; i < F.size(); ++i) P[i] += half_dt * force[i];
}

/// R = mean over every complex element of |F| (F stores (re, im) pairs).
template <typename Scalar>
Scalar mean_field_modulus(const std::vector<Scalar>& F) {
  Scalar total = 0;
  for (size_t i = 0; i < F.size(); i += 2) total += std::sqrt(F[i] * F[i] + F[i + 1] * F[i + 1]);
  return total / static_cast<Scalar>(F.size() / 2);
}

// ---- run_window --------------------------------------------------------------------------------------

template <typename Scalar>
struct WindowInputs {
  const Scalar* O;           // model output [B,T,d]
  const Scalar* bank_coord;  // [C,n]
  const Scalar* bank_state;  // [C,d]
  const Scalar* g;           // metric diagonal [n]
  const Scalar* theta;       // rotor angles [kRotorSlots]
  const Scalar* nudge;       // [B,n], or nullptr in the free phase
};

template <typename Scalar>
struct WindowResult {
  Scalar lior = 0, R = 0, spd = 0;  // accumulators / W
  std::vector<Scalar> act;          // [B,d], last step's
  std::vector<Scalar> vbar;         // [B,n], vel_acc / W
  std::vector<Scalar> path;         // [W, kPathColumns]
  std::vector<Scalar> q, q_state;   // [B,n], [B,d]: the retrieval query and its state (memory update)
};

/// The retrieval batch of one step: q = mean_T coords, q_state = mean_T O, and the candidates
/// concat_K(O[b], bank) for coordinates (first n components) and states.
template <typename Scalar>
void build_retrieval_batch(const WindowDims& dims, const WindowInputs<Scalar>& in, std::vector<Scalar>& q,
                           std::vector<Scalar>& q_state, std::vector<Scalar>& cand_coord,
                           std::vector<Scalar>& cand_state) {
  const int64_t B = dims.batch, T = dims.tokens, d = dims.state_dim, C = dims.bank_rows;
  const int64_t K = dims.candidates(), n = kCoordinateDim;
  q.assign(B * n, 0);
  q_state.assign(B * d, 0);
  cand_coord.assign(B * K * n, 0);
  cand_state.assign(B * K * d, 0);
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < d; ++j) {
        const Scalar value = in.O[(b * T + t) * d + j];
        q_state[b * d + j] += value;
        cand_state[(b * K + t) * d + j] = value;
        if (j < n) {
          q[b * n + j] += value;
          cand_coord[(b * K + t) * n + j] = value;
        }
      }
    for (int64_t j = 0; j < d; ++j) q_state[b * d + j] /= static_cast<Scalar>(T);
    for (int64_t j = 0; j < n; ++j) q[b * n + j] /= static_cast<Scalar>(T);
    for (int64_t c = 0; c < C; ++c) {
      for (int64_t j = 0; j < n; ++j) cand_coord[(b * K + T + c) * n + j] = in.bank_coord[c * n + j];
      for (int64_t j = 0; j < d; ++j) cand_state[(b * K + T + c) * d + j] = in.bank_state[c * d + j];
    }
  }
}

/// One run_window of W steps; F and P ([Nx,Ny,channels]) are advanced in place.
template <typename Scalar>
WindowResult<Scalar> run_window(const WindowDims& dims, const WindowInputs<Scalar>& in,
                                std::vector<Scalar>& F, std::vector<Scalar>& P,
                                const std::vector<Scalar>& F_eq) {
  if (dims.state_dim < kCoordinateDim) throw std::invalid_argument("trainer2: needs d >= n");
  const int64_t B = dims.batch, d = dims.state_dim, K = dims.candidates(), n = kCoordinateDim;
  WindowResult<Scalar> out;
  out.act.assign(B * d, 0);
  out.vbar.assign(B * n, 0);
  out.path.assign(dims.steps * kPathColumns, 0);
  std::vector<Scalar> cand_coord, cand_state, weights(B * K), R(B), v(B * n), q_rot(B * n),
      shifted(n), s(B), dlior(B);
  Scalar lior_acc = 0, R_acc = 0, spd_acc = 0;
  for (int64_t t = 0; t < dims.steps; ++t) {
    std::fill(R.begin(), R.end(), mean_field_modulus(F));                              // 1
    build_retrieval_batch(dims, in, out.q, out.q_state, cand_coord, cand_state);      // 2
    for (int64_t b = 0; b < B; ++b) {                                                 // 3
      for (int64_t i = 0; i < n; ++i) {
        v[b * n + i] = out.q[b * n + i];
        shifted[i] = out.q[b * n + i] + (in.nudge ? in.nudge[b * n + i] : Scalar(0));
      }
      rotor_apply(shifted.data(), in.theta, &q_rot[b * n]);
    }
    retrieval(B, K, d, q_rot.data(), cand_coord.data(), cand_state.data(), in.g, R.data(),  // 4
              out.act.data(), weights.data());
    const auto means = lior_step(v.data(), R.data(), in.g, B, kCoordinateDim, s.data(),   // 5
                                 dlior.data());
    lior_acc += means.mean_dlior;                                                       // 6
    R_acc += means.mean_R;
    spd_acc += means.mean_s;
    for (int64_t i = 0; i < B * n; ++i) out.vbar[i] += v[i];
    Scalar* row = &out.path[t * kPathColumns];                                          // 7
    Scalar norm_sq = 0;
    for (int64_t i = 0; i < n; ++i) {
      Scalar mean_v = 0;
      for (int64_t b = 0; b < B; ++b) mean_v += v[b * n + i];
      row[i] = mean_v / static_cast<Scalar>(B);
      norm_sq += row[i] * row[i];
    }
    row[n] = means.mean_R;
    row[n + 1] = means.mean_dlior;
    row[n + 2] = std::sqrt(norm_sq);
    // 8: the host reads lior_acc/t, R_acc/t, spd_acc/t for logging: no effect on the outputs.
    field_step(dims, F, P, F_eq);                                                       // 9
  }
  const Scalar steps = static_cast<Scalar>(dims.steps);
  out.lior = lior_acc / steps;
  out.R = R_acc / steps;
  out.spd = spd_acc / steps;
  for (Scalar& value : out.vbar) value /= steps;
  return out;
}

// ---- the manual update (training step 5-8) ---------------------------------------------------------

/// θ wrapped to [−π, π).
template <typename Scalar>
Scalar wrap_angle(Scalar theta) {
  const Scalar two_pi = Scalar(2 * kPi);
  Scalar wrapped = std::fmod(theta + Scalar(kPi), two_pi);
  if (wrapped < 0) wrapped += two_pi;
  return wrapped - Scalar(kPi);
}

/// θ_k += 0.01 η (−Δ) atan2(u_j, u_i) r for each learnt pair k with r = hypot(u_i, u_j) ≥ 1e-6,
/// then every angle wrapped to [−π, π).
template <typename Scalar>
void rotor_update(const Scalar* u, Scalar lior_diff, Scalar* theta) {
  for (int k = 0; k < kRotorAngles; ++k) {
    int i, j;
    rotor_pair(k, i, j);
    const Scalar r = std::hypot(u[i], u[j]);
    if (r >= Scalar(1e-6))
      theta[k] += Scalar(0.01 * kEta) * (-lior_diff) * std::atan2(u[j], u[i]) * r;
  }
  for (int k = 0; k < kRotorSlots; ++k) theta[k] = wrap_angle(theta[k]);
}

/// g ← clamp(g + η Δ u_r² / (Σ u_r² + 1e-8), 0.01, 100) with u_r = rotor_apply(u, θ).
template <typename Scalar>
void metric_update(const Scalar* u, const Scalar* theta, Scalar lior_diff, Scalar* g) {
  Scalar u_r[kCoordinateDim];
  rotor_apply(u, theta, u_r);
  Scalar norm_sq = 0;
  for (int i = 0; i < kCoordinateDim; ++i) norm_sq += u_r[i] * u_r[i];
  for (int i = 0; i < kCoordinateDim; ++i) {
    const Scalar updated = g[i] + Scalar(kEta) * lior_diff * u_r[i] * u_r[i] / (norm_sq + Scalar(1e-8));
    g[i] = std::min(std::max(updated, Scalar(0.01)), Scalar(100));
  }
}

/// The last min(C, B) rows of (q, q_state) written into the ring at `pointer`, which advances mod C.
template <typename Scalar>
void memory_update(const WindowDims& dims, const std::vector<Scalar>& q, const std::vector<Scalar>& q_state,
                   Scalar* bank_coord, Scalar* bank_state, int64_t& pointer) {
  const int64_t B = dims.batch, C = dims.bank_rows, d = dims.state_dim, n = kCoordinateDim;
  const int64_t count = std::min(C, B);
  for (int64_t r = 0; r < count; ++r) {
    const int64_t source = B - count + r, row = (pointer + r) % C;
    for (int64_t i = 0; i < n; ++i) bank_coord[row * n + i] = q[source * n + i];
    for (int64_t j = 0; j < d; ++j) bank_state[row * d + j] = q_state[source * d + j];
  }
  pointer = (pointer + count) % C;
}

// ---- the training step -------------------------------------------------------------------------------

template <typename Scalar>
struct TrainState {
  std::vector<Scalar> F, P, F_eq;                    // field [Nx,Ny,channels]
  std::vector<Scalar> bank_coord, bank_state, g, theta;
  int64_t bank_pointer = 0;
};

template <typename Scalar>
struct TrainStepResult {
  WindowResult<Scalar> free, nudged;
  std::vector<Scalar> free_F, free_P;  // the field after the free window (then restored)
};

/// The two-phase contrastive step: free window, nudge toward `target` [B,n], restore, nudged
/// window, then the manual update of g and θ and the memory update. `state` ends as the
/// trainer's state after the step (field and momentum from the nudged window).
template <typename Scalar>
TrainStepResult<Scalar> train_step(const WindowDims& dims, const Scalar* O, const Scalar* target,
                                   TrainState<Scalar>& state) {
  const int64_t B = dims.batch, n = kCoordinateDim;
  TrainStepResult<Scalar> out;
  const TrainState<Scalar> snapshot = state;                                             // 1
  WindowInputs<Scalar> in{O, state.bank_coord.data(), state.bank_state.data(), state.g.data(),
                          state.theta.data(), nullptr};
  out.free = run_window(dims, in, state.F, state.P, state.F_eq);
  out.free_F = state.F;
  out.free_P = state.P;
  std::vector<Scalar> nudge(B * n);                                                      // 2
  for (int64_t i = 0; i < B * n; ++i) nudge[i] = Scalar(kNudgeScale) * (target[i] - out.free.q[i]);
  state = snapshot;                                                                      // 3
  in.nudge = nudge.data();
  out.nudged = run_window(dims, in, state.F, state.P, state.F_eq);
  const Scalar lior_diff = out.nudged.lior - out.free.lior;                             // 4
  Scalar u[kCoordinateDim] = {};                                                         // 5
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t b = 0; b < B; ++b) u[i] += out.free.vbar[b * n + i];
    u[i] /= static_cast<Scalar>(B);
  }
  metric_update(u, state.theta.data(), lior_diff, state.g.data());                       // 6
  rotor_update(u, lior_diff, state.theta.data());                                        // 7
  memory_update(dims, out.free.q, out.free.q_state, state.bank_coord.data(),            // 8
                state.bank_state.data(), state.bank_pointer);
  return out;
}

}  // namespace pb::reference::trainer2
