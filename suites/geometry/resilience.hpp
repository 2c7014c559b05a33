#pragma once
// geometry: the resilience network's inputs, shared by geometry/christoffel and
// geometry/lior_optimizer_step (each draws its own seeded weights): names, seeded generation as
// torch.nn.Linear initializes them, and loading them as one scalar type. Math:
// reference/geometry/resilience.hpp.

#include <cmath>
#include <string>
#include <vector>

#include "phasebench/arrays.hpp"
#include "phasebench/rng.hpp"
#include "reference/geometry/resilience.hpp"

namespace pb::suites::geometry {

namespace ref = pb::reference::geometry;

inline const std::string kResilienceW1 = "R.w1";  // [d, d]
inline const std::string kResilienceB1 = "R.b1";  // [d]
inline const std::string kResilienceW2 = "R.w2";  // [1, d]
inline const std::string kResilienceB2 = "R.b2";  // [1]

/// A Linear(in -> out) layer's weight [out, in] and bias [out], U(+-1/sqrt(in)) as PyTorch
/// initializes them, from streams named after the inputs (prefixed by the workload).
inline void add_linear_inputs(ArrayMap& inputs, uint64_t seed, const std::string& workload, const std::string& weight,
                              const std::string& bias, int64_t in, int64_t out) {
  const double bound = 1 / std::sqrt(double(in));
  inputs[weight] = uniform_array(seed, workload + "/" + weight, {out, in}, -bound, bound);
  inputs[bias] = uniform_array(seed, workload + "/" + bias, {out}, -bound, bound);
}

inline void add_resilience_inputs(ArrayMap& inputs, uint64_t seed, const std::string& workload) {
  add_linear_inputs(inputs, seed, workload, kResilienceW1, kResilienceB1, ref::kDim, ref::kDim);
  add_linear_inputs(inputs, seed, workload, kResilienceW2, kResilienceB2, ref::kDim, 1);
}

/// An input's values as Scalar.
template <typename Scalar>
std::vector<Scalar> values_as(const ArrayMap& inputs, const std::string& name) {
  const HostArray& array = require(inputs, name);
  return std::vector<Scalar>(array.values.begin(), array.values.end());
}

/// The resilience weights as Scalar, owning their storage; view() points into it.
template <typename Scalar>
struct ResilienceParameters {
  explicit ResilienceParameters(const ArrayMap& inputs)
      : w1(values_as<Scalar>(inputs, kResilienceW1)),
        b1(values_as<Scalar>(inputs, kResilienceB1)),
        w2(values_as<Scalar>(inputs, kResilienceW2)),
        b2(values_as<Scalar>(inputs, kResilienceB2)) {}
  ref::ResilienceWeights<Scalar> view() const { return {w1.data(), b1.data(), w2.data(), b2.data()}; }
  std::vector<Scalar> w1, b1, w2, b2;
};

}  // namespace pb::suites::geometry
