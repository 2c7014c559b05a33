#pragma once
// geometry/complex_metric: what every variant shares: the size table, the input and output names
// and the optimization each phase adds. Math: reference/geometry/complex_metric.hpp. Definition
// (catalog with the seed's claims, tolerances, declared work): suites/geometry/complex_metric.cpp.
//
// Conventions of the geometry suite (seed 001), followed by every geometry workload: the name
// "geometry/<workload>"; phase 0 is named "baseline" and is the code before the seed's change; the
// seed's own change is phase 1; phases after the seed's claim nothing and must stay exact; input
// streams are named "geometry/<workload>/<input>"; inputs and outputs are fp32 as in the original;
// a workload's names live in pb::suites::geometry::<workload> and its reference in
// pb::reference::geometry::<workload>, so that the suite's headers can be included together.

#include <cstdint>
#include <stdexcept>
#include <string>

#include "phasebench/workload.hpp"
#include "reference/geometry/complex_metric.hpp"

namespace pb::suites::geometry::complex_metric {

namespace ref = pb::reference::geometry::complex_metric;

inline const std::string kComplexMetric = "geometry/complex_metric";

// Inputs and outputs.
inline const std::string kGamma = "gamma";  // [d, S, S]
inline const std::string kPsi = "psi";      // [B, N, S]
inline const std::string kPhi = "phi";      // [B, N, d, d]  k1_wedge
inline const std::string kTheta = "theta";  // [B, N, d, d]  k2_tensor

// The optimization each phase adds, by the name variants ask `context.has(...)` for.
inline constexpr const char* kBaseline = "baseline";                        // d^2 contractions per output
inline constexpr const char* kBatchedContraction = "batched_contraction";  // G[m,n,S,S], one contraction (the seed)
inline constexpr const char* kSharedPairs = "shared_pairs";                // psi_i psi_j once, both outputs in one pass
inline constexpr const char* kEntryVectors = "entry_vectors";              // every entry as SIMD rows over the pairs

struct MetricShape {
  int64_t batch = 0, positions = 0;  // B, N
  int64_t items() const { return batch * positions; }
};

inline MetricShape metric_shape(SizeClass size) {
  switch (size.name()) {
    case SizeName::Small:
      return {2, 5};
    case SizeName::Default:
      return {16, 1024};
    case SizeName::Large:
      return {16, 8192};
    case SizeName::Scaled:  // a scale grows the positions (N, at least one); B stays 16
      return {16, scaling::count(1024, size.scale())};
    case SizeName::Random:  // B N items cross the SIMD rows; d and S are the math's constants
      return {random_shape::count(size, 0, 1, 6), random_shape::count(size, 1, 1, 40)};
  }
  throw std::invalid_argument("unknown complex_metric size");
}

}  // namespace pb::suites::geometry::complex_metric
