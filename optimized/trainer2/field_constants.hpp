#pragma once
// The field dynamics' constants of the trainer2 suite in the reference's float rounding
// (reference/trainer2/trainer2.hpp): shared by the Kokkos engine and the host field kernel of
// vectorized_window (window_simd-bodies.hpp), which must compute with the same floats.

#include "reference/trainer2/trainer2.hpp"

namespace pb::trainer2_kernels {

namespace field_ref = pb::reference::trainer2;

constexpr float kHalfDt = static_cast<float>(field_ref::kDt / 2);
constexpr float kDtOverMass = static_cast<float>(field_ref::kDt / field_ref::kMass);
constexpr float kDiffusion = static_cast<float>(field_ref::kHbar * field_ref::kHbar / (2 * field_ref::kMass));
constexpr float kSpring = static_cast<float>(field_ref::kSpring);

}  // namespace pb::trainer2_kernels
