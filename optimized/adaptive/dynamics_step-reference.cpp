// adaptive/dynamics_step on the reference backend: reference<float>, timed as the serial baseline
// that speedup_vs_reference divides by, with the memory held after each step recorded (flat: the
// nested loops keep nothing from step to step). Math: reference/adaptive/dynamics_step.hpp.

#include <limits>

#include "phasebench/backend.hpp"
#include "phasebench/counters.hpp"
#include "phasebench/variant.hpp"
#include "suites/adaptive/dynamics_step.hpp"

namespace pb::reference_backend {
namespace {

namespace ad = pb::suites::adaptive;
namespace ref = pb::reference::adaptive;

class DynamicsStepReference final : public Variant {
 public:
  explicit DynamicsStepReference(const VariantContext& context) : dims_(ad::dimensions(context.size)) {}

  void setup(const ArrayMap& inputs) override {
    parameters_ = ad::load_parameters<float>(inputs);
    initial_ = ad::load_initial_state<float>(inputs);
    state_ = initial_;
    x_ = ad::values_of<float>(inputs, ad::kInput);
    phases_ = ad::load_phases(inputs);
  }

  void poison_outputs() override {
    for (auto* values : {&state_.hidden, &state_.energy, &state_.activity})
      values->assign(values->size(), std::numeric_limits<float>::quiet_NaN());
  }

  void run() override {
    state_ = initial_;  // same sizes: copies into the buffers it has
    counters::begin_steps();
    for (int64_t t = 0; t < dims_.steps; ++t) {
      ref::step(parameters_, dims_, x_, phases_, state_);
      counters::end_step();
    }
  }

  ArrayMap outputs() override { return ad::state_outputs(state_, dims_, ElementType::Float32); }

 private:
  ref::Dimensions dims_;
  ref::Parameters<float> parameters_;
  ref::State<float> initial_, state_;
  std::vector<float> x_;
  std::vector<int64_t> phases_;
};

const VariantRegistration registration{
    ad::kDynamicsStep, kReferenceBackend, {kSerialRung},
    [](const VariantContext& context) { return std::make_unique<DynamicsStepReference>(context); }};

}  // namespace
}  // namespace pb::reference_backend
