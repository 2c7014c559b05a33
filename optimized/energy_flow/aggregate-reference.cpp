// energy_flow/aggregate on the reference backend: reference<float>, timed as the serial baseline
// that speedup_vs_reference divides by. Math: reference/energy_flow/aggregate.hpp.

#include <limits>

#include "phasebench/backend.hpp"
#include "phasebench/variant.hpp"
#include "suites/energy_flow/aggregate.hpp"

namespace pb::reference_backend {
namespace {

namespace ef = pb::suites::energy_flow;
namespace ref = pb::reference::energy_flow;

class AggregateReference final : public Variant {
 public:
  void setup(const ArrayMap& inputs) override {
    lattice_ = ef::lattice_of(inputs);
    flows_ = ef::load_flows<float>(inputs);
    out_.assign(lattice_.cells(), 0.f);
  }
  void poison_outputs() override { out_.assign(out_.size(), std::numeric_limits<float>::quiet_NaN()); }
  void run() override { out_ = ref::aggregate(flows_, lattice_); }
  ArrayMap outputs() override { return {{ef::kAggregated, ef::aggregated_output(lattice_, out_.data())}}; }

 private:
  ref::Lattice lattice_;
  ref::Flows<float> flows_;
  std::vector<float> out_;
};

const VariantRegistration registration{ef::kWorkload, kReferenceBackend, {kSerialRung},
                                       [](const VariantContext&) { return std::make_unique<AggregateReference>(); }};

}  // namespace
}  // namespace pb::reference_backend
