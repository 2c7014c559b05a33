#pragma once
// geometry/mamba_conjugate: what every variant shares: the size table, the input and output names
// and the optimization each phase adds. Math: reference/geometry/mamba_conjugate.hpp. Definition:
// suites/geometry/mamba_conjugate.cpp. Suite conventions: suites/geometry/complex_metric.hpp.

#include <cstdint>
#include <stdexcept>
#include <string>

#include "phasebench/workload.hpp"
#include "reference/geometry/mamba_conjugate.hpp"

namespace pb::suites::geometry::mamba_conjugate {

namespace ref = pb::reference::geometry::mamba_conjugate;

inline const std::string kMambaConjugate = "geometry/mamba_conjugate";

// Inputs r, i and outputs conj(r), conj(i), each [B, L, 8].
inline const std::string kStateReal = "r";
inline const std::string kStateImag = "i";
inline const std::string kConjReal = "r_conj";
inline const std::string kConjImag = "i_conj";

// The optimization each phase adds (phase 0 is named kBaseline, as in every geometry workload).
inline constexpr const char* kCloneAssign = "baseline";     // clone, then x[..., 1:] = -x[..., 1:]
inline constexpr const char* kInPlaceNeg = "inplace_neg";   // clone, then x[..., 1:].neg_() (the seed)
inline constexpr const char* kSinglePass = "single_pass";   // the result written in one pass, no clone
inline constexpr const char* kSignVectors = "sign_vectors"; // rows times constant signs, both results in one kernel

struct StateShape {
  int64_t batch = 0, length = 0;  // B, L
  int64_t values() const { return batch * length * ref::kStateComponents; }
};

inline StateShape state_shape(SizeClass size) {
  switch (size.name()) {
    case SizeName::Small:
      return {2, 9};
    case SizeName::Default:
      return {16, 4096};
    case SizeName::Large:
      return {64, 16384};
    case SizeName::Scaled:  // a scale grows the sequence (L, at least one step); B stays 16
      return {16, scaling::count(4096, size.scale())};
    case SizeName::Random:  // B L rows of 8 cross the SIMD blocks
      return {random_shape::count(size, 0, 1, 6), random_shape::count(size, 1, 1, 64)};
  }
  throw std::invalid_argument("unknown mamba_conjugate size");
}

}  // namespace pb::suites::geometry::mamba_conjugate
