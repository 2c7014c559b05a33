// trainer2/window on the reference backend: reference<float> run_window, the serial baseline.
// Every run starts from the same state (field F0, momentum 0).

#include <limits>

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/window_io.hpp"

namespace pb::reference_backend {
namespace {

namespace ref = pb::reference::trainer2;
namespace t2 = pb::suites::trainer2;

class WindowReference final : public Variant {
 public:
  void setup(const ArrayMap& in) override {
    dims_ = t2::window_dims_of(in);
    initial_ = t2::initial_train_state<float>(in);
    O_ = t2::values_as<float>(require(in, "O"));
  }
  void poison_outputs() override {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    result_ = ref::WindowResult<float>{};  // empty arrays: an output run() does not write is missing
    result_.lior = result_.R = result_.spd = nan;
    state_.F.assign(initial_.F.size(), nan);
    state_.P.assign(initial_.P.size(), nan);
  }
  void run() override {
    state_ = initial_;
    const ref::WindowInputs<float> in{O_.data(), state_.bank_coord.data(), state_.bank_state.data(),
                                      state_.g.data(), state_.theta.data(), nullptr};
    result_ = ref::run_window(dims_, in, state_.F, state_.P, state_.F_eq);
  }
  ArrayMap outputs() override {
    ArrayMap out;
    t2::add_window_outputs(out, "", dims_, result_, state_.F, state_.P, ElementType::Float32);
    return out;
  }

 private:
  ref::WindowDims dims_{};
  ref::TrainState<float> initial_, state_;
  std::vector<float> O_;
  ref::WindowResult<float> result_;
};

const VariantRegistration registration{"trainer2/window", kReferenceBackend, {kSerialRung},
                                       [](const VariantContext&) { return std::make_unique<WindowReference>(); }};

}  // namespace
}  // namespace pb::reference_backend
