#pragma once
// geometry: Liorhybrid's resilience network R(x), shared by geometry/christoffel (the metric's
// conformal factor) and geometry/lior_optimizer_step (the per-tensor step scale), and the exact
// GELU both networks use. Written once, per point, for the fp64 oracle, the fp32 serial baseline
// and the Kokkos and CUDA kernels alike (PB_HOST_DEVICE).
//
//   R(x) = clamp(softplus(w2 . gelu(W1 x + b1) + b2), 0.1, 10)      x in R^d, d = 8
//   gelu(v) = 0.5 v (1 + erf(v / sqrt 2))                            (exact, not tanh)
//   softplus(z) = log(1 + exp(z)), and z itself above z = 20          (PyTorch's threshold)
//
// Weights as torch.nn.Linear keeps them: W1 [d,d] (out, in) row-major, b1 [d], w2 [1,d], b2 [1].

#include <cmath>

#include "phasebench/host_device.hpp"

namespace pb::reference::geometry {

constexpr int kDim = 8;  // d: the coordinate dimension of both networks
constexpr double kResilienceMin = 0.1, kResilienceMax = 10.0;
constexpr double kSoftplusThreshold = 20.0;

template <typename Scalar>
PB_HOST_DEVICE inline Scalar gelu(Scalar v) {
  return Scalar(0.5) * v * (Scalar(1) + std::erf(v * Scalar(0.70710678118654752440)));
}

template <typename Scalar>
PB_HOST_DEVICE inline Scalar softplus(Scalar z) {
  return z > Scalar(kSoftplusThreshold) ? z : std::log1p(std::exp(z));
}

template <typename Scalar>
PB_HOST_DEVICE inline Scalar clamp_to(Scalar v, Scalar low, Scalar high) {
  return v < low ? low : (v > high ? high : v);
}

/// The resilience network's parameters (pointers into the caller's storage).
template <typename Scalar>
struct ResilienceWeights {
  const Scalar* w1;  // [d, d]
  const Scalar* b1;  // [d]
  const Scalar* w2;  // [1, d]
  const Scalar* b2;  // [1]
};

/// y = W x + b for a [rows, cols] row-major W (a torch Linear layer), in column order.
template <typename Scalar>
PB_HOST_DEVICE inline void linear(const Scalar* w, const Scalar* b, const Scalar* x, int rows, int cols, Scalar* y) {
  for (int r = 0; r < rows; ++r) {
    Scalar sum = b[r];
    for (int c = 0; c < cols; ++c) sum += w[r * cols + c] * x[c];
    y[r] = sum;
  }
}

/// R(x) for one point x [d].
template <typename Scalar>
PB_HOST_DEVICE inline Scalar resilience(const ResilienceWeights<Scalar>& w, const Scalar* x) {
  Scalar hidden[kDim];
  linear(w.w1, w.b1, x, kDim, kDim, hidden);
  for (int i = 0; i < kDim; ++i) hidden[i] = gelu(hidden[i]);
  Scalar z;
  linear(w.w2, w.b2, hidden, 1, kDim, &z);
  return clamp_to(softplus(z), Scalar(kResilienceMin), Scalar(kResilienceMax));
}

}  // namespace pb::reference::geometry
