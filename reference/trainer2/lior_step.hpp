#pragma once
// trainer2/lior_step: the LIoR step of Liorhybrid's run_window (WORKLOADS.md, trainer2 step 5),
// written as the obviously right loops. Templated on the scalar type: Scalar = double is the
// oracle every variant is checked against; Scalar = float is timed as the serial baseline.
//
//   for each row m < M (M = B*K velocities of n = 8 coordinates):
//     s[m]     = sqrt(max(0, sum_i g[i] * v[m,i]^2) + eps)
//     dlior[m] = R[m] * s[m]
//   mean_dlior = mean_m dlior[m];  mean_R = mean_m R[m];  mean_s = mean_m s[m]

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace pb::reference::trainer2 {

constexpr int kCoordinateDim = 8;  // n
constexpr double kLiorEps = 1e-8;  // eps

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
    Scalar quadratic_form = 0;
    for (int i = 0; i < n; ++i) quadratic_form += g[i] * v[m * n + i] * v[m * n + i];
    s[m] = std::sqrt(std::max(Scalar(0), quadratic_form) + Scalar(kLiorEps));
    dlior[m] = R[m] * s[m];
    sum_dlior += dlior[m];
    sum_R += R[m];
    sum_s += s[m];
  }
  const Scalar count = static_cast<Scalar>(rows);
  return {sum_dlior / count, sum_R / count, sum_s / count};
}

}  // namespace pb::reference::trainer2
