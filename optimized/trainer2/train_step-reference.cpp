// trainer2/train_step on the reference backend: reference<float> train_step, the serial baseline.
// Every run starts from the same state (the inputs).

#include <limits>

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/window_io.hpp"

namespace pb::reference_backend {
namespace {

namespace ref = pb::reference::trainer2;
namespace t2 = pb::suites::trainer2;

class TrainStepReference final : public Variant {
 public:
  void setup(const ArrayMap& in) override {
    dims_ = t2::window_dims_of(in);
    initial_ = t2::initial_train_state<float>(in);
    O_ = t2::values_as<float>(require(in, "O"));
    target_ = t2::values_as<float>(require(in, "target"));
  }
  void poison_outputs() override { ran_ = false; }
  void run() override {
    state_ = initial_;
    result_ = ref::train_step(dims_, O_.data(), target_.data(), state_);
    ran_ = true;
  }
  ArrayMap outputs() override {
    if (!ran_) return {};  // nothing written since the poison: every output is missing
    ArrayMap out;
    t2::add_window_outputs(out, "free_", dims_, result_.free, result_.free_F, result_.free_P, ElementType::Float32);
    t2::add_window_outputs(out, "nudged_", dims_, result_.nudged, state_.F, state_.P, ElementType::Float32);
    t2::add_train_state_outputs(out, dims_, state_, ElementType::Float32);
    return out;
  }

 private:
  ref::WindowDims dims_{};
  ref::TrainState<float> initial_, state_;
  std::vector<float> O_, target_;
  ref::TrainStepResult<float> result_;
  bool ran_ = false;
};

const VariantRegistration registration{"trainer2/train_step", kReferenceBackend, {kSerialRung},
                                       [](const VariantContext&) { return std::make_unique<TrainStepReference>(); }};

}  // namespace
}  // namespace pb::reference_backend
