// geometry/mamba_scan on the reference backend: reference<float>, timed as the serial baseline
// that speedup_vs_reference divides by. Math: reference/geometry/mamba_scan.hpp.

#include <limits>
#include <memory>

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/geometry/mamba_scan.hpp"

namespace pb::reference_backend {
namespace {

namespace geo = pb::suites::geometry::mamba_scan;

class MambaScanReference final : public Variant {
 public:
  void setup(const ArrayMap& in) override {
    dims_ = geo::dims_of(in);
    params_ = std::make_unique<geo::ParamStore<float>>(in);
    x_ = require(in, geo::kInput).to_floats();
    out_.resize(x_.size());
    r_.resize(dims_.batch * geo::ref::kState);
    i_.resize(r_.size());
  }
  void poison_outputs() override {
    for (std::vector<float>* v : {&out_, &r_, &i_}) v->assign(v->size(), std::numeric_limits<float>::quiet_NaN());
  }
  void run() override {
    geo::ref::forward<float>(dims_.batch, dims_.length, dims_.model, dims_.inner, params_->params, x_.data(),
                             out_.data(), r_.data(), i_.data());
  }
  ArrayMap outputs() override {
    return {{geo::kOutput, HostArray::from_floats({dims_.batch, dims_.length, dims_.model}, out_.data(), int64_t(out_.size()))},
            {geo::kFinalState, geo::final_state_array(dims_.batch, r_.data(), i_.data())}};
  }

 private:
  geo::Dims dims_;
  std::unique_ptr<geo::ParamStore<float>> params_;
  std::vector<float> x_, out_, r_, i_;
};

const VariantRegistration registration{
    geo::kMambaScan, kReferenceBackend, {kSerialRung},
    [](const VariantContext&) { return std::make_unique<MambaScanReference>(); }};

}  // namespace
}  // namespace pb::reference_backend
