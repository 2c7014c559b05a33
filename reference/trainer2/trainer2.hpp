#pragma once
// The trainer2 suite: the training hot path of Liorhybrid (`training/trainer2.py`), as plain
// loops. Templated on the scalar: Scalar = double is the oracle, Scalar = float the serial
// baseline. Nothing is hoisted or fused except where a comment says the math makes it the same
// thing. Suite page: docs/trainer2.md. Notation: B batch, T tokens, d state width, C memory bank
// rows, K = T + C candidates, n = 8 coordinates, W steps per window; mean_b is the mean over the
// batch; arrays are row-major fp32 in the variants.
//
// Constants: n = 8, eps = 1e-8, beta = 5 (retrieval), dt = 0.005, m = 1, hbar = 0.1, k = 0.01,
// rotor_k = 6 learnt angles, beta_nudge = 1e-3, eta_update = 1e-2 (so eta = 10), nudge_scale = 0.1.
//
//   size      B    T     d     C     field Nx x Ny x D x D (complex)   W
//   small     3    7     12    9     6 x 5 x 3 x 3                      5
//   default   16   128   256   2048  28 x 28 x 16 x 16                  64
//   large     16   1024  768   2048  28 x 28 x 16 x 16                  64
//
// Geometry. Metric diagonal g[n]. Rotor: L = 2 layers of n/2 = 4 pairs; layer l, pair p rotates
// coordinates a = (2p + l) mod n and b = (a + 1) mod n (layer 0: (0,1)(2,3)(4,5)(6,7); layer 1:
// (1,2)(3,4)(5,6)(7,0)); flattened pair k = 4 l + p; theta has 6 learnt angles padded with zeros
// to 8. rotor_apply(x, theta), layer by layer, every pair of a layer at once:
//   x_a' = cos(theta_k) x_a - sin(theta_k) x_b,   x_b' = sin(theta_k) x_a + cos(theta_k) x_b
//
// Inputs of a window: model output O[B,T,d] (fixed during the window); memory bank
// bank_coord[C,n], bank_state[C,d] (empty rows carry +1e4 on every coordinate, so they get zero
// weight); field F0 complex [Nx,Ny,D,D], momentum P0 = 0, F_eq = F0; optional nudge nu[B,n].
//
// run_window, for t = 0 .. W-1:
//   1  R = mean over every element of |F| (complex modulus), broadcast to [B]
//   2  coords = O[..., :n]; q = mean_T coords [B,n]; q_state = mean_T O [B,d];
//      cand_coord = concat_K(coords, bank_coord) [B,K,n]; cand_state = concat_K(O, bank_state) [B,K,d]
//      (the original rebuilds these every step)
//   3  v = q (before the nudge); q' = rotor_apply(q + nu, theta) (q alone without a nudge)
//   4  u_bk = cand_coord_bk - q'_b;  spd_bk = sqrt(max(0, sum_i g_i u_bki^2) + eps)
//      w_b = softmax_k(-beta R_b spd_bk);  act_b = sum_k w_bk cand_state_bk          [B,d]
//   5  s_b = sqrt(max(0, sum_i g_i v_bi^2) + eps);  dlior_b = R_b s_b   (lior_step.hpp)
//   6  lior_acc += mean_b dlior;  R_acc += mean_b R;  spd_acc += mean_b s;  vel_acc += v
//   7  path row t = [mean_b v (n values), mean_b R, mean_b dlior, |mean_b v|]
//   8  the host reads lior_acc/(t+1), R_acc/(t+1), spd_acc/(t+1) (logging: no effect on the
//      other outputs; phasebench makes the reads an output, progress [W,3], so they are checked)
//   9  Stormer-Verlet: P += dt/2 Force(F);  F += dt/m P;  P += dt/2 Force(F), with
//      Force(F) = (hbar^2 / 2m) Lap(F) - k (F - F_eq), Lap the 5-point Laplacian over (Nx, Ny)
//      with zero padding, per channel, real and imaginary parts independently
// Outputs: lior = lior_acc/W, R = R_acc/W, spd = spd_acc/W, act of the last step [B,d],
// vbar = vel_acc/W [B,n], path [W, n+3], progress [W, 3], the final F and P.
//
// train_step (the two-phase contrastive update):
//   1  snapshot F, P, bank, theta; run the free window (no nudge)
//   2  nu = nudge_scale (target - q), target[B,n] an input
//   3  restore the snapshot; run the nudged window with nu
//   4  delta = lior_nudged - lior_free;  eta = eta_update / beta_nudge
//   5  u = mean_b vbar_free [n];  u_r = rotor_apply(u, theta)
//   6  g = clamp(g + eta delta u_r^2 / (sum u_r^2 + 1e-8), 0.01, 100)
//   7  for each learnt pair k < 6 on (i, j) with r = hypot(u_i, u_j) >= 1e-6:
//        theta_k += 0.01 eta (-delta) atan2(u_j, u_i) r;   then every angle wrapped to [-pi, pi)
//   8  the last min(C, B) rows of the free window's (q, q_state) written into the bank ring at its
//      pointer, which advances modulo C
// Outputs: both windows' outputs, g, theta, the bank and its pointer. The nudge moves only the
// retrieval query, which lior does not depend on, so delta is exactly 0 (as in the original).
//
// Where the original and phasebench differ: theta starts uniform in [-0.5, 0.5] (the original's
// zeros make the rotor an identity that hides bugs); the original mutates rotor_apply's argument
// (not reproduced); its attempt to add the nudge to the field force fails on these shapes and is
// skipped (not added here either); the seed text writes the metric update as -delta v^2, the
// code as above (+delta and a normalized u_r^2), and the code is followed.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "phasebench/host_device.hpp"  // per-element math also runs in CUDA kernels
#include "reference/trainer2/lior_step.hpp"

namespace pb::reference::trainer2 {

// ---- constants ------------------------------------------------------------------------------------
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

// Functions marked PB_HOST_DEVICE are also what the CUDA kernel bodies run
// (optimized/trainer2/trainer2_engine-cuda.cuh): written once, in the oracle's order of operations.

/// The coordinates (a, b) that flattened pair k = layer * ppl + p rotates.
PB_HOST_DEVICE inline void rotor_pair(int k, int& a, int& b) {
  const int layer = k / kPairsPerLayer, p = k % kPairsPerLayer;
  a = (2 * p + layer) % kCoordinateDim;
  b = (a + 1) % kCoordinateDim;
}

/// out = rotor_apply(x, θ): each layer in order, every pair of the layer at once (pairs of one
/// layer touch disjoint coordinates, so applying them one after another is the same thing).
template <typename Scalar>
PB_HOST_DEVICE inline void rotor_apply(const Scalar* x, const Scalar* theta, Scalar* out) {
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

/// The logit −β R spd of one candidate, spd = sqrt(max(0, Σ_i g_i u_i²) + eps), u = coord − q
/// (coord and q: the n coordinates of the candidate and of the query).
template <typename Scalar>
PB_HOST_DEVICE inline Scalar retrieval_logit(const Scalar* coord, const Scalar* q, const Scalar* g, Scalar R) {
  Scalar form = 0;
  for (int i = 0; i < kCoordinateDim; ++i) {
    const Scalar u = coord[i] - q[i];
    form += g[i] * u * u;
  }
  return -Scalar(kRetrievalBeta) * (R * clamped_speed(form));
}

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
      w[k] = retrieval_logit(cand_coord + (b * K + k) * n, q + b * n, g, R[b]);
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

/// Force(F) of element i = (x * ny + y) * ch + c of [Nx, Ny, ch]: (ħ²/2m) Lap(F)_i − k (F_i − F_eq_i),
/// Lap the 5-point stencil over (x, y), a neighbour outside the grid 0; summed x+1, x−1, y+1, y−1,
/// then − 4 F_i.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar field_force_at(int64_t nx, int64_t ny, int64_t ch, int64_t x, int64_t y, int64_t i,
                                            const Scalar* F, const Scalar* F_eq) {
  const Scalar right = x + 1 < nx ? F[i + ny * ch] : Scalar(0);
  const Scalar left = x > 0 ? F[i - ny * ch] : Scalar(0);
  const Scalar up = y + 1 < ny ? F[i + ch] : Scalar(0);
  const Scalar down = y > 0 ? F[i - ch] : Scalar(0);
  const Scalar laplacian = right + left + up + down - 4 * F[i];
  return Scalar(kHbar * kHbar / (2 * kMass)) * laplacian - Scalar(kSpring) * (F[i] - F_eq[i]);
}

/// Force(F) = (ħ²/2m) Lap(F) − k (F − F_eq); Lap the 5-point stencil over (x, y) with zero padding,
/// per real component. F, F_eq, force: [Nx, Ny, channels].
template <typename Scalar>
void field_force(const WindowDims& dims, const Scalar* F, const Scalar* F_eq, Scalar* force) {
  const int64_t nx = dims.nx, ny = dims.ny, ch = dims.channels;
  for (int64_t x = 0; x < nx; ++x)
    for (int64_t y = 0; y < ny; ++y)
      for (int64_t c = 0; c < ch; ++c) {
        const int64_t i = (x * ny + y) * ch + c;
        force[i] = field_force_at(nx, ny, ch, x, y, i, F, F_eq);
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

/// |z| of the complex element stored as (re, im) at z[0], z[1].
template <typename Scalar>
PB_HOST_DEVICE inline Scalar complex_modulus(const Scalar* z) {
  return std::sqrt(z[0] * z[0] + z[1] * z[1]);
}

/// R = mean over every complex element of |F| (F stores (re, im) pairs).
template <typename Scalar>
Scalar mean_field_modulus(const std::vector<Scalar>& F) {
  Scalar total = 0;
  for (size_t i = 0; i < F.size(); i += 2) total += complex_modulus(&F[i]);
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
  std::vector<Scalar> progress;     // [W, 3]: what the host reads at step t (8), t = 0 .. W-1
  std::vector<Scalar> q, q_state;   // [B,n], [B,d]: the retrieval query and its state (memory update)
};

/// mean_b x[b, i] of coordinate i of x [batch, n], summed in b order.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar coordinate_mean(const Scalar* x, int64_t batch, int i) {
  Scalar sum = 0;
  for (int64_t b = 0; b < batch; ++b) sum += x[b * kCoordinateDim + i];
  return sum / static_cast<Scalar>(batch);
}

/// Path row (step 7): mean_b v (n values), mean_R, mean_dlior, |mean_b v|; v is [batch, n].
template <typename Scalar>
PB_HOST_DEVICE inline void path_row(const Scalar* v, int64_t batch, Scalar mean_R, Scalar mean_dlior, Scalar* row) {
  const int n = kCoordinateDim;
  Scalar norm_sq = 0;
  for (int i = 0; i < n; ++i) {
    row[i] = coordinate_mean(v, batch, i);
    norm_sq += row[i] * row[i];
  }
  row[n] = mean_R;
  row[n + 1] = mean_dlior;
  row[n + 2] = std::sqrt(norm_sq);
}

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
  out.progress.assign(dims.steps * 3, 0);
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
    path_row(v.data(), B, means.mean_R, means.mean_dlior, &out.path[t * kPathColumns]);  // 7
    const Scalar steps_so_far = static_cast<Scalar>(t + 1);                             // 8
    out.progress[t * 3 + 0] = lior_acc / steps_so_far;
    out.progress[t * 3 + 1] = R_acc / steps_so_far;
    out.progress[t * 3 + 2] = spd_acc / steps_so_far;
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
PB_HOST_DEVICE inline Scalar wrap_angle(Scalar theta) {
  const Scalar two_pi = Scalar(2 * kPi);
  Scalar wrapped = std::fmod(theta + Scalar(kPi), two_pi);
  if (wrapped < 0) wrapped += two_pi;
  return wrapped - Scalar(kPi);
}

/// One learnt pair's angle: θ + 0.01 η (−Δ) atan2(u_j, u_i) r if r = hypot(u_i, u_j) ≥ 1e-6, else θ.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar rotor_step(Scalar theta, Scalar u_i, Scalar u_j, Scalar lior_diff) {
  const Scalar r = std::hypot(u_i, u_j);
  if (r >= Scalar(1e-6)) theta += Scalar(0.01 * kEta) * (-lior_diff) * std::atan2(u_j, u_i) * r;
  return theta;
}

/// θ_k += 0.01 η (−Δ) atan2(u_j, u_i) r for each learnt pair k with r = hypot(u_i, u_j) ≥ 1e-6,
/// then every angle wrapped to [−π, π).
template <typename Scalar>
void rotor_update(const Scalar* u, Scalar lior_diff, Scalar* theta) {
  for (int k = 0; k < kRotorAngles; ++k) {
    int i, j;
    rotor_pair(k, i, j);
    theta[k] = rotor_step(theta[k], u[i], u[j], lior_diff);
  }
  for (int k = 0; k < kRotorSlots; ++k) theta[k] = wrap_angle(theta[k]);
}

/// g ← clamp(g + η Δ u_r² / (Σ u_r² + 1e-8), 0.01, 100) with u_r = rotor_apply(u, θ).
template <typename Scalar>
PB_HOST_DEVICE inline void metric_update(const Scalar* u, const Scalar* theta, Scalar lior_diff, Scalar* g) {
  Scalar u_r[kCoordinateDim];
  rotor_apply(u, theta, u_r);
  Scalar norm_sq = 0;
  for (int i = 0; i < kCoordinateDim; ++i) norm_sq += u_r[i] * u_r[i];
  for (int i = 0; i < kCoordinateDim; ++i) {
    const Scalar updated = g[i] + Scalar(kEta) * lior_diff * u_r[i] * u_r[i] / (norm_sq + Scalar(1e-8));
    g[i] = min_of(max_of(updated, Scalar(0.01)), Scalar(100));
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
  Scalar u[kCoordinateDim];                                                              // 5
  for (int i = 0; i < n; ++i) u[i] = coordinate_mean(out.free.vbar.data(), B, i);
  metric_update(u, state.theta.data(), lior_diff, state.g.data());                       // 6
  rotor_update(u, lior_diff, state.theta.data());                                        // 7
  memory_update(dims, out.free.q, out.free.q_state, state.bank_coord.data(),            // 8
                state.bank_state.data(), state.bank_pointer);
  return out;
}

}  // namespace pb::reference::trainer2
