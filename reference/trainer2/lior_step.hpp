#pragma once
// trainer2/lior_step: the LIoR step of Liorhybrid's run_window (step 5 of trainer2.hpp), written
// as the obviously right loops. Templated on the scalar type: Scalar = double is the oracle every
// variant is checked against; Scalar = float is timed as the serial baseline.
//
//   for each row m < M (M = B*K velocities of n = 8 coordinates, eps = 1e-8):
//     s[m]     = sqrt(max(0, sum_i g[i] * v[m,i]^2) + eps)
//     dlior[m] = R[m] * s[m]
//   mean_dlior = mean_m dlior[m];  mean_R = mean_m R[m];  mean_s = mean_m s[m]
//
// Inputs v[M,n], R[M], g[n]; outputs s[M], dlior[M] and the three means (the original reads them
// on the host, for its progress log). Sizes, with B and K = T + C of the trainer2 sizes: small
// M = 3 * 16 = 48, default M = 16 * 2176 = 34,816, large M = 16 * 3072 = 49,152. The original
// computes s twice (inside lior_step and again for the metrics); the math is the same either way.

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "phasebench/host_device.hpp"  // the per-row speed also runs in CUDA kernels

namespace pb::reference::trainer2 {

constexpr int kCoordinateDim = 8;  // n
constexpr double kLiorEps = 1e-8;  // eps

// ---- per-element math shared with device code (PB_HOST_DEVICE) ------------------------------------
// Written once here and called by the CUDA kernel bodies too (optimized/trainer2/*-cuda.cuh), so
// the fp32 kernels follow the oracle's order of operations by construction.

/// std::max(a, b) and std::min(a, b) as the reference calls them, usable in kernels: the first
/// argument wins ties and NaNs (max_of(0, NaN) is 0).
template <typename Scalar>
PB_HOST_DEVICE inline Scalar max_of(Scalar a, Scalar b) {
  return (a < b) ? b : a;
}
template <typename Scalar>
PB_HOST_DEVICE inline Scalar min_of(Scalar a, Scalar b) {
  return (b < a) ? b : a;
}

/// sum_i g[i] x[i]^2 over the n coordinates of one row, in coordinate order.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar quadratic_form(const Scalar* g, const Scalar* x, int n = kCoordinateDim) {
  Scalar sum = 0;
  for (int i = 0; i < n; ++i) sum += g[i] * x[i] * x[i];
  return sum;
}

/// sqrt(max(0, form) + eps): the speed of the LIoR step (and of the retrieval's candidates).
template <typename Scalar>
PB_HOST_DEVICE inline Scalar clamped_speed(Scalar form) {
  return std::sqrt(max_of(Scalar(0), form) + Scalar(kLiorEps));
}

template <typename Scalar>
struct LiorStepMeans {
  Scalar mean_dlior = 0;
  Scalar mean_R = 0;
  Scalar mean_s = 0;
};

/// v: [rows, n], R: [rows], g: [n]; writes s and dlior ([rows] each) and returns the three means.
template <typename Scalar>
LiorStepMeans<Scalar> lior_step(const Scalar* v, const Scalar* R, const Scalar* g, int64_t rows,
                                int n, Scalar* s, Scalar* dlior) {
  Scalar sum_dlior = 0, sum_R = 0, sum_s = 0;
  for (int64_t m = 0; m < rows; ++m) {
    s[m] = clamped_speed(quadratic_form(g, v + m * n, n));
    dlior[m] = R[m] * s[m];
    sum_dlior += dlior[m];
    sum_R += R[m];
    sum_s += s[m];
  }
  const Scalar count = static_cast<Scalar>(rows);
  return {sum_dlior / count, sum_R / count, sum_s / count};
}

}  // namespace pb::reference::trainer2
