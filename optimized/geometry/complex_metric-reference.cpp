// geometry/complex_metric on the reference backend: reference<float>, timed as the serial
// baseline that speedup_vs_reference divides by. Math: reference/geometry/complex_metric.hpp.

#include <limits>

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/geometry/complex_metric.hpp"

namespace pb::reference_backend {
namespace {

namespace geo = pb::suites::geometry::complex_metric;
constexpr int d = geo::ref::kCoordinates;

class ComplexMetricReference final : public Variant {
 public:
  explicit ComplexMetricReference(const VariantContext& context) : shape_(geo::metric_shape(context.size)) {}

  void setup(const ArrayMap& in) override {
    gamma_ = require(in, geo::kGamma).to_floats();
    psi_ = require(in, geo::kPsi).to_floats();
    phi_.resize(shape_.items() * d * d);
    theta_.resize(phi_.size());
  }
  void poison_outputs() override {
    phi_.assign(phi_.size(), std::numeric_limits<float>::quiet_NaN());
    theta_.assign(theta_.size(), std::numeric_limits<float>::quiet_NaN());
  }
  void run() override {
    geo::ref::evaluate<float>(gamma_.data(), psi_.data(), shape_.items(), phi_.data(), theta_.data());
  }
  ArrayMap outputs() override {
    const std::vector<int64_t> shape{shape_.batch, shape_.positions, d, d};
    const auto count = static_cast<int64_t>(phi_.size());
    return {{geo::kPhi, HostArray::from_floats(shape, phi_.data(), count)},
            {geo::kTheta, HostArray::from_floats(shape, theta_.data(), count)}};
  }

 private:
  geo::MetricShape shape_;
  std::vector<float> gamma_, psi_, phi_, theta_;
};

const VariantRegistration registration{
    geo::kComplexMetric, kReferenceBackend, {kSerialRung},
    [](const VariantContext& context) { return std::make_unique<ComplexMetricReference>(context); }};

}  // namespace
}  // namespace pb::reference_backend
