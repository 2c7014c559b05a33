// trainer2/rotor_update on the reference backend: reference<float>, the serial baseline.

#include <limits>

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/trainer2/window_io.hpp"

namespace pb::reference_backend {
namespace {

namespace ref = pb::reference::trainer2;
using suites::trainer2::values_as;

class RotorUpdateReference final : public Variant {
 public:
  void setup(const ArrayMap& in) override {
    u_ = values_as<float>(require(in, "u"));
    theta0_ = values_as<float>(require(in, "theta"));
    lior_diff_ = static_cast<float>(require(in, "lior_diff").values.at(0));
  }
  void poison_outputs() override { theta_.assign(theta0_.size(), std::numeric_limits<float>::quiet_NaN()); }
  void run() override {
    theta_ = theta0_;  // every run updates the same initial angles
    ref::rotor_update<float>(u_.data(), lior_diff_, theta_.data());
  }
  ArrayMap outputs() override {
    return {{"theta", HostArray::from_floats({ref::kRotorSlots}, theta_.data(), ref::kRotorSlots)}};
  }

 private:
  std::vector<float> u_, theta0_, theta_;
  float lior_diff_ = 0;
};

const VariantRegistration registration{"trainer2/rotor_update", kReferenceBackend, {kSerialRung},
                                       [](const VariantContext&) { return std::make_unique<RotorUpdateReference>(); }};

}  // namespace
}  // namespace pb::reference_backend
