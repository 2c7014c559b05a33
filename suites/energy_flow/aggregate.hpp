#pragma once
// energy_flow/aggregate: what every variant shares: the lattice of each size, the input and output
// names, the phase names, and the flows read from the inputs. Math:
// reference/energy_flow/aggregate.hpp. Definition (inputs, catalog, tolerances, work):
// aggregate.cpp.

#include <algorithm>
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
// The lattice the flows land on, which the flows alone do not say.
inline const std::string kLatticeDims = "lattice";  // int64 [4]: W, H, D, B
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

inline constexpr double kCoveredShare = 0.8;       // of the B H W cells, each given one completed flow
inline constexpr int64_t kNotCompletedEvery = 8;   // one flow in 8 is not completed
inline constexpr int64_t kFewestNotCompleted = 3;  // one of each kind of flow that is not completed

/// The fewest flows with which the placement (aggregate.cpp) covers its share of `cells` and
/// keeps the three flows it moves: completed - 3 >= covered.
inline int64_t fewest_flows(int64_t cells) {
  const auto covered = static_cast<int64_t>(kCoveredShare * static_cast<double>(cells));
  int64_t flows = 1;
  while (flows - std::max(kFewestNotCompleted, flows / kNotCompletedEvery) - 3 < std::max<int64_t>(covered, 1)) ++flows;
  return flows;
}

inline ref::Lattice lattice(SizeClass size) {
  switch (size.name()) {  // W, H, D, B, F
    case SizeName::Small:
      return {5, 4, 3, 2, 37};
    case SizeName::Default:
      return {28, 28, 40, 16, 50'000};
    case SizeName::Large:
      return {100, 100, 50, 32, 1'000'000};
    case SizeName::Scaled: {
      // A scale grows the flows (F, at least one) on the default's lattice.
      ref::Lattice scaled = lattice(SizeClass::Default);
      scaled.flows = scaling::count(scaled.flows, size.scale());
      return scaled;
    }
    case SizeName::Random: {
      // W, H >= 2: a cell's index divides by W - 1 and H - 1. B >= 2: legacy_xy_grouping's bug
      // shows only across batch elements. F from the fewest the placement needs to twice that.
      ref::Lattice drawn{static_cast<int>(random_shape::count(size, 0, 2, 24)),
                         static_cast<int>(random_shape::count(size, 1, 2, 24)),
                         static_cast<int>(random_shape::count(size, 2, 1, 8)),
                         static_cast<int>(random_shape::count(size, 3, 2, 4)), 0};
      const int64_t fewest = fewest_flows(drawn.cells());
      drawn.flows = random_shape::count(size, 4, fewest, 2 * fewest);
      return drawn;
    }
  }
  throw std::invalid_argument("unknown energy_flow size");
}

/// The lattice the inputs say (kLatticeDims) with the inputs' F.
inline ref::Lattice lattice_of(const ArrayMap& inputs) {
  const int64_t flows = require(inputs, kEnergy).numel();
  const HostArray& dims = require(inputs, kLatticeDims);
  if (dims.numel() != 4 || flows < 1 || dims.values[0] < 2 || dims.values[1] < 2 || dims.values[2] < 1 ||
      dims.values[3] < 1)
    throw std::invalid_argument(kLatticeDims + " " + dims.shape_string() + " with " + std::to_string(flows) +
                                " flows is no energy_flow lattice: give W, H >= 2, D, B >= 1 and some flows");
  return {static_cast<int>(dims.values[0]), static_cast<int>(dims.values[1]), static_cast<int>(dims.values[2]),
          static_cast<int>(dims.values[3]), flows};
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
