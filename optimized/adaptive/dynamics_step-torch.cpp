// adaptive/dynamics_step on LibTorch, devices cpu and cuda: S steps of the node dynamics with the
// parameters requiring gradients, as in training (no backward: the seed's Phase 2 is about the
// forward's launches and the graph it keeps). Math: reference/adaptive/dynamics_step.hpp;
// catalog: suites/adaptive/dynamics_step.cpp; docs/adaptive.md.
//
// Each function of the original is a named region (pb::counters::Region), so the ops it
// dispatches are counted apart: the seed's claims are per function. The baseline writes each one
// as the original's loop version does; each later phase rewrites one of them, and the last cuts
// the state's autograd graph between steps. Without that cut the graph of every step stays alive
// through the state, and the memory held grows step after step (step_memory_bytes).

#include <limits>

#include "backends/torch/torch_backend.hpp"
#include "phasebench/counters.hpp"
#include "phasebench/variant.hpp"
#include "suites/adaptive/dynamics_step.hpp"

namespace pb::torch_backend {
namespace {
namespace PHASEBENCH_FILE_ID {  // unique to this file in a unity batch

namespace ad = pb::suites::adaptive;
namespace ref = pb::reference::adaptive;
using counters::Region;

struct NodeState {
  torch::Tensor hidden, energy, activity;  // [B, N, H], [B, N, 1], [B, N, 1]
};

struct Parameters {
  torch::Tensor weight, bias, phase_scale;   // [H, H], [H], [4]
  torch::Tensor energy_weight, energy_bias;  // [1, H], [1] (a Linear H -> 1)
  torch::Tensor activity_weight, activity_bias;  // [1, 2], [1]
};

class DynamicsStepTorch final : public Variant {
 public:
  explicit DynamicsStepTorch(const VariantContext& context)
      : device_name_(context.device),
        dims_(ad::dimensions(context.size)),
        fused_anxiety_(context.has(ad::kFusedAnxiety)),
        gathered_scale_(context.has(ad::kGatheredPhaseScale)),
        fused_hidden_(context.has(ad::kFusedHidden)),
        fused_energy_(context.has(ad::kFusedEnergy)),
        detached_(context.has(ad::kDetachedState)) {}

  std::optional<CannotRun> support() const override { return cannot_run_on(device_name_); }

  void setup(const ArrayMap& inputs) override {
    const torch::Device device = device_for(device_name_);
    const auto parameter = [&](const std::string& name, std::vector<int64_t> shape) {
      return to_tensor(require(inputs, name), device).reshape(shape).detach().requires_grad_(true);
    };
    const int64_t H = dims_.hidden;
    params_ = {parameter(ad::kWeight, {H, H}),        parameter(ad::kBias, {H}),
               parameter(ad::kPhaseScale, {ref::kPhases}), parameter(ad::kEnergyWeight, {1, H}),
               parameter(ad::kEnergyBias, {1}),       parameter(ad::kActivityWeight, {1, 2}),
               parameter(ad::kActivityBias, {1})};
    x_ = to_tensor(require(inputs, ad::kInput), device);
    phase_ = to_tensor(require(inputs, ad::kPhase), device).to(torch::kLong);
    initial_ = {to_tensor(require(inputs, ad::kHidden0), device),
                to_tensor(require(inputs, ad::kEnergy0), device).unsqueeze(-1),
                to_tensor(require(inputs, ad::kActivity0), device).unsqueeze(-1)};
    state_ = {initial_.hidden.clone(), initial_.energy.clone(), initial_.activity.clone()};
  }

  void poison_outputs() override {
    torch::NoGradGuard no_grad;
    state_ = {torch::full_like(initial_.hidden, std::numeric_limits<float>::quiet_NaN()),
              torch::full_like(initial_.energy, std::numeric_limits<float>::quiet_NaN()),
              torch::full_like(initial_.activity, std::numeric_limits<float>::quiet_NaN())};
  }

  void run() override {
    torch::AutoGradMode gradients(true);
    state_ = {};  // lets go of the previous iteration's graph before the steps are measured
    counters::begin_steps();
    NodeState state = initial_;
    for (int64_t t = 0; t < dims_.steps; ++t) {
      state = step(state);
      if (detached_) state = {state.hidden.detach(), state.energy.detach(), state.activity.detach()};
      counters::end_step();
    }
    state_ = std::move(state);
  }

  ArrayMap outputs() override {
    torch::NoGradGuard no_grad;
    return {{ad::kHidden, to_host_array(state_.hidden.detach())},
            {ad::kEnergy, to_host_array(state_.energy.detach().squeeze(-1))},
            {ad::kActivity, to_host_array(state_.activity.detach().squeeze(-1))}};
  }

 private:
  NodeState step(const NodeState& s) const {
    const torch::Tensor moving = phase_.ne(ref::kSleepPhase).unsqueeze(-1).to(torch::kFloat32);
    const torch::Tensor anxious = anxiety(s);
    const torch::Tensor hidden = hidden_update(s.hidden, moving);
    const torch::Tensor energy = energy_update(s.energy, hidden, anxious, moving);
    return {hidden, energy, activity(hidden)};
  }

  // _calculate_anxiety_levels: max(0, 5 - e) + 2a + var_H(h).
  torch::Tensor anxiety(const NodeState& s) const {
    Region region(ad::kAnxietyRegion);
    if (fused_anxiety_)  // one expression: the variance with 2a added in the same call
      return at::add(at::add(s.hidden.var(-1, true, true), s.activity, 2.0), at::relu(at::rsub(s.energy, 5.0)));
    const torch::Tensor energy_anxiety = at::clamp_min(at::rsub(s.energy, 5.0), 0.0);
    const torch::Tensor activity_anxiety = s.activity * 2.0;
    const torch::Tensor hidden_anxiety = s.hidden.var(-1, true, true);
    return energy_anxiety + activity_anxiety + hidden_anxiety;
  }

  // _apply_phase_dependent_scaling: drive * (1 + s[p]).
  torch::Tensor phase_scaled(const torch::Tensor& drive) const {
    Region region(ad::kPhaseScaleRegion);
    if (gathered_scale_) {
      const torch::Tensor scale = params_.phase_scale.index_select(0, phase_.view(-1)).view({dims_.batch, dims_.nodes, 1});
      return drive * (scale + 1.0);
    }
    torch::Tensor scaled = drive;
    for (int64_t q = 0; q < ref::kPhases; ++q) {  // the loop version: one masked update per phase
      const torch::Tensor in_phase = phase_.eq(q).unsqueeze(-1).to(torch::kFloat32);
      scaled = scaled * (params_.phase_scale.select(0, q) * in_phase + 1.0);
    }
    return scaled;
  }

  // _update_hidden_state: tanh(h + m (W h + b) (1 + s[p]) + 0.1 m u), the phase scaling nested.
  torch::Tensor hidden_update(const torch::Tensor& h, const torch::Tensor& moving) const {
    Region region(ad::kHiddenRegion);
    const bool same_width = dims_.input == dims_.hidden;
    if (fused_hidden_) {
      const torch::Tensor drive = phase_scaled(at::linear(h, params_.weight, params_.bias));
      const torch::Tensor input = same_width ? x_ : at::linear(x_, params_.weight.narrow(1, 0, dims_.input));
      return at::tanh(at::addcmul(h, moving, at::add(drive, input, 0.1)));
    }
    const torch::Tensor drive = phase_scaled(at::matmul(h, params_.weight.t()) + params_.bias);
    const torch::Tensor input = same_width ? x_ : at::matmul(x_, params_.weight.narrow(1, 0, dims_.input).t());
    const torch::Tensor update = (drive + input * 0.1) * moving;
    return at::tanh(h + update);
  }

  // _update_energy_with_anxiety: clamp(0.99 e + (w_e . h + b_e)(1 - 0.1 clamp(A/10, 0, 1)) m, 0, 50).
  torch::Tensor energy_update(const torch::Tensor& e, const torch::Tensor& h, const torch::Tensor& anxious,
                              const torch::Tensor& moving) const {
    Region region(ad::kEnergyRegion);
    if (fused_energy_) {
      const torch::Tensor projection = at::linear(h, params_.energy_weight, params_.energy_bias);
      const torch::Tensor damping = at::rsub(at::clamp(anxious / 10.0, 0.0, 1.0), 1.0, 0.1);
      return at::clamp(at::addcmul(e * 0.99, projection * moving, damping), 0.0, 50.0);
    }
    const torch::Tensor projection = (h * params_.energy_weight).sum(-1, true) + params_.energy_bias;
    const torch::Tensor gate = at::clamp(anxious / 10.0, 0.0, 1.0);
    const torch::Tensor damping = 1.0 - gate * 0.1;
    torch::Tensor change = projection * damping;
    change = change * moving;
    torch::Tensor energy = e * 0.99;
    energy = energy + change;
    return at::clamp(energy, 0.0, 50.0);
  }

  // Activity: clamp(sigmoid(Linear_{2->1}([mean_H h, mean_I x])), 0, 1); no claim, no region.
  torch::Tensor activity(const torch::Tensor& h) const {
    const torch::Tensor features = at::cat({h.mean(-1, true), x_.mean(-1, true)}, -1);
    return at::clamp(at::sigmoid(at::linear(features, params_.activity_weight, params_.activity_bias)), 0.0, 1.0);
  }

  std::string device_name_;
  ref::Dimensions dims_;
  bool fused_anxiety_, gathered_scale_, fused_hidden_, fused_energy_, detached_;
  Parameters params_;
  torch::Tensor x_, phase_;
  NodeState initial_, state_;
};

const VariantRegistration registration{
    ad::kDynamicsStep, "torch",
    {ad::kBaseline, ad::kFusedAnxiety, ad::kGatheredPhaseScale, ad::kFusedHidden, ad::kFusedEnergy, ad::kDetachedState},
    [](const VariantContext& context) { return std::make_unique<DynamicsStepTorch>(context); }};

}  // namespace PHASEBENCH_FILE_ID
}  // namespace
}  // namespace pb::torch_backend
