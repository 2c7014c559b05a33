#pragma once
// The field dynamics of the trainer2 suite in fp32: the constants in the reference's float
// rounding (reference/trainer2/trainer2.hpp) and the force at one component, shared by the Kokkos
// engine's field kernels and the host field kernel of vectorized_window (window_simd_bodies.hpp),
// which must compute the same floats in the same order.

#include "phasebench/host_device.hpp"
#include "reference/trainer2/trainer2.hpp"

namespace pb::trainer2_kernels {

namespace field_ref = pb::reference::trainer2;

constexpr float kHalfDt = static_cast<float>(field_ref::kDt / 2);
constexpr float kDtOverMass = static_cast<float>(field_ref::kDt / field_ref::kMass);
constexpr float kDiffusion = static_cast<float>(field_ref::kHbar * field_ref::kHbar / (2 * field_ref::kMass));
constexpr float kSpring = static_cast<float>(field_ref::kSpring);

/// Force(F) at one component: (ħ²/2m) Lap(F) − k (F − F_eq), as ref::field_force.
PB_HOST_DEVICE inline float force_value(float x_next, float x_prev, float y_next, float y_prev, float center,
                                        float equilibrium) {
  const float laplacian = x_next + x_prev + y_next + y_prev - 4 * center;
  return kDiffusion * laplacian - kSpring * (center - equilibrium);
}

}  // namespace pb::trainer2_kernels
