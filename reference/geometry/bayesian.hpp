#pragma once
// geometry/bayesian: Liorhybrid's kernels/bayesian.py, bayesian_recursive_term(T, T, E, lambda,
// tau) (compute_evidence_weights, bayesian_posterior, the update), written as the obviously right
// loops. Templated on the scalar: double is the oracle, float is timed as the serial baseline.
//
//   F, E complex [Nx,Ny,D,D]; tau = 0.5, lambda = 0.3, eps = 1e-12
//   w    = exp(-|F - E|^2 / tau)                  (per complex value)
//   Z    = sum over every value of w |F|^2        (one real scalar)
//   post = w F / (Z + eps)   if Z > eps,   else F  (the branch is global: Z is one number)
//   Lambda = lambda (post - F)
//
// Complex values are (re, im) pairs of the real views [Nx,Ny,D,D,2]; |z|^2 = re^2 + im^2.

#include <cmath>
#include <cstdint>

#include "phasebench/host_device.hpp"  // the per-element math also runs in CUDA kernels
#include "reference/geometry/field.hpp"

namespace pb::reference::geometry {

constexpr double kTau = 0.5;
constexpr double kLambda = 0.3;
constexpr double kNormalizationEps = 1e-12;

template <typename Scalar>
PB_HOST_DEVICE inline Scalar squared_modulus(Scalar re, Scalar im) {
  return re * re + im * im;
}

/// The evidence weight of one complex value: exp(-|f - e|^2 / tau).
template <typename Scalar>
PB_HOST_DEVICE inline Scalar evidence_weight(const Scalar* f, const Scalar* e) {
  using std::exp;
  return exp(-squared_modulus(f[0] - e[0], f[1] - e[1]) / Scalar(kTau));
}

/// Whether the posterior is w F / (Z + eps) (else F itself).
template <typename Scalar>
PB_HOST_DEVICE inline bool normalizable(Scalar z) {
  return z > Scalar(kNormalizationEps);
}

/// One real component of the posterior and of the update, given the branch.
template <typename Scalar>
PB_HOST_DEVICE inline Scalar posterior_component(Scalar w, Scalar f, Scalar z, bool normalize) {
  return normalize ? w * f / (z + Scalar(kNormalizationEps)) : f;
}
template <typename Scalar>
PB_HOST_DEVICE inline Scalar update_component(Scalar posterior, Scalar f) {
  return Scalar(kLambda) * (posterior - f);
}

/// The whole update: f, e, posterior and update are real views [Nx,Ny,D,D,2]. Returns Z.
/// Z is accumulated in double for every Scalar: a serial float sum of the 4.2M positive terms of
/// the large size loses digits (once the sum is ~1e6 each new term of ~0.5 is rounded by up to 1/16
/// of itself), a defect of the summation, not the accuracy fp32 data allow (docs/geometry.md).
template <typename Scalar>
Scalar bayesian_update(const Scalar* f, const Scalar* e, const FieldShape& s, Scalar* posterior, Scalar* update) {
  const int64_t n = s.complex_count();
  double sum = 0;
  for (int64_t k = 0; k < n; ++k)
    sum += double(evidence_weight(f + 2 * k, e + 2 * k) * squared_modulus(f[2 * k], f[2 * k + 1]));
  const Scalar z = Scalar(sum);
  const bool normalize = normalizable(z);
  for (int64_t k = 0; k < n; ++k) {
    const Scalar w = evidence_weight(f + 2 * k, e + 2 * k);
    for (int64_t part = 2 * k; part < 2 * k + 2; ++part) {
      posterior[part] = posterior_component(w, f[part], z, normalize);
      update[part] = update_component(posterior[part], f[part]);
    }
  }
  return z;
}

}  // namespace pb::reference::geometry
