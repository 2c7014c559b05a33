#pragma once
// geometry/complex_metric: Liorhybrid's k1_wedge and k2_tensor (models/complex_metric.py), written
// as the obviously right loops. Templated on the scalar: Scalar = double is the oracle every
// variant is checked against; Scalar = float is timed as the serial baseline. Definition:
// suites/geometry/complex_metric.cpp; suite page: docs/geometry.md.
//
//   gamma [d, S, S], psi [B, N, S] (real), d = 8 coordinates, S = 4 spinor components
//   A_mn = 1/2 (gamma_m gamma_n - gamma_n gamma_m)     (commutator: antisymmetric in m, n)
//   T_mn = 1/2 (gamma_m gamma_n + gamma_n gamma_m)     (anticommutator: symmetric in m, n)
//   Phi  [b, k, m, n] = psi[b,k]^T A_mn psi[b,k]         (k1_wedge)
//   Theta[b, k, m, n] = psi[b,k]^T T_mn psi[b,k]         (k2_tensor)
//
//   for m < d, n < d:
//     A = 1/2 (gamma[m] gamma[n] - gamma[n] gamma[m]);  T = 1/2 (gamma[m] gamma[n] + gamma[n] gamma[m])
//     for each item (b, k):
//       Phi[b,k,m,n]   = sum_i sum_j psi[b,k,i] A[i,j] psi[b,k,j]
//       Theta[b,k,m,n] = sum_i sum_j psi[b,k,i] T[i,j] psi[b,k,j]
//
// The per-entry functions are PB_HOST_DEVICE: the Kokkos and CUDA kernel bodies
// (optimized/geometry/complex_metric_ladder.hpp) call these very functions.

#include <cstdint>

#include "phasebench/host_device.hpp"

namespace pb::reference::geometry::complex_metric {

constexpr int kSpinor = 4;                            // S
constexpr int kCoordinates = 8;                       // d
constexpr int kPairs = kSpinor * (kSpinor + 1) / 2;   // S (S + 1) / 2 products psi_i psi_j, i <= j
constexpr double kWedgeSign = -1;                     // A: gamma_m gamma_n - gamma_n gamma_m
constexpr double kTensorSign = +1;                    // T: gamma_m gamma_n + gamma_n gamma_m

/// Entry (i, j) of 1/2 (gamma_m gamma_n + sign gamma_n gamma_m); gamma is [d, S, S] row-major.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar pair_matrix_entry(const Scalar* gamma, int m, int n, int i, int j, Scalar sign) {
  constexpr int S = kSpinor;
  Scalar forward = 0, backward = 0;
  for (int k = 0; k < S; ++k) {
    forward += gamma[(m * S + i) * S + k] * gamma[(n * S + k) * S + j];
    backward += gamma[(n * S + i) * S + k] * gamma[(m * S + k) * S + j];
  }
  return Scalar(0.5) * (forward + sign * backward);
}

/// psi^T matrix psi for one item: psi [S], matrix [S, S].
template <typename Scalar>
PB_HOST_DEVICE inline Scalar quadratic_form(const Scalar* psi, const Scalar* matrix) {
  Scalar sum = 0;
  for (int i = 0; i < kSpinor; ++i)
    for (int j = 0; j < kSpinor; ++j) sum += psi[i] * matrix[i * kSpinor + j] * psi[j];
  return sum;
}

/// Phi and Theta [items, d, d] of `items` spinors psi [items, S].
template <typename Scalar>
void evaluate(const Scalar* gamma, const Scalar* psi, int64_t items, Scalar* phi, Scalar* theta) {
  constexpr int S = kSpinor, d = kCoordinates;
  for (int m = 0; m < d; ++m)
    for (int n = 0; n < d; ++n) {
      Scalar wedge[S * S], tensor[S * S];
      for (int i = 0; i < S; ++i)
        for (int j = 0; j < S; ++j) {
          wedge[i * S + j] = pair_matrix_entry(gamma, m, n, i, j, Scalar(kWedgeSign));
          tensor[i * S + j] = pair_matrix_entry(gamma, m, n, i, j, Scalar(kTensorSign));
        }
      for (int64_t item = 0; item < items; ++item) {
        phi[(item * d + m) * d + n] = quadratic_form(psi + item * S, wedge);
        theta[(item * d + m) * d + n] = quadratic_form(psi + item * S, tensor);
      }
    }
}

}  // namespace pb::reference::geometry::complex_metric
