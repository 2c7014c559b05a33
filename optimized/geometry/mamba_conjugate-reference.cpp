// geometry/mamba_conjugate on the reference backend: reference<float>, timed as the serial
// baseline that speedup_vs_reference divides by. Math: reference/geometry/mamba_conjugate.hpp.

#include <limits>

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/geometry/mamba_conjugate.hpp"

namespace pb::reference_backend {
namespace {

namespace geo = pb::suites::geometry::mamba_conjugate;

class MambaConjugateReference final : public Variant {
 public:
  void setup(const ArrayMap& in) override {
    shape_ = require(in, geo::kStateReal).shape;
    r_ = require(in, geo::kStateReal).to_floats();
    i_ = require(in, geo::kStateImag).to_floats();
    r_conj_.resize(r_.size());
    i_conj_.resize(i_.size());
  }
  void poison_outputs() override {
    r_conj_.assign(r_conj_.size(), std::numeric_limits<float>::quiet_NaN());
    i_conj_.assign(i_conj_.size(), std::numeric_limits<float>::quiet_NaN());
  }
  void run() override {
    geo::ref::conjugate<float>(r_.data(), static_cast<int64_t>(r_.size()), r_conj_.data());
    geo::ref::conjugate<float>(i_.data(), static_cast<int64_t>(i_.size()), i_conj_.data());
  }
  ArrayMap outputs() override {
    const auto count = static_cast<int64_t>(r_conj_.size());
    return {{geo::kConjReal, HostArray::from_floats(shape_, r_conj_.data(), count)},
            {geo::kConjImag, HostArray::from_floats(shape_, i_conj_.data(), count)}};
  }

 private:
  std::vector<int64_t> shape_;
  std::vector<float> r_, i_, r_conj_, i_conj_;
};

const VariantRegistration registration{
    geo::kMambaConjugate, kReferenceBackend, {kSerialRung},
    [](const VariantContext&) { return std::make_unique<MambaConjugateReference>(); }};

}  // namespace
}  // namespace pb::reference_backend
