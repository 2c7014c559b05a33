#pragma once
// geometry/christoffel on CUDA: the per-thread bodies of the kernels in christoffel-cuda.cu, one
// point (or one point and evaluation slot) per thread. They compile as plain C++ too, so
// tests/geometry_network_test.cpp runs them on the host over the whole index space and compares
// with reference/geometry/christoffel.hpp, whose per-point functions they call.

#include <cstdint>

#include "phasebench/host_device.hpp"
#include "reference/geometry/christoffel.hpp"

namespace pb::cuda_backend::christoffel {

namespace ref = pb::reference::geometry;
constexpr int d = ref::kDim;

/// Thread i of a metric launch over `slot_count` slots from `first_slot`: G of point i / count at
/// its slot, into metrics [points, 2d + 1, d^2]. With shift false x is a clone that already
/// carries the slot's shift.
PB_HOST_DEVICE inline void metric_body(int64_t i, const ref::MetricWeights<float>& w, const float* x, int first_slot,
                                       int slot_count, bool shift, float* metrics) {
  const int64_t p = i / slot_count;
  const int k = first_slot + static_cast<int>(i % slot_count);
  ref::metric_at_slot(w, x + p * d, shift ? k : 0, metrics + (p * ref::kEvaluations + k) * ref::kMetricSize);
}

/// The original's clone + add_: column `axis` of point p shifted by `step`.
PB_HOST_DEVICE inline void shift_body(int64_t p, float* x, int axis, float step) { x[p * d + axis] += step; }

PB_HOST_DEVICE inline void derivative_body(int64_t p, const float* metrics, float* D) {
  ref::derivatives_from_slots(metrics + p * ref::kEvaluations * ref::kMetricSize, D + p * d * ref::kMetricSize);
}

PB_HOST_DEVICE inline void inverse_body(int64_t p, const float* metrics, float* Ginv) {
  ref::inverse(metrics + p * ref::kEvaluations * ref::kMetricSize, Ginv + p * ref::kMetricSize);
}

/// One launch of the original's four loops: the (lam, mu, nu, rho) term added at point p.
PB_HOST_DEVICE inline void loop_body(int64_t p, const float* Ginv, const float* D, int lam, int mu, int nu, int rho,
                                     float* gamma) {
  gamma[p * ref::kGammaSize + (lam * d + mu) * d + nu] +=
      ref::loop_term(Ginv + p * ref::kMetricSize, D + p * d * ref::kMetricSize, lam, mu, nu, rho);
}

PB_HOST_DEVICE inline void contract_body(int64_t p, const float* Ginv, const float* D, float* gamma) {
  ref::contract_with_inverse(Ginv + p * ref::kMetricSize, D + p * d * ref::kMetricSize, gamma + p * ref::kGammaSize);
}

PB_HOST_DEVICE inline void solve_body(int64_t p, const float* metrics, const float* D, float* gamma) {
  ref::contract_by_solve(metrics + p * ref::kEvaluations * ref::kMetricSize, D + p * d * ref::kMetricSize,
                         gamma + p * ref::kGammaSize);
}

}  // namespace pb::cuda_backend::christoffel
