// trainer2/lior_step on the reference backend: reference<float>, timed as the serial baseline
// that speedup_vs_reference divides by. Math: reference/trainer2/lior_step.hpp.

#include "reference/trainer2/lior_step.hpp"
#include "suites/trainer2/lior_step_outputs.hpp"

#include <limits>

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"

namespace pb::reference_backend {
namespace {

namespace ref = pb::reference::trainer2;

class LiorStepReference final : public Variant {
 public:
  void setup(const ArrayMap& inputs) override {
    v_ = require(inputs, "v").to_floats();
    R_ = require(inputs, "R").to_floats();
    g_ = require(inputs, "g").to_floats();
    rows_ = require(inputs, "v").shape.at(0);
    s_.assign(rows_, 0.f);
    dlior_.assign(rows_, 0.f);
  }

  void poison_outputs() override {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    s_.assign(rows_, nan);
    dlior_.assign(rows_, nan);
    means_ = {nan, nan, nan};
  }

  void run() override {
    means_ = ref::lior_step<float>(v_.data(), R_.data(), g_.data(), rows_, ref::kCoordinateDim,
                                   s_.data(), dlior_.data());
  }

  ArrayMap outputs() override {
    return suites::trainer2::lior_step_outputs(rows_, s_.data(), dlior_.data(), means_);
  }

 private:
  std::vector<float> v_, R_, g_, s_, dlior_;
  int64_t rows_ = 0;
  ref::LiorStepMeans<float> means_;
};

const VariantRegistration registration{
    "trainer2/lior_step", kReferenceBackend, {kSerialRung},
    [](const VariantContext&) { return std::make_unique<LiorStepReference>(); }};

}  // namespace
}  // namespace pb::reference_backend
