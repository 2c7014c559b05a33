// geometry/bayesian on the reference backend: reference<float>, timed as the serial baseline
// that speedup_vs_reference divides by. Math: reference/geometry/bayesian.hpp.

#include "reference/geometry/bayesian.hpp"

#include <limits>

#include "phasebench/backend.hpp"
#include "suites/geometry/field.hpp"

namespace pb::reference_backend {
namespace {

namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;

class BayesianReference final : public Variant {
 public:
  void setup(const ArrayMap& inputs) override {
    field_ = require(inputs, geo::kField);
    shape_ = geo::shape_of_complex(field_);
    f_ = field_.to_floats();
    e_ = require(inputs, geo::kEvidence).to_floats();
    posterior_.assign(f_.size(), 0.f);
    update_.assign(f_.size(), 0.f);
  }
  void poison_outputs() override {
    posterior_.assign(posterior_.size(), std::numeric_limits<float>::quiet_NaN());
    update_.assign(update_.size(), std::numeric_limits<float>::quiet_NaN());
  }
  void run() override { ref::bayesian_update<float>(f_.data(), e_.data(), shape_, posterior_.data(), update_.data()); }
  ArrayMap outputs() override { return geo::bayesian_outputs(field_, posterior_.data(), update_.data()); }

 private:
  HostArray field_;
  ref::FieldShape shape_;
  std::vector<float> f_, e_, posterior_, update_;
};

const VariantRegistration registration{"geometry/bayesian", kReferenceBackend, {kSerialRung},
                                       [](const VariantContext&) { return std::make_unique<BayesianReference>(); }};

}  // namespace
}  // namespace pb::reference_backend
