#pragma once
// energy_flow/aggregate: what every variant shares: the lattice of each size, the input and output
// names, the phase names, and the flows read from the inputs. Math:
// reference/energy_flow/aggregate.hpp. Definition (inputs, catalog, tolerances, work):
// aggregate.cpp.

#include <cstdint>
#include <stdexcept>
#include <string>

#include "phasebench/workload.hpp"
#include "reference/energy_flow/aggregate.hpp"

namespace pb::suites::energy_flow {

namespace ref = pb::reference::energy_flow;

inline const std::string kWorkload = "energy_flow/aggregate";
// Inputs, one entry per flow.
inline const std::string kBatch = "flow.batch";          // int64 [F]
inline const std::string kPosition = "flow.position";    // float32 [F, 3]: normalised x, y, z
inline const std::string kEnergy = "flow.energy";        // float32 [F]
inline const std::string kSteps = "flow.steps";          // int64 [F]
inline const std::string kActive = "flow.active";        // int64 [F], 0 or 1
inline const std::string kProjected = "flow.projected";  // int64 [F], 0 or 1
// Output.
inline const std::string kAggregated = "aggregated_energy";  // float32 [B, H * W]

// The optimization each phase adds (catalog with descriptions and claims: aggregate.cpp).
inline constexpr const char* kBaseline = "baseline";                 // per-flow loop, hash map, per-group softmax
inline constexpr const char* kMaskCollection = "mask_collection";    // completed flows and keys by masks
inline constexpr const char* kSegmentSoftmax = "segment_softmax";    // one segment softmax, one index_add
inline constexpr const char* kNoCompaction = "no_compaction";        // beyond the seed: no nonzero, a spare cell
// Approximate: the original's default since a commit after the seed, softmax weights in bf16.
inline constexpr const char* kBf16Weights = "bf16_weights";
// Beyond the seed (Kokkos): each thread owns a block of cells; the flows partitioned by owner.
inline constexpr const char* kOwnedCells = "owned_cells";
// Beyond the seed (Kokkos, host cores): 16 flows per SIMD step, each thread its own copy of the cells.
inline constexpr const char* kVectorizedFlows = "vectorized_flows";
// Not an optimization: the original's bug, declared as such (aggregate.cpp's KnownBugRegistration), must be CAUGHT.
inline constexpr const char* kLegacyXyGrouping = "legacy_xy_grouping";

inline ref::Lattice lattice(SizeClass size) {
  switch (size.name()) {  // W, H, D, B, F
    case SizeName::Small:
      return {5, 4, 3, 2, 37};
    case SizeName::Default:
      return {28, 28, 40, 16, 50'000};
    case SizeName::Large:
      return {100, 100, 50, 32, 1'000'000};
    case SizeName::Scaled: {
      // A scale grows the flows (F, at least one) on the default's lattice. A count that is a named
      // size's own F is moved up by one, so that the inputs still say their lattice (lattice_of).
      ref::Lattice scaled = lattice(SizeClass::Default);
      scaled.flows = scaling::count(scaled.flows, size.scale());
      for (const SizeClass named : {SizeClass::Small, SizeClass::Large})
        if (scaled.flows == lattice(named).flows) ++scaled.flows;
      return scaled;
    }
  }
  throw std::invalid_argument("unknown energy_flow size");
}

/// The lattice whose flow count the inputs have: every named size has its own F, and a scale's is
/// the default lattice with the inputs' F.
inline ref::Lattice lattice_of(const ArrayMap& inputs) {
  const int64_t flows = require(inputs, kEnergy).numel();
  for (SizeClass size : all_sizes())
    if (lattice(size).flows == flows) return lattice(size);
  if (flows < 1) throw std::invalid_argument(kEnergy + " has no flows, which is no energy_flow size");
  ref::Lattice scaled = lattice(SizeClass::Default);
  scaled.flows = flows;
  return scaled;
}

/// The flows of the inputs, as Scalar.
template <typename Scalar>
ref::Flows<Scalar> load_flows(const ArrayMap& inputs) {
  const HostArray& position = require(inputs, kPosition);
  ref::Flows<Scalar> flows;
  const auto integers = [&](const std::string& name) {
    const HostArray& array = require(inputs, name);
    return std::vector<int64_t>(array.values.begin(), array.values.end());
  };
  const auto flags = [&](const std::string& name) {
    const HostArray& array = require(inputs, name);
    return std::vector<uint8_t>(array.values.begin(), array.values.end());
  };
  flows.batch = integers(kBatch);
  flows.steps = integers(kSteps);
  flows.active = flags(kActive);
  flows.projected = flags(kProjected);
  const HostArray& energy = require(inputs, kEnergy);
  flows.energy.assign(energy.values.begin(), energy.values.end());
  for (int64_t f = 0; f < energy.numel(); ++f) {
    flows.x.push_back(static_cast<Scalar>(position.values[3 * f]));
    flows.y.push_back(static_cast<Scalar>(position.values[3 * f + 1]));
    flows.z.push_back(static_cast<Scalar>(position.values[3 * f + 2]));
  }
  return flows;
}

/// The output array [B, H * W] from `values` (cells() of them).
inline HostArray aggregated_output(const ref::Lattice& lattice, const float* values) {
  return HostArray::from_floats({lattice.batch, lattice.plane()}, values, lattice.cells());
}

}  // namespace pb::suites::energy_flow
