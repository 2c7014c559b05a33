#pragma once
// geometry/lior_optimizer_step: Liorhybrid's LIoRManifoldOptimizer.step (training/lior_optimizer.py),
// written as the obviously right loops. Templated on the scalar: Scalar = double is the oracle;
// Scalar = float is timed as the serial baseline.
//
//   for each parameter tensor p_j (n_j values) with gradient g_j of the same shape:
//     c_j = the first d = 8 values of p_j flattened, zero-padded when n_j < 8
//     R_j = clamp(R(c_j), 0.1, 10)              (R: reference/geometry/resilience.hpp)
//     p_j <- p_j - lr kappa R_j^-2 g_j           lr = 1e-3, kappa = 1
//
// c_j is read before p_j is updated. The clamp repeats the one inside R (as the original does).

#include <cstdint>

#include "reference/geometry/resilience.hpp"

namespace pb::reference::geometry {

constexpr double kLearningRate = 1e-3;
constexpr double kKappa = 1.0;

/// c = the first d values of p (n values), zero-padded.
template <typename Scalar>
PB_HOST_DEVICE inline void leading_coordinates(const Scalar* p, int64_t n, Scalar* c) {
  for (int i = 0; i < kDim; ++i) c[i] = i < n ? p[i] : Scalar(0);
}

/// R_j of one tensor of n values at p.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar tensor_resilience(const ResilienceWeights<Scalar>& w, const Scalar* p, int64_t n) {
  Scalar c[kDim];
  leading_coordinates(p, n, c);
  return clamp_to(resilience(w, c), Scalar(kResilienceMin), Scalar(kResilienceMax));
}

/// lr kappa R^-2: what multiplies the gradient.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar step_scale(Scalar R) {
  return Scalar(kLearningRate * kKappa) / (R * R);
}

/// p <- p - scale g over n values.
template <typename Scalar>
PB_HOST_DEVICE inline void update_value(Scalar* p, const Scalar* g, int64_t i, Scalar scale) {
  p[i] -= scale * g[i];
}

/// The tensor holding flat position i when tensors lie one after the other from offsets[0] = 0
/// (offsets has tensors + 1 entries): bisection, for a multi-tensor pass over every value.
PB_HOST_DEVICE inline int segment_of(const int64_t* offsets, int tensors, int64_t i) {
  int low = 0, high = tensors;  // offsets[low] <= i < offsets[high]
  while (high - low > 1) {
    const int mid = (low + high) / 2;
    if (offsets[mid] <= i) {
      low = mid;
    } else {
      high = mid;
    }
  }
  return low;
}

/// One step over every tensor: params[j] and grads[j] hold sizes[j] values.
template <typename Scalar>
void lior_optimizer_step(const ResilienceWeights<Scalar>& w, Scalar* const* params, const Scalar* const* grads,
                         const int64_t* sizes, int tensors) {
  for (int j = 0; j < tensors; ++j) {
    const Scalar scale = step_scale(tensor_resilience(w, params[j], sizes[j]));
    for (int64_t i = 0; i < sizes[j]; ++i) update_value(params[j], grads[j], i, scale);
  }
}

}  // namespace pb::reference::geometry
