// geometry/hamiltonian on the reference backend: reference<float>, timed as the serial baseline
// that speedup_vs_reference divides by. Math: reference/geometry/hamiltonian.hpp.

#include "reference/geometry/hamiltonian.hpp"

#include <limits>

#include "phasebench/backend.hpp"
#include "suites/geometry/field.hpp"

namespace pb::reference_backend {
namespace {

namespace geo = pb::suites::geometry;
namespace ref = pb::reference::geometry;

class HamiltonianReference final : public Variant {
 public:
  void setup(const ArrayMap& inputs) override {
    const HostArray& f = require(inputs, geo::kField);
    shape_ = geo::shape_of_complex(f);
    dims_ = f.shape;
    f_ = f.to_floats();
    v_ = require(inputs, geo::kPotential).to_floats();
    h_.assign(f_.size(), 0.f);
  }
  void poison_outputs() override { h_.assign(h_.size(), std::numeric_limits<float>::quiet_NaN()); }
  void run() override { ref::hamiltonian<float>(f_.data(), v_.data(), shape_, h_.data()); }
  ArrayMap outputs() override {
    return {{geo::kHamiltonian, HostArray::from_floats(dims_, h_.data(), static_cast<int64_t>(h_.size()))}};
  }

 private:
  ref::FieldShape shape_;
  std::vector<int64_t> dims_;
  std::vector<float> f_, v_, h_;
};

const VariantRegistration registration{"geometry/hamiltonian", kReferenceBackend, {kSerialRung},
                                       [](const VariantContext&) { return std::make_unique<HamiltonianReference>(); }};

}  // namespace
}  // namespace pb::reference_backend
