// adaptive/dynamics_step: definition (sizes, inputs, outputs, tolerances, phases and seed 002's
// claims). Reference: reference/adaptive/dynamics_step.hpp. Variants:
// optimized/adaptive/dynamics_step-<backend>.cpp. Docs: docs/adaptive.md.
//
// One iteration is S = 8 consecutive steps of a training loop with the same batch, from the
// initial state in the inputs; the outputs are the state after the last step. The seed's claims
// are about kernel launches per function, so each fusing phase carries a claim about the
// operations of its named region (counted per region by pb::counters::Region), not about time.

#include "suites/adaptive/dynamics_step.hpp"

#include <cmath>
#include <stdexcept>

#include "phasebench/rng.hpp"

namespace pb::suites::adaptive {

ref::Dimensions dimensions_of(const ArrayMap& inputs) {
  const HostArray& x = require(inputs, kInput);
  const HostArray& weight = require(inputs, kWeight);
  const bool valid = x.shape.size() == 3 && weight.shape.size() == 2 && weight.shape[0] == weight.shape[1] &&
                     x.shape[2] >= 1 && x.shape[2] <= weight.shape[0];
  if (!valid)
    throw std::invalid_argument("x " + x.shape_string() + " and W " + weight.shape_string() +
                                " are no adaptive/dynamics_step shapes: x [B, N, I], W [H, H], I <= H");
  return {x.shape[0], x.shape[1], weight.shape[0], x.shape[2], kSteps};
}

namespace {

// Energies start in five bands by node (n mod 5), so every band of the math is exercised at every
// size and seed: near 0 (the lower clamp bites and max(0, 5 - e) is large), around 5 (the anxiety
// term switches on and off), the middle (twice), and near 50 (the upper clamp bites). One node in
// five near 0 keeps the share of energies clamped to exactly 0 far below the 30% that would make
// the check MISTRUSTED.
constexpr int kBands = 5;
constexpr double kEnergyBands[kBands][2] = {{0.0, 2.0}, {2.0, 8.0}, {8.0, 46.0}, {8.0, 46.0}, {48.0, 50.0}};

HostArray energies(uint64_t seed, const ref::Dimensions& d) {
  HostArray e = HostArray::zeros({d.batch, d.nodes});
  SeededGenerator generator(seed, "adaptive/e0");
  for (int64_t c = 0; c < d.cells(); ++c) {
    const auto& band = kEnergyBands[(c % d.nodes) % kBands];
    e.values[c] = round_to(ElementType::Float32, generator.uniform(band[0], band[1]));
  }
  return e;
}

// Phases drawn per node as the original does, then one node of each phase placed at a drawn
// position, so all four (sleep included) occur at every size and seed.
HostArray node_phases(uint64_t seed, const ref::Dimensions& d) {
  HostArray p = HostArray::zeros({d.batch, d.nodes}, ElementType::Int64);
  SeededGenerator generator(seed, "adaptive/phase");
  for (double& value : p.values) value = std::floor(generator.uniform(0, ref::kPhases));
  const int64_t offset = static_cast<int64_t>(generator.uniform(0, static_cast<double>(d.cells())));
  for (int q = 0; q < ref::kPhases; ++q) p.values[(offset + q) % d.cells()] = q;
  return p;
}

std::string describe(const ref::Dimensions& d) {
  return "B=" + std::to_string(d.batch) + " N=" + std::to_string(d.nodes) + " H=" + std::to_string(d.hidden) +
         " I=" + std::to_string(d.input) + " S=" + std::to_string(d.steps);
}

PhaseInfo fusing_phase(int index, const char* name, std::string description, const char* region, double claimed_cut) {
  PhaseInfo phase(index, name, std::move(description));
  phase.claim_region = region;
  phase.claimed_region_op_cut = claimed_cut;
  return phase;
}

class DynamicsStep final : public Workload {
 public:
  std::string suite() const override { return "adaptive"; }
  std::string name() const override { return "dynamics_step"; }
  std::string description() const override {
    return "S = 8 steps of the adaptive network's node dynamics (anxiety, phase-scaled hidden update, "
           "energy and activity) with the parameters requiring gradients, as in training";
  }
  std::string shape(SizeClass size) const override { return describe(dimensions(size)); }

  // x, h0 ~ U(-1, 1) and U(-0.9, 0.9); a0 ~ U(0, 1); W, b ~ U(+-1/sqrt(H)) as nn.Linear draws
  // them; s ~ U(0.5, 1.5) instead of the original's ones, so that a variant scaling a node by
  // another phase's s fails; w_e ~ U(-1, 1) (wider than Linear's, so the energy change of one
  // step, about +-2 at H = 64, carries energies across the clamp bounds within 8 steps);
  // w_a, b_a ~ U(+-1/sqrt(2)) (Linear 2 -> 1).
  ArrayMap make_inputs(SizeClass size, uint64_t seed) const override {
    const ref::Dimensions d = dimensions(size);
    const double linear = 1 / std::sqrt(double(d.hidden)), activity = 1 / std::sqrt(2.0);
    ArrayMap in;
    in[kInput] = uniform_array(seed, "adaptive/x", {d.batch, d.nodes, d.input}, -1, 1);
    in[kPhase] = node_phases(seed, d);
    in[kHidden0] = uniform_array(seed, "adaptive/h0", {d.batch, d.nodes, d.hidden}, -0.9, 0.9);
    in[kEnergy0] = energies(seed, d);
    in[kActivity0] = uniform_array(seed, "adaptive/a0", {d.batch, d.nodes}, 0, 1);
    in[kWeight] = uniform_array(seed, "adaptive/W", {d.hidden, d.hidden}, -linear, linear);
    in[kBias] = uniform_array(seed, "adaptive/b", {d.hidden}, -linear, linear);
    in[kPhaseScale] = uniform_array(seed, "adaptive/s", {ref::kPhases}, 0.5, 1.5);
    in[kEnergyWeight] = uniform_array(seed, "adaptive/w_e", {d.hidden}, -1, 1);
    in[kEnergyBias] = uniform_array(seed, "adaptive/b_e", {}, -0.5, 0.5);
    in[kActivityWeight] = uniform_array(seed, "adaptive/w_a", {2}, -activity, activity);
    in[kActivityBias] = uniform_array(seed, "adaptive/b_a", {}, -activity, activity);
    return in;
  }

  ArrayMap reference_fp64(const ArrayMap& inputs) const override {
    const ref::Dimensions d = dimensions_of(inputs);
    ref::State<double> state = load_initial_state<double>(inputs);
    ref::dynamics(load_parameters<double>(inputs), d, values_of<double>(inputs, kInput), load_phases(inputs), state);
    return state_outputs(state, d, ElementType::Float64);
  }

  // The fp32 default for every output: kFp32Reason says why, docs/adaptive.md gives the errors.
  std::vector<OutputSpec> outputs() const override {
    return {{kHidden, kTolerance, kFp32Reason}, {kEnergy, kTolerance, kFp32Reason}, {kActivity, kTolerance, kFp32Reason}};
  }

  std::vector<PhaseInfo> phases() const override {
    return {
        {0, kBaseline,
         "the loop version: anxiety as three separate operations, phase scaling as a loop over the 4 "
         "phases, hidden and energy updates as chains of separate operations, the state graph kept"},
        fusing_phase(1, kFusedAnxiety, "anxiety as one fused expression", kAnxietyRegion, 0.67),
        fusing_phase(2, kGatheredPhaseScale, "phase scale gathered by index (s[p]) instead of a loop over phases",
                     kPhaseScaleRegion, 0.83),
        fusing_phase(3, kFusedHidden, "hidden update tanh(h + m (d + 0.1 u)) as one fused operation", kHiddenRegion,
                     0.67),
        fusing_phase(4, kFusedEnergy, "energy update as a shortened chain", kEnergyRegion, 0.25),
        PhaseInfo(5, kDetachedState,
                  "the state detached from the autograd graph between steps, so each step's graph is "
                  "freed (the seed's NodeState.detach())")
            .needing({Capability::Autograd}),
        {6, kVectorizedCells,
         "beyond the seed, host cores: all S steps of a block of 16 cells in one kernel, one "
         "cell per SIMD lane, the state in L1; the drive as a register-blocked product with the phase "
         "scale, mask, input, a vectorizing tanh, the energy and activity as its epilogue"},
    };
  }

  // Compulsory work of one iteration. Per step and cell (a flop is one add, multiply, divide,
  // tanh, exp or comparison): anxiety 3H + 6; drive W h + b and its scale 2H^2 + H; input
  // projection 2 H I when I != H; hidden update 5H; energy 2H + 9; activity H + I + 8.
  // Bytes, fp32 (int64 phases): read x, p, h0, e0, a0 and the parameters once, write h, e, a once.
  WorkEstimate work(SizeClass size) const override {
    const ref::Dimensions d = dimensions(size);
    const double H = double(d.hidden), I = double(d.input);
    const double per_cell = 2 * H * H + (d.input == d.hidden ? 0 : 2 * H * I) + 12 * H + I + 23;
    const double cells = double(d.cells());
    const double state = cells * (H + 2), parameters = H * H + 2 * H + ref::kPhases + 2 + 2;
    return {double(d.steps) * cells * per_cell, 4 * (cells * I + 2 * state + parameters) + 8 * cells};
  }

  // The fp64 check (inputs, reference and one variant's outputs) plus what phase 0 keeps alive on
  // LibTorch: about 12 saved [B, N, H] fp32 tensors per step of the kept graph.
  double memory_bytes(SizeClass size) const override {
    const ref::Dimensions d = dimensions(size);
    const double cells = double(d.cells());
    return 8.0 * 3 * cells * (d.input + 2.0 * d.hidden + 4) + 4.0 * 12 * d.steps * cells * d.hidden;
  }

 private:
  // fp32 rounding of 8 steps, each a 64-term dot product per hidden unit and one for the energy,
  // then tanh and the clamps, which do not amplify it (tanh' <= 1; (1 + s) |W| stays near 1 at
  // these initializations). The default keeps a wide margin over reference<float>'s error against
  // the fp64 oracle (docs/adaptive.md, Tolerances).
  static constexpr double kTolerance = 1e-5;
  static constexpr const char* kFp32Reason =
      "fp32 default 1e-5: 8 steps of 64-term dot products, tanh and clamps, which do not amplify rounding";
};

const WorkloadRegistration registration{std::make_shared<DynamicsStep>()};

}  // namespace
}  // namespace pb::suites::adaptive
