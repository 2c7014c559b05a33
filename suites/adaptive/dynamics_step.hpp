#pragma once
// adaptive/dynamics_step: what every variant shares: sizes, input and output names, the phases of
// seed 002's ladder and the regions its claims are about. Math: reference/adaptive/dynamics_step.hpp.
// Definition (catalog, tolerances, work): dynamics_step.cpp. Docs: docs/adaptive.md.

#include <cstdint>
#include <string>
#include <vector>

#include "phasebench/workload.hpp"
#include "reference/adaptive/dynamics_step.hpp"

namespace pb::suites::adaptive {

namespace ref = pb::reference::adaptive;

inline const std::string kDynamicsStep = "adaptive/dynamics_step";
// Inputs: the batch, each node's phase, the state the S steps start from, and the parameters.
inline const std::string kInput = "x";                  // [B, N, I]
inline const std::string kPhase = "phase";              // [B, N] int64, 0..3
inline const std::string kHidden0 = "h0";               // [B, N, H]
inline const std::string kEnergy0 = "e0";               // [B, N]
inline const std::string kActivity0 = "a0";             // [B, N]
inline const std::string kWeight = "W";                 // [H, H]
inline const std::string kBias = "b";                   // [H]
inline const std::string kPhaseScale = "s";             // [4]
inline const std::string kEnergyWeight = "w_e";         // [H]
inline const std::string kEnergyBias = "b_e";           // scalar
inline const std::string kActivityWeight = "w_a";       // [2] (Linear 2 -> 1)
inline const std::string kActivityBias = "b_a";         // scalar
// Outputs: the state after S steps.
inline const std::string kHidden = "h";    // [B, N, H]
inline const std::string kEnergy = "e";    // [B, N]
inline const std::string kActivity = "a";  // [B, N]

// The optimization each phase adds (catalog with descriptions and claims: dynamics_step.cpp).
inline constexpr const char* kBaseline = "baseline";                      // the loop version
inline constexpr const char* kFusedAnxiety = "fused_anxiety";             // 3 ops -> 1 expression
inline constexpr const char* kGatheredPhaseScale = "gathered_phase_scale";  // loop over 4 phases -> gather
inline constexpr const char* kFusedHidden = "fused_hidden_update";        // the tanh(h + m(d + 0.1u)) chain fused
inline constexpr const char* kFusedEnergy = "fused_energy_update";        // the energy chain shortened
inline constexpr const char* kDetachedState = "detached_state";           // autograd graph cut between steps
inline constexpr const char* kVectorizedCells = "vectorized_cells";       // all steps of 16 cells per SIMD block (host)

/// Every exact phase a backend without an autograd graph can run (detached_state needs one).
inline const std::vector<std::string> kGraphFreePhases{kBaseline, kFusedAnxiety, kGatheredPhaseScale, kFusedHidden,
                                                       kFusedEnergy};

// The named regions (pb::counters::Region) the seed's per-function claims are about.
inline constexpr const char* kAnxietyRegion = "anxiety";         // _calculate_anxiety_levels
inline constexpr const char* kPhaseScaleRegion = "phase_scale";  // _apply_phase_dependent_scaling
inline constexpr const char* kHiddenRegion = "hidden";           // _update_hidden_state
inline constexpr const char* kEnergyRegion = "energy";           // _update_energy_with_anxiety

inline constexpr int64_t kSteps = 8;  // S, the same at every size

inline ref::Dimensions dimensions(SizeClass size) {
  switch (size.name()) {  // B, N, H, I, S
    case SizeName::Small:
      return {2, 5, 6, 4, 8};
    case SizeName::Default:
      return {32, 100, 64, 64, 8};
    case SizeName::Large:
      return {128, 1000, 64, 64, 8};
    case SizeName::Scaled: {
      // A scale grows the batch (B, at least one); nodes, widths and steps are the default's.
      ref::Dimensions scaled = dimensions(SizeClass::Default);
      scaled.batch = scaling::count(scaled.batch, size.scale());
      return scaled;
    }
    case SizeName::Random: {
      // B x N cells cross the 16-cell SIMD blocks; N a multiple of 5, so that each energy band of
      // the inputs (n mod 5) holds a fifth of the nodes, and at least 10, so that the band near 0
      // and one more energy clamped there stay within 30% of the output; H >= 8, since with fewer hidden values the
      // energy's step w_e . h' is too small to lift the low band's energies off the clamp at 0 (the unbiased variance
      // over H needs 2); I <= H, since the input projection reads W[:, :I]. S stays kSteps: no input carries it.
      const int64_t hidden = random_shape::count(size, 2, 8, 40);
      return {random_shape::count(size, 0, 1, 6), 5 * random_shape::count(size, 1, 2, 8), hidden,
              random_shape::count(size, 3, 1, hidden), kSteps};
    }
  }
  return {2, 5, 6, 4, 8};
}

/// The dimensions of the inputs: B, N and I from x, H from W, S = kSteps (every size's).
/// std::invalid_argument when x and W are no valid pair.
ref::Dimensions dimensions_of(const ArrayMap& inputs);

/// An input's values converted to Scalar.
template <typename Scalar>
std::vector<Scalar> values_of(const ArrayMap& inputs, const std::string& name) {
  const HostArray& array = require(inputs, name);
  return std::vector<Scalar>(array.values.begin(), array.values.end());
}

template <typename Scalar>
ref::Parameters<Scalar> load_parameters(const ArrayMap& inputs) {
  ref::Parameters<Scalar> p;
  p.weight = values_of<Scalar>(inputs, kWeight);
  p.bias = values_of<Scalar>(inputs, kBias);
  p.phase_scale = values_of<Scalar>(inputs, kPhaseScale);
  p.energy_weight = values_of<Scalar>(inputs, kEnergyWeight);
  p.activity_weight = values_of<Scalar>(inputs, kActivityWeight);
  p.energy_bias = static_cast<Scalar>(require(inputs, kEnergyBias).values.at(0));
  p.activity_bias = static_cast<Scalar>(require(inputs, kActivityBias).values.at(0));
  return p;
}

template <typename Scalar>
ref::State<Scalar> load_initial_state(const ArrayMap& inputs) {
  return {values_of<Scalar>(inputs, kHidden0), values_of<Scalar>(inputs, kEnergy0),
          values_of<Scalar>(inputs, kActivity0)};
}

inline std::vector<int64_t> load_phases(const ArrayMap& inputs) {
  const HostArray& phases = require(inputs, kPhase);
  return std::vector<int64_t>(phases.values.begin(), phases.values.end());
}

/// The outputs h [B,N,H], e [B,N], a [B,N] as HostArrays of `type`.
template <typename Scalar>
ArrayMap state_outputs(const ref::State<Scalar>& state, const ref::Dimensions& d, ElementType type) {
  const auto array = [type](std::vector<int64_t> shape, const std::vector<Scalar>& values) {
    HostArray out = HostArray::zeros(std::move(shape), type);
    out.values.assign(values.begin(), values.end());
    return out;
  };
  return {{kHidden, array({d.batch, d.nodes, d.hidden}, state.hidden)},
          {kEnergy, array({d.batch, d.nodes}, state.energy)},
          {kActivity, array({d.batch, d.nodes}, state.activity)}};
}

}  // namespace pb::suites::adaptive
