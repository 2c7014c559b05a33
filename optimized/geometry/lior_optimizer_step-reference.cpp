// geometry/lior_optimizer_step on the reference backend: reference<float>, timed as the serial
// baseline that speedup_vs_reference divides by. Math: reference/geometry/lior_optimizer_step.hpp.
// Out of place as every variant (suites/geometry/lior_optimizer_step.hpp): run() copies p into the
// output and the reference updates the output.

#include <algorithm>
#include <limits>

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/geometry/lior_optimizer_step.hpp"

namespace pb::reference_backend {
namespace {

namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;

class LiorOptimizerStepReference final : public Variant {
 public:
  void setup(const ArrayMap& inputs) override {
    weights_ = std::make_unique<geo::ResilienceParameters<float>>(inputs);
    shapes_ = geo::shapes_of(inputs);
    offsets_ = geo::flat_offsets(shapes_);
    params_ = geo::flat_floats(inputs, geo::param_name, shapes_.size());
    grads_ = geo::flat_floats(inputs, geo::grad_name, shapes_.size());
    updated_.assign(params_.size(), 0.f);
    for (size_t j = 0; j < shapes_.size(); ++j) {
      outputs_.push_back(updated_.data() + offsets_[j]);
      grad_pointers_.push_back(grads_.data() + offsets_[j]);
      sizes_.push_back(offsets_[j + 1] - offsets_[j]);
    }
  }

  void poison_outputs() override { std::fill(updated_.begin(), updated_.end(), std::numeric_limits<float>::quiet_NaN()); }

  void run() override {
    std::copy(params_.begin(), params_.end(), updated_.begin());
    ref::lior_optimizer_step<float>(weights_->view(), outputs_.data(), grad_pointers_.data(), sizes_.data(),
                                    static_cast<int>(sizes_.size()));
  }

  ArrayMap outputs() override { return geo::outputs_from_flat(shapes_, updated_.data()); }

 private:
  std::unique_ptr<geo::ResilienceParameters<float>> weights_;
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<int64_t> offsets_, sizes_;
  std::vector<float> params_, grads_, updated_;
  std::vector<float*> outputs_;
  std::vector<const float*> grad_pointers_;
};

const VariantRegistration registration{
    geo::kLiorOptimizerStep, kReferenceBackend, {kSerialRung},
    [](const VariantContext&) { return std::make_unique<LiorOptimizerStepReference>(); }};

}  // namespace
}  // namespace pb::reference_backend
