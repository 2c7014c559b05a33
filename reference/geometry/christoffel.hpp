#pragma once
// geometry/christoffel: Christoffel symbols of Liorhybrid's learned metric (models/manifold.py),
// by central finite differences, written as the obviously right loops. Templated on the scalar:
// Scalar = double is the oracle; Scalar = float is timed as the serial baseline.
//
//   R(x)  = the resilience network (reference/geometry/resilience.hpp)
//   H(x)  = reshape_{d x d}(Lin_{2d -> d^2}(gelu(Lin_{d -> 2d}(x))))
//   h     = 0.1 tanh(0.5 (H + H^T));   L = I + 0.1 N(0,1) (a parameter)
//   G(x)  = R(x)^2 (L L^T + h + 1e-4 I)
//   dG[rho] = (G(x + e e_rho) - G(x - e e_rho)) / (2e),   e = 1e-4
//   S[mu,nu,rho] = dG[mu][nu,rho] + dG[nu][mu,rho] - dG[rho][mu,nu]
//   Gamma[lam,mu,nu] = 1/2 sum_rho Ginv[lam,rho] S[mu,nu,rho]
//
// Input x [B,N,d]; output Gamma [B,N,d,d,d]. The per-point functions below are PB_HOST_DEVICE: the
// Kokkos and CUDA kernels call them, so the fp32 kernels follow the oracle's arithmetic.

#include <cmath>
#include <cstdint>

#include "reference/geometry/resilience.hpp"

namespace pb::reference::geometry {

constexpr int kHidden = 2 * kDim;             // width of the metric network's hidden layer
constexpr int kMetricSize = kDim * kDim;      // d^2 entries of G
constexpr int kGammaSize = kDim * kDim * kDim;  // d^3 entries of Gamma per point
constexpr double kStep = 1e-4;                // e
constexpr double kMetricRegularizer = 1e-4;   // the 1e-4 I
constexpr double kPerturbationScale = 0.1;    // the 0.1 of h

/// The metric network's parameters (pointers into the caller's storage).
template <typename Scalar>
struct MetricWeights {
  ResilienceWeights<Scalar> resilience;
  const Scalar* h1w;  // [2d, d]
  const Scalar* h1b;  // [2d]
  const Scalar* h2w;  // [d^2, 2d]
  const Scalar* h2b;  // [d^2]
  const Scalar* L;    // [d, d]
};

/// G(x) [d,d] row-major at one point x [d].
template <typename Scalar>
PB_HOST_DEVICE inline void metric(const MetricWeights<Scalar>& w, const Scalar* x, Scalar* G) {
  const Scalar R = resilience(w.resilience, x);
  Scalar hidden[kHidden], H[kMetricSize];
  linear(w.h1w, w.h1b, x, kHidden, kDim, hidden);
  for (int i = 0; i < kHidden; ++i) hidden[i] = gelu(hidden[i]);
  linear(w.h2w, w.h2b, hidden, kMetricSize, kHidden, H);
  for (int a = 0; a < kDim; ++a)
    for (int b = 0; b < kDim; ++b) {
      Scalar llt = 0;
      for (int k = 0; k < kDim; ++k) llt += w.L[a * kDim + k] * w.L[b * kDim + k];
      const Scalar h = Scalar(kPerturbationScale) * std::tanh(Scalar(0.5) * (H[a * kDim + b] + H[b * kDim + a]));
      G[a * kDim + b] = R * R * (llt + h + (a == b ? Scalar(kMetricRegularizer) : Scalar(0)));
    }
}

/// dG[rho][a,b] = (G(x + e e_rho) - G(x - e e_rho)) / (2e) at one point: 2d metric evaluations.
template <typename Scalar>
PB_HOST_DEVICE inline void metric_derivatives(const MetricWeights<Scalar>& w, const Scalar* x, Scalar* dG) {
  for (int rho = 0; rho < kDim; ++rho) {
    Scalar shifted[kDim], plus[kMetricSize], minus[kMetricSize];
    for (int i = 0; i < kDim; ++i) shifted[i] = x[i];
    shifted[rho] = x[rho] + Scalar(kStep);
    metric(w, shifted, plus);
    shifted[rho] = x[rho] - Scalar(kStep);
    metric(w, shifted, minus);
    for (int i = 0; i < kMetricSize; ++i) dG[rho * kMetricSize + i] = (plus[i] - minus[i]) / Scalar(2 * kStep);
  }
}

/// Solves A X = B in place for an [n,n] A and [n,m] B (Gaussian elimination with partial pivoting;
/// A is destroyed, B becomes X). With B = I it is the explicit inverse.
template <typename Scalar>
PB_HOST_DEVICE inline void solve_in_place(Scalar* A, Scalar* B, int n, int m) {
  for (int col = 0; col < n; ++col) {
    int pivot = col;
    for (int r = col + 1; r < n; ++r)
      if (std::fabs(A[r * n + col]) > std::fabs(A[pivot * n + col])) pivot = r;
    if (pivot != col) {
      for (int c = 0; c < n; ++c) { const Scalar t = A[col * n + c]; A[col * n + c] = A[pivot * n + c]; A[pivot * n + c] = t; }
      for (int c = 0; c < m; ++c) { const Scalar t = B[col * m + c]; B[col * m + c] = B[pivot * m + c]; B[pivot * m + c] = t; }
    }
    for (int r = col + 1; r < n; ++r) {
      const Scalar f = A[r * n + col] / A[col * n + col];
      for (int c = col; c < n; ++c) A[r * n + c] -= f * A[col * n + c];
      for (int c = 0; c < m; ++c) B[r * m + c] -= f * B[col * m + c];
    }
  }
  for (int row = n - 1; row >= 0; --row)
    for (int c = 0; c < m; ++c) {
      Scalar sum = B[row * m + c];
      for (int k = row + 1; k < n; ++k) sum -= A[row * n + k] * B[k * m + c];
      B[row * m + c] = sum / A[row * n + row];
    }
}

/// Ginv = G^-1 for one [d,d] G (G is kept).
template <typename Scalar>
PB_HOST_DEVICE inline void inverse(const Scalar* G, Scalar* Ginv) {
  Scalar A[kMetricSize];
  for (int i = 0; i < kMetricSize; ++i) {
    A[i] = G[i];
    Ginv[i] = (i / kDim == i % kDim) ? Scalar(1) : Scalar(0);
  }
  solve_in_place(A, Ginv, kDim, kDim);
}

/// S[mu,nu,rho] = dG[mu][nu,rho] + dG[nu][mu,rho] - dG[rho][mu,nu], flat index (mu d + nu) d + rho.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar first_kind(const Scalar* dG, int mu, int nu, int rho) {
  return dG[mu * kMetricSize + nu * kDim + rho] + dG[nu * kMetricSize + mu * kDim + rho] -
         dG[rho * kMetricSize + mu * kDim + nu];
}

/// Gamma [d,d,d] = 1/2 Ginv S at one point, from Ginv [d,d] and dG [d][d,d].
template <typename Scalar>
PB_HOST_DEVICE inline void contract_with_inverse(const Scalar* Ginv, const Scalar* dG, Scalar* gamma) {
  for (int lam = 0; lam < kDim; ++lam)
    for (int mu = 0; mu < kDim; ++mu)
      for (int nu = 0; nu < kDim; ++nu) {
        Scalar sum = 0;
        for (int rho = 0; rho < kDim; ++rho) sum += Ginv[lam * kDim + rho] * first_kind(dG, mu, nu, rho);
        gamma[(lam * kDim + mu) * kDim + nu] = Scalar(0.5) * sum;
      }
}

/// Gamma at one point x [d]: the derivatives, the explicit inverse, the four loops.
template <typename Scalar>
PB_HOST_DEVICE inline void christoffel_point(const MetricWeights<Scalar>& w, const Scalar* x, Scalar* gamma) {
  Scalar dG[kDim * kMetricSize], G[kMetricSize], Ginv[kMetricSize];
  metric_derivatives(w, x, dG);
  metric(w, x, G);
  inverse(G, Ginv);
  contract_with_inverse(Ginv, dG, gamma);
}

// ---- the pieces the device ladders (Kokkos, CUDA) split the work into ---------------------------

/// The 2d + 1 metric evaluations of a point, by slot: k = 0 at x, 1..d at x + e e_{k-1},
/// d+1..2d at x - e e_{k-1-d}.
constexpr int kEvaluations = 2 * kDim + 1;

/// The shift of slot k along coordinate `axis`.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar slot_shift(int k, int axis) {
  if (k == 0) return Scalar(0);
  if (k <= kDim) return (k - 1 == axis) ? Scalar(kStep) : Scalar(0);
  return (k - 1 - kDim == axis) ? -Scalar(kStep) : Scalar(0);
}

/// G at slot k of the point x (shift applied in registers: no clone of x).
template <typename Scalar>
PB_HOST_DEVICE inline void metric_at_slot(const MetricWeights<Scalar>& w, const Scalar* x, int k, Scalar* G) {
  Scalar shifted[kDim];
  for (int a = 0; a < kDim; ++a) shifted[a] = x[a] + slot_shift<Scalar>(k, a);
  metric(w, shifted, G);
}

/// dG [d][d,d] from a point's slots [2d + 1][d,d] (central differences).
template <typename Scalar>
PB_HOST_DEVICE inline void derivatives_from_slots(const Scalar* slots, Scalar* dG) {
  for (int rho = 0; rho < kDim; ++rho)
    for (int i = 0; i < kMetricSize; ++i)
      dG[rho * kMetricSize + i] =
          (slots[(1 + rho) * kMetricSize + i] - slots[(1 + kDim + rho) * kMetricSize + i]) / Scalar(2 * kStep);
}

/// One (lam, mu, nu, rho) term of the original's four loops: 1/2 Ginv[lam,rho] S[mu,nu,rho].
template <typename Scalar>
PB_HOST_DEVICE inline Scalar loop_term(const Scalar* Ginv, const Scalar* dG, int lam, int mu, int nu, int rho) {
  return Scalar(0.5) * Ginv[lam * kDim + rho] * first_kind(dG, mu, nu, rho);
}

/// Gamma at one point by solving G X = S^T (X [d, d^2]) instead of forming Ginv; Gamma = X / 2.
template <typename Scalar>
PB_HOST_DEVICE inline void contract_by_solve(const Scalar* G, const Scalar* dG, Scalar* gamma) {
  Scalar A[kMetricSize];
  for (int i = 0; i < kMetricSize; ++i) A[i] = G[i];
  for (int rho = 0; rho < kDim; ++rho)
    for (int mn = 0; mn < kMetricSize; ++mn) gamma[rho * kMetricSize + mn] = first_kind(dG, mn / kDim, mn % kDim, rho);
  solve_in_place(A, gamma, kDim, kMetricSize);
  for (int i = 0; i < kGammaSize; ++i) gamma[i] *= Scalar(0.5);
}

/// Gamma [points, d,d,d] for x [points, d].
template <typename Scalar>
void christoffel(const MetricWeights<Scalar>& w, const Scalar* x, int64_t points, Scalar* gamma) {
  for (int64_t p = 0; p < points; ++p) christoffel_point(w, x + p * kDim, gamma + p * kGammaSize);
}

}  // namespace pb::reference::geometry
