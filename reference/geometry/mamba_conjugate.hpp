#pragma once
// geometry/mamba_conjugate: the conjugate of a geometric-Mamba state (Liorhybrid
// inference/geometric_mamba.py, conjugate()), written as the obviously right loop. Templated on
// the scalar: Scalar = double is the oracle; Scalar = float is timed as the serial baseline.
// Definition: suites/geometry/mamba_conjugate.cpp; suite page: docs/geometry.md.
//
//   state (r, i), each [B, L, 8] (an octonion-like 8-vector per position)
//   conj(x)[b, l, 0] = x[b, l, 0];   conj(x)[b, l, c] = -x[b, l, c] for c = 1..7
//   outputs conj(r) and conj(i)

#include <cstdint>

#include "phasebench/host_device.hpp"

namespace pb::reference::geometry::mamba_conjugate {

constexpr int kStateComponents = 8;  // the last axis; component 0 is kept, 1..7 negated

/// Element `index` of conj(x), x row-major [..., 8].
template <typename Scalar>
PB_HOST_DEVICE inline Scalar conjugate_element(const Scalar* x, int64_t index) {
  return index % kStateComponents == 0 ? x[index] : -x[index];
}

/// conj of `count` values (a whole [B, L, 8] array) into `out`.
template <typename Scalar>
void conjugate(const Scalar* x, int64_t count, Scalar* out) {
  for (int64_t index = 0; index < count; ++index) out[index] = conjugate_element(x, index);
}

}  // namespace pb::reference::geometry::mamba_conjugate
