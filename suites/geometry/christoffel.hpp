#pragma once
// geometry/christoffel: what every variant shares: sizes, input and output names, the phase names
// of the ladder, and the metric network's weights as one scalar type. Math:
// reference/geometry/christoffel.hpp. Definition (catalog, tolerances, work): christoffel.cpp.

#include <cstdint>
#include <string>
#include <vector>

#include "phasebench/workload.hpp"
#include "reference/geometry/christoffel.hpp"
#include "suites/geometry/resilience.hpp"

namespace pb::suites::geometry {

inline const std::string kChristoffel = "geometry/christoffel";
inline const std::string kPoints = "x";       // [B, N, d]
inline const std::string kMetricW1 = "H.w1";  // [2d, d]
inline const std::string kMetricB1 = "H.b1";  // [2d]
inline const std::string kMetricW2 = "H.w2";  // [d^2, 2d]
inline const std::string kMetricB2 = "H.b2";  // [d^2]
inline const std::string kFactor = "L";       // [d, d]
inline const std::string kGamma = "gamma";    // output [B, N, d, d, d]

// The optimization each phase adds (catalog with descriptions and claims: christoffel.cpp).
inline constexpr const char* kNestedLoops = "nested_loops";        // the original
inline constexpr const char* kContraction = "einsum_contraction";  // the seed: one contraction, no clones
inline constexpr const char* kBatchedMetric = "batched_metric";    // 2d + 1 evaluations in one call
inline constexpr const char* kSolve = "solve";                     // a solve instead of the inverse
inline constexpr const char* kVectorizedPoints = "vectorized_points";  // 16 points per SIMD block (host)
// Not optimizations: the seed's own vectorized symbols, wrong, declared known bugs (must be CAUGHT).
inline constexpr const char* kSeedRepeatedTerm = "seed_repeated_term";  // the seed's commit: term 3 = term 1
inline constexpr const char* kSeedFollowUpFix = "seed_followup_fix";    // the next commit's "fix"

struct ChristoffelSize {
  int64_t batch, points;  // B, N
  int64_t count() const { return batch * points; }
};

inline ChristoffelSize christoffel_size(SizeClass size) {
  switch (size.name()) {
    case SizeName::Small:
      return {2, 3};
    case SizeName::Default:
      return {8, 256};
    case SizeName::Large:
      return {16, 1024};
    case SizeName::Scaled:  // a scale grows the points per batch row (N, at least one); B stays 8
      return {8, scaling::count(256, size.scale())};
    case SizeName::Random:  // B N points cross the 16-point SIMD blocks
      return {random_shape::count(size, 0, 1, 6), random_shape::count(size, 1, 1, 40)};
  }
  return {2, 3};
}

/// The metric network's weights as Scalar, owning their storage; view() points into it.
template <typename Scalar>
struct MetricParameters {
  explicit MetricParameters(const ArrayMap& inputs)
      : resilience(inputs),
        h1w(values_as<Scalar>(inputs, kMetricW1)),
        h1b(values_as<Scalar>(inputs, kMetricB1)),
        h2w(values_as<Scalar>(inputs, kMetricW2)),
        h2b(values_as<Scalar>(inputs, kMetricB2)),
        L(values_as<Scalar>(inputs, kFactor)) {}
  ref::MetricWeights<Scalar> view() const {
    return {resilience.view(), h1w.data(), h1b.data(), h2w.data(), h2b.data(), L.data()};
  }
  ResilienceParameters<Scalar> resilience;
  std::vector<Scalar> h1w, h1b, h2w, h2b, L;
};

/// The output's shape for x of shape [B, N, d].
inline std::vector<int64_t> gamma_shape(const HostArray& x) {
  return {x.shape.at(0), x.shape.at(1), ref::kDim, ref::kDim, ref::kDim};
}

}  // namespace pb::suites::geometry
