// geometry/christoffel on the reference backend: reference<float>, timed as the serial baseline
// that speedup_vs_reference divides by. Math: reference/geometry/christoffel.hpp.

#include <limits>

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/geometry/christoffel.hpp"

namespace pb::reference_backend {
namespace {

namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;

class ChristoffelReference final : public Variant {
 public:
  void setup(const ArrayMap& inputs) override {
    weights_ = std::make_unique<geo::MetricParameters<float>>(inputs);
    const HostArray& x = require(inputs, geo::kPoints);
    x_ = x.to_floats();
    shape_ = geo::gamma_shape(x);
    gamma_.assign(x_.size() / ref::kDim * ref::kGammaSize, 0.f);
  }

  void poison_outputs() override { gamma_.assign(gamma_.size(), std::numeric_limits<float>::quiet_NaN()); }

  void run() override {
    ref::christoffel<float>(weights_->view(), x_.data(), static_cast<int64_t>(x_.size() / ref::kDim), gamma_.data());
  }

  ArrayMap outputs() override {
    return {{geo::kGamma, HostArray::from_floats(shape_, gamma_.data(), static_cast<int64_t>(gamma_.size()))}};
  }

 private:
  std::unique_ptr<geo::MetricParameters<float>> weights_;
  std::vector<float> x_, gamma_;
  std::vector<int64_t> shape_;
};

const VariantRegistration registration{geo::kChristoffel, kReferenceBackend, {kSerialRung},
                                       [](const VariantContext&) { return std::make_unique<ChristoffelReference>(); }};

}  // namespace
}  // namespace pb::reference_backend
