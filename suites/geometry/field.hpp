#pragma once
// geometry/hamiltonian and geometry/bayesian: what both field workloads share (the size table, the
// complex field's layout, the phase names) and what every variant of them uses to hand its outputs
// back. Math: reference/geometry/{hamiltonian,bayesian}.hpp; definitions: suites/geometry/*.cpp.
//
// A complex field [Nx,Ny,D,D] is stored as its real view [Nx,Ny,D,D,2] (torch.view_as_real): per
// lattice site, 2 D^2 interleaved real channels. The stencil acts on each of them alone.

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "phasebench/arrays.hpp"
#include "phasebench/variant.hpp"
#include "phasebench/workload.hpp"
#include "reference/geometry/field.hpp"

namespace pb::suites::geometry {

namespace ref = pb::reference::geometry;

/// The fewest complex values of a field: bayesian's fallback seeds put Z on its threshold with up to
/// 24 values set on purpose (one per bit of an fp32 mantissa).
inline constexpr int64_t kFewestFieldValues = 24;

/// Nx x Ny x D x D of the suite's definition (docs/geometry.md), shared by both workloads.
inline ref::FieldShape field_shape(SizeClass size) {
  switch (size.name()) {
    case SizeName::Small:
      return {7, 6, 2};
    case SizeName::Default:
      return {64, 64, 16};
    case SizeName::Large:
      return {128, 128, 16};
    case SizeName::Scaled: {
      // A scale grows the grid, each side by its square root (at least one point); D stays 16.
      ref::FieldShape scaled = field_shape(SizeClass::Default);
      const double side = std::sqrt(size.scale());
      scaled.nx = scaling::count(scaled.nx, side);
      scaled.ny = scaling::count(scaled.ny, side);
      return scaled;
    }
    case SizeName::Random: {
      // Any grid (the stencil is periodic); 2 D^2 channels cross the SIMD runs; at least
      // kFewestFieldValues complex values, which bayesian's fallback seeds set on purpose.
      const int64_t d = random_shape::count(size, 2, 1, 6), nx = random_shape::count(size, 0, 1, 24);
      const int64_t fewest_ny = (kFewestFieldValues + nx * d * d - 1) / (nx * d * d);
      return {nx, random_shape::count(size, 1, std::min<int64_t>(fewest_ny, 24), 24), d};
    }
  }
  throw std::invalid_argument("unknown geometry field size");
}

inline std::string field_shape_text(SizeClass size) {
  const ref::FieldShape s = field_shape(size);
  return std::to_string(s.nx) + "x" + std::to_string(s.ny) + "x" + std::to_string(s.d) + "x" + std::to_string(s.d) +
         " complex";
}

/// The shape of a complex field's real view, [Nx,Ny,D,D,2]; of a real field, [Nx,Ny,D,D].
inline std::vector<int64_t> complex_dims(const ref::FieldShape& s) { return {s.nx, s.ny, s.d, s.d, 2}; }
inline std::vector<int64_t> real_dims(const ref::FieldShape& s) { return {s.nx, s.ny, s.d, s.d}; }

/// The field shape of an input array [Nx,Ny,D,D,2]; throws when it is not one.
inline ref::FieldShape shape_of_complex(const HostArray& field) {
  if (field.shape.size() != 5 || field.shape[4] != 2 || field.shape[2] != field.shape[3])
    throw std::invalid_argument("a geometry field must be [Nx,Ny,D,D,2], got " + field.shape_string());
  return {field.shape[0], field.shape[1], field.shape[2]};
}

// ---- phases: the optimization each one adds (descriptions and claims: the workloads' catalogs) ----

inline constexpr const char* kBaseline = "baseline";
// hamiltonian
inline constexpr const char* kDepthwiseStencil = "depthwise_stencil";  // one stencil over all channels
// bayesian
// An extra rung, neither the original's code nor the seed's: Z read by the host to pick the branch.
// The original (and the baseline) decides Z > eps on the device, torch.where.
inline constexpr const char* kHostReadBranch = "host_read_branch";
// both: the seed's torch.compile (TorchScript in LibTorch, one fused kernel or post-op chain elsewhere)
inline constexpr const char* kCompiled = "compiled";
// hamiltonian, beyond the seed: each site's channels as one contiguous vectorized run
inline constexpr const char* kVectorizedStencil = "vectorized_stencil";
// hamiltonian, beyond the seed: vectorized_stencil's values with H written by non-temporal stores
inline constexpr const char* kStreamedStores = "streamed_stores";
// bayesian, beyond the seed: compiled's two passes as vectorized loops, the weights' exp included
inline constexpr const char* kVectorizedWeights = "vectorized_weights";

// ---- inputs and outputs ---------------------------------------------------------------------------

inline const std::string kField = "F";          // [Nx,Ny,D,D,2]
inline const std::string kPotential = "V";      // [Nx,Ny,D,D] real
inline const std::string kEvidence = "E";       // [Nx,Ny,D,D,2]
inline const std::string kHamiltonian = "H";    // [Nx,Ny,D,D,2]
inline const std::string kPosterior = "posterior";                  // B[F], [Nx,Ny,D,D,2]
inline const std::string kUpdate = "update";                        // Lambda, in the dump only
inline const std::string kFieldPlusUpdate = "field_plus_update";    // F + Lambda, checked
inline const std::string kNormalization = "Z";                      // in the dump only

/// What every bayesian variant's outputs() returns from its fp32 posterior and update Lambda: the
/// posterior, and Lambda as F + Lambda, formed here on the host in double (untimed) from the exact
/// inputs. Why F + Lambda is what is checked: suites/geometry/bayesian.cpp.
inline ArrayMap bayesian_outputs(const HostArray& field, const float* posterior, const float* update) {
  const int64_t count = field.numel();
  HostArray moved = HostArray::from_floats(field.shape, update, count);
  for (int64_t i = 0; i < count; ++i) moved.values[i] += field.values[i];
  moved.element_type = ElementType::Float64;
  return {{kPosterior, HostArray::from_floats(field.shape, posterior, count)}, {kFieldPlusUpdate, std::move(moved)}};
}

}  // namespace pb::suites::geometry
